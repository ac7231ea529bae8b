"""Surprises a new user met on first contact (issue 36), each tried with the real CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import run_rage


def test_usage_errors_speak_like_every_other_error() -> None:
    proc = run_rage("list", "--bogus")
    assert proc.returncode == 2
    assert proc.stderr == "rage: no such option '--bogus'\nrage: see `rage list --help`\n"
    proc = run_rage("--nope")
    assert proc.returncode == 2
    assert proc.stderr == "rage: no such option '--nope'\nrage: see `rage --help`\n"
    proc = run_rage("shim", "remove")
    assert proc.returncode == 2
    assert proc.stderr == ("rage: missing argument 'NAME'\n"
                           "rage: see `rage shim remove --help`\n")


def test_no_failed_run_hint_names_rage_list() -> None:
    assert run_rage("run", "--", "true").returncode == 0
    proc = run_rage("report", "--last-failed", "--yes")
    assert proc.returncode == 3
    assert proc.stderr.splitlines()[-1] == "rage: pick another run: `rage list` lists them"


def test_shims_are_found_wherever_rage_installed_them(tmp_path: Path) -> None:
    shim_dir, real_dir, other = tmp_path / "shimbin", tmp_path / "real", tmp_path / "other"
    real_dir.mkdir()
    (real_dir / "mytool").write_text("#!/bin/sh\necho real\n")
    (real_dir / "mytool").chmod(0o755)
    env = {**os.environ, "PATH": f"{shim_dir}:{real_dir}:/usr/bin:/bin"}
    assert run_rage("shim", "install", "mytool", "--dir", str(shim_dir), env=env).returncode == 0
    proc = run_rage("shim", "list", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"mytool\t{shim_dir / 'mytool'} -> {real_dir / 'mytool'}\n"
    # off PATH, the directory is still known: rage installed a shim there
    assert run_rage("shim", "install", "othertool", "--dir", str(other),
                    env=env).returncode == 0
    names = [s["name"] for s in json.loads(run_rage("shim", "list", "--json", env=env).stdout)
             ["shims"]]
    assert names == ["mytool", "othertool"]
    # a shim copied onto PATH by hand is found there too
    (real_dir / "copied").write_bytes((shim_dir / "mytool").read_bytes())
    (real_dir / "copied").chmod(0o700)
    proc = run_rage("shim", "list", env=env)
    assert [line.split("\t")[0] for line in proc.stdout.splitlines()] == [
        "copied", "mytool", "othertool"]
    proc = run_rage("shim", "remove", "mytool", env=env)
    assert proc.returncode == 0 and proc.stdout == f"removed {shim_dir / 'mytool'}\n"
    assert not (shim_dir / "mytool").exists() and (real_dir / "mytool").exists()
    proc = run_rage("shim", "remove", "othertool", env=env)
    assert proc.returncode == 0 and not (other / "othertool").exists()
    proc = run_rage("shim", "remove", "mytool", env=env)
    assert proc.returncode == 3
    assert proc.stderr.splitlines()[0] == (
        "rage: no shim mytool found on PATH nor where rage installed shims")
