"""The environment a run saw is kept with it (secrets masked) and is what reports show."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from rage.bundle import open_bundle
from rage.record.history import RunStore
from tests.conftest import run_rage

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0" * 2


def _all_bytes(d: Path) -> bytes:
    return b"".join(p.read_bytes() for p in d.rglob("*") if p.is_file())


def test_wrapper_keeps_the_runs_environment_masked(tmp_path: Path) -> None:
    env = {**os.environ, "ONLY_AT_RUN_TIME": "blue", "GITHUB_TOKEN": TOKEN}
    res = run_rage("run", "--", "sh", "-c", "exit 3", env=env)
    assert res.returncode == 3
    run = RunStore().resolve("last")
    path = run.dir / "environ.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    saved = json.loads(path.read_text())
    assert saved["ONLY_AT_RUN_TIME"] == "blue"
    assert saved["GITHUB_TOKEN"] == f"[set, {len(TOKEN)} chars, hidden]"
    assert TOKEN.encode() not in _all_bytes(run.dir)

    # the report runs without that variable: its environment section is the run's
    out = tmp_path / "r.tar.zst"
    report_env = {k: v for k, v in os.environ.items() if k != "ONLY_AT_RUN_TIME"}
    rep = run_rage("report", "--last", "--yes", "--only", "environment", "--output", str(out),
                   env=report_env)
    assert rep.returncode == 0, rep.stderr
    reader = open_bundle(out)
    section = json.loads(reader.read("collectors/environment.json"))
    data = section["data"]
    assert data["source"] == "run"
    assert data["variables"]["ONLY_AT_RUN_TIME"] == "blue"
    # hidden by the collector, then by the redactor's secret-field rule
    assert data["variables"]["GITHUB_TOKEN"].startswith("[")
    assert "GITHUB_TOKEN" in data["hidden"]
    assert "environ.json" not in " ".join(m.name for m in reader.members)
    assert TOKEN.encode() not in out.read_bytes()


def test_python_recorder_keeps_the_environment(tmp_path: Path) -> None:
    script = tmp_path / "tool.py"
    script.write_text("import rage\nrage.install('pytool')\nprint('hi')\n")
    env = {**os.environ, "PYTOOL_MODE": "fast", "PYTOOL_API_KEY": "k" * 30}
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, check=False, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "hi\n", proc.stderr
    saved = json.loads((RunStore().resolve("last").dir / "environ.json").read_text())
    assert saved["PYTOOL_MODE"] == "fast"
    assert saved["PYTOOL_API_KEY"] == "[set, 30 chars, hidden]"


def test_without_a_recorded_environment_the_collector_says_so(tmp_path: Path) -> None:
    run = RunStore().start("tool", ["tool"], recorder="test").finish(exit_code=1)
    assert not (run.dir / "environ.json").exists()
    out = tmp_path / "r.tar.zst"
    rep = run_rage("report", "--last", "--yes", "--only", "environment", "--output", str(out))
    assert rep.returncode == 0, rep.stderr
    data = json.loads(open_bundle(out).read("collectors/environment.json"))["data"]
    assert data["source"] == "reporting process"
