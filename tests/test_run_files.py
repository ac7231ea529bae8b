"""What a recorded run costs the file system, and the run directories of earlier versions.

Every recorded command creates its run's files: on ext4 each new inode is looked for in a
bitmap (past the recently deleted ones, without a journal), more CPU than the rest of the
record's set-up. The counts here are system calls seen by strace on a real `rage run`;
the old layout (a ``lock`` file) is built as earlier versions built it and read back.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rage.record.history import RunStore
from rage.record.prune import delete_run
from rage.record.runlock import lock_is_held
from tests.conftest import rage_cmd, run_rage

STRACE = shutil.which("strace")


def traced_calls(tmp_path: Path, rage_home: Path, *argv: str) -> list[str]:
    """The file system calls a real `rage run` makes under ``rage_home`` (strace -f)."""
    assert STRACE is not None
    out = tmp_path / "trace.txt"
    # the app's first run creates its directories: counted apart, not here
    subprocess.run(rage_cmd("run", "--", *argv), check=True, capture_output=True)
    subprocess.run([STRACE, "-f", "-qq", "-o", str(out), "-e",
                    "trace=openat,open,creat,mkdir,mkdirat,rename,renameat,renameat2,link,"
                    "linkat,unlink,unlinkat", *rage_cmd("run", "--", *argv)],
                   check=True, capture_output=True)
    home = str(rage_home)
    return [line for line in out.read_text().splitlines()
            if home in line and "resumed" not in line and "= -1" not in line]


@pytest.mark.skipif(STRACE is None, reason="needs strace")
def test_a_run_creates_no_lock_file_and_renames_only_to_publish(tmp_path: Path,
                                                                rage_home: Path) -> None:
    calls = traced_calls(tmp_path, rage_home, "sh", "-c", "echo out; echo err >&2")
    renames = [c for c in calls if re.search(r"\brename", c)]
    # the run into place, and its final meta.json over the first: nothing else
    assert len(renames) == 2, renames
    assert not [c for c in calls if '/lock"' in c], calls
    # environ.json and the first meta.json go straight into the hidden directory
    assert not [c for c in calls if ".tmp" in c and ".new-" in c], calls
    [run] = [r for r in RunStore().list("sh").runs if r.dir.name in "".join(calls)]
    assert (run.dir / "stdout.log").read_bytes() == b"out\n"
    assert (run.dir / "stderr.log").read_bytes() == b"err\n"
    assert json.loads((run.dir / "environ.json").read_text())["PATH"] == os.environ["PATH"]
    assert run.status == "ok" and not (run.dir / "lock").exists()


@pytest.mark.skipif(STRACE is None, reason="needs strace")
def test_a_silent_command_costs_no_capture_files(tmp_path: Path, rage_home: Path) -> None:
    calls = traced_calls(tmp_path, rage_home, "true")
    created = [c for c in calls if "O_CREAT" in c or re.match(r"\S+\s+mkdir", c)]
    # its directory, environ.json, meta.json and the final meta.json's temporary
    assert len(created) == 4, created
    [run] = [r for r in RunStore().list("true").runs if r.dir.name in "".join(calls)]
    assert run.status == "ok" and run.meta["streams"] == {"stdout": "pipe", "stderr": "pipe"}
    assert {t["name"]: t["total_bytes"] for t in run.meta["truncation"]} == {
        "stdout.log": 0, "stderr.log": 0}
    assert [f.name for f in run.files()] == ["environ.json", "meta.json"]
    # shown as their empty files were
    shown = run_rage("show", run.short_id, "--output-log")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == "==> stdout.log <==\n\n==> stderr.log <==\n"


def test_nothing_appended_to_a_file_makes_no_capture(tmp_path: Path, rage_home: Path) -> None:
    out = tmp_path / "out.txt"
    with open(out, "ab") as f:
        proc = subprocess.run(rage_cmd("run", "--", "sh", "-c", "echo said >&2"), stdout=f,
                              stderr=subprocess.PIPE, check=False)
    assert proc.returncode == 0 and proc.stderr == b"said\n"
    [run] = RunStore().list("sh").runs
    assert run.meta["streams"] == {"stdout": "file", "stderr": "pipe"}
    assert [f.name for f in run.files()] == ["environ.json", "meta.json", "stderr.log"]
    assert {t["name"]: t["total_bytes"] for t in run.meta["truncation"]} == {
        "stdout.log": 0, "stderr.log": 5}


LIVE = """
import sys, time
from rage.record.history import RunStore
a = RunStore().start("victim", ["victim"], recorder="test")
print(a.id, flush=True)
time.sleep(60)
"""


def test_a_live_run_is_locked_through_its_directory(rage_home: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", LIVE], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        run = RunStore().resolve(proc.stdout.readline().strip())
        assert not (run.dir / "lock").exists()
        assert lock_is_held(run.dir) and run.status == "running"
        assert delete_run(run.dir) == "locked" and run.dir.is_dir()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    assert RunStore().resolve(run.id).status == "lost"
    assert not lock_is_held(run.dir)
    assert delete_run(run.dir) == "deleted" and not run.dir.exists()


HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)
"""


def old_run(rage_home: Path, app: str, run_id: str, status: str) -> Path:
    """A run directory as rage wrote it before runs were locked through their directory:
    a ``lock`` file beside ``meta.json`` and the captures."""
    run_dir = rage_home / app / "runs" / run_id
    run_dir.mkdir(parents=True, mode=0o700)
    (run_dir / "lock").touch(mode=0o600)
    meta = {"schema": 1, "id": run_id, "app": app, "app_version": None, "argv": [app, "x"],
            "cwd": "/", "started_at": "2026-12-01T10:00:00.000000Z",
            "ended_at": None if status == "running" else "2026-12-01T10:00:01.000000Z",
            "duration_s": None if status == "running" else 1.0, "status": status,
            "exit_code": None if status == "running" else 3, "signal": None, "pid": 1,
            "rage_version": "0.1.0", "recorder": "wrapper", "mode": "pipe",
            "streams": {"stdout": "pipe", "stderr": "pipe"}}
    (run_dir / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    (run_dir / "stdout.log").write_bytes(b"old output\n")
    (run_dir / "stderr.log").write_bytes(b"old error\n")
    (run_dir / "environ.json").write_text(json.dumps({"PATH": "/usr/bin"}))
    for p in run_dir.iterdir():
        p.chmod(0o600)
    return run_dir


def test_runs_of_earlier_versions_are_read_by_their_lock_file(rage_home: Path) -> None:
    live = old_run(rage_home, "oldtool", "20261201T100000Z-0000aaaa", "running")
    done = old_run(rage_home, "oldtool", "20261201T100001Z-0000bbbb", "failed")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(live / "lock")],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    try:
        assert holder.stdout.readline() == "held\n"
        # the directory itself is not locked: the file is what counts in an old run
        fd = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        assert lock_is_held(live) and not lock_is_held(done)
        assert RunStore().resolve("0000aaaa").status == "running"
        assert delete_run(live) == "locked"
        listed = run_rage("list", "--app", "oldtool")
        assert listed.returncode == 0 and "running" in listed.stdout, listed
        shown = run_rage("show", "0000bbbb", "--output-log")
        assert shown.returncode == 0 and "old output" in shown.stdout, shown
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
    deadline = time.monotonic() + 10
    while lock_is_held(live) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert RunStore().resolve("0000aaaa").status == "lost"
    assert RunStore().resolve("0000bbbb").status == "failed"
    assert [f.name for f in RunStore().resolve("0000bbbb").files()] == [
        "environ.json", "meta.json", "stderr.log", "stdout.log"]
