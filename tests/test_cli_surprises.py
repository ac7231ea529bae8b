"""Surprises a new user met on first contact (issue 36), each tried with the real CLI."""

from __future__ import annotations

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
