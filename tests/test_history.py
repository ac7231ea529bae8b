"""The run store against real directories, locks and processes."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rage.errors import NotFoundError, UsageError
from rage.record.history import RunStore, status_for
from tests.conftest import run_rage


def test_start_finish_roundtrip_private_files(rage_home: Path) -> None:
    store = RunStore()
    active = store.start("tool", ["tool", "--flag"], recorder="test")
    run = active.finish(exit_code=3)
    assert run.status == "failed" and run.exit_code == 3
    assert stat.S_IMODE(os.stat(run.dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(rage_home / "tool").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(run.dir / "meta.json").st_mode) == 0o600
    meta = json.loads((run.dir / "meta.json").read_text())
    assert meta["argv"] == ["tool", "--flag"] and meta["duration_s"] >= 0
    again = store.resolve(run.short_id[:4], "tool")
    assert again.id == run.id and again.argv == ("tool", "--flag")


def test_status_classification() -> None:
    assert status_for(0, None) == "ok"
    assert status_for(1, None) == "failed"
    assert status_for(None, signal.SIGSEGV) == "crashed"
    assert status_for(None, signal.SIGINT) == "interrupted"
    assert status_for(None, signal.SIGKILL) == "failed"


def test_killed_recorder_leaves_lost_run(tmp_path: Path) -> None:
    code = (
        "from rage.record.history import RunStore; import time, sys\n"
        "a = RunStore().start('victim', ['victim'], recorder='test')\n"
        "print(a.id, flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    store = RunStore()
    assert store.resolve(run_id).status == "running"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert store.resolve(run_id).status == "lost"
    assert store.resolve("last-failed").id == run_id


def test_corrupt_run_is_skipped_with_warning(rage_home: Path) -> None:
    store = RunStore()
    good = store.start("tool", ["tool"], recorder="test").finish(exit_code=0)
    bad = store.start("tool", ["tool", "2"], recorder="test").finish(exit_code=0)
    (bad.dir / "meta.json").write_text("{not json")
    listing = store.list("tool")
    assert [r.id for r in listing.runs] == [good.id]
    assert len(listing.warnings) == 1 and bad.id in listing.warnings[0]
    res = run_rage("list", "--app", "tool")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr and "skipping broken run" in res.stderr
    assert good.short_id in res.stdout


def test_resolve_errors(rage_home: Path) -> None:
    store = RunStore()
    with pytest.raises(NotFoundError):
        store.resolve("last")
    store.start("tool", ["tool"], recorder="test").finish(exit_code=0)
    with pytest.raises(NotFoundError):
        store.resolve("last-failed")
    with pytest.raises(UsageError):
        store.resolve("../etc")
    res = run_rage("show", "nosuchrun")
    assert res.returncode == 3 and res.stderr.startswith("rage: no run matches")


def test_prune_keeps_live_and_recent(rage_home: Path) -> None:
    store = RunStore()
    live = store.start("tool", ["tool", "live"], recorder="test")
    done = [store.start("tool", ["tool", str(i)], recorder="test").finish(exit_code=0)
            for i in range(6)]
    result = store.prune("tool", max_runs=2, max_bytes=10**9, max_age_days=30)
    remaining = {d.name for d in store.run_dirs("tool")}
    assert live.id in remaining, "a running run must never be pruned"
    assert len(remaining) == 2 and len(result.removed) == 5
    assert done[-1].id in remaining or live.id in remaining
    live.finish(exit_code=0)


def test_prune_by_age_and_bytes(rage_home: Path) -> None:
    store = RunStore()
    runs = [store.start("tool", ["tool"], recorder="test").finish(exit_code=0) for _ in range(3)]
    (runs[-1].dir / "output.log").write_bytes(b"x" * 10_000)
    res = store.prune("tool", max_runs=100, max_bytes=5_000, max_age_days=30)
    assert res.bytes_kept <= 5_000 or res.kept == 0
    future = time.time() + 40 * 86400
    store.prune("tool", max_runs=100, max_bytes=10**9, max_age_days=30, now=future)
    assert store.run_dirs("tool") == []


def test_forget_cli(rage_home: Path) -> None:
    store = RunStore()
    run = store.start("tool", ["tool"], recorder="test").finish(exit_code=1)
    res = run_rage("forget", run.short_id)
    assert res.returncode == 0, res.stderr
    assert not run.dir.exists()
    for _ in range(3):
        store.start("tool", ["tool"], recorder="test").finish(exit_code=0)
    res = run_rage("forget", "--all", "--app", "tool", "--yes")
    assert res.returncode == 0 and "forgot 3" in res.stdout


def test_dead_recorder_with_fatal_dump_reads_as_crashed(rage_home: Path) -> None:
    code = (
        "import faulthandler, ctypes\n"
        "from rage.record.history import RunStore\n"
        "a = RunStore().start('seg', ['seg'], recorder='python')\n"
        "f = open(a.path('fatal.log'), 'w')\n"
        "faulthandler.enable(file=f)\n"
        "ctypes.string_at(0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert proc.returncode == -signal.SIGSEGV
    run = RunStore().resolve("last")
    assert run.status == "crashed" and run.signal == signal.SIGSEGV
    assert "Segmentation fault" in (run.dir / "fatal.log").read_text()
