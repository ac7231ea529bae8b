"""Hints name a rage the user can run: `mytool rage` from a pipx install has no `rage` on
PATH (pipx puts only the tool's own commands there)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = """\
import sys
import click
import rage.click


@click.command()
def cli():
    "A tool that fails."
    sys.exit(3)


rage.click.attach(cli, "mytool")
cli()
"""


def report_hints(tmp_path: Path, path: str) -> list[str]:
    tool = tmp_path / "mytool.py"
    tool.write_text(TOOL)
    env = {**os.environ, "PATH": path}
    assert subprocess.run([sys.executable, str(tool)], env=env, check=False,
                          capture_output=True).returncode == 3
    proc = subprocess.run([sys.executable, str(tool), "--rage", "--last", "--yes",
                           "--output", f"{tmp_path}/"], env=env, capture_output=True,
                          text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [line.split(": ", 1)[1] for line in (proc.stdout + proc.stderr).splitlines()
            if " send " in line and line.startswith("  - ")]


def runs(command: str, path: str) -> subprocess.CompletedProcess[str]:
    """The hint's command before ` send `, asked for its version in the user's shell."""
    rage = command.split(" send ", 1)[0]
    return subprocess.run(["sh", "-c", f"{rage} --version"], env={**os.environ, "PATH": path},
                          capture_output=True, text=True, check=False, timeout=60)


@pytest.mark.skipif(not Path(sys.executable).with_name("rage").is_file(),
                    reason="the checkout is not installed: no rage script")
def test_off_path_the_hint_names_this_environment_s_rage(tmp_path: Path) -> None:
    path = "/usr/bin:/bin"  # rage's own directory is not on it
    hints = report_hints(tmp_path, path)
    assert len(hints) == 2, hints
    script = str(Path(sys.executable).with_name("rage"))
    assert all(hint.startswith(f"{shlex.quote(script)} send ") for hint in hints), hints
    proc = runs(hints[0], path)
    assert proc.returncode == 0 and proc.stdout.startswith("rage, version "), proc.stderr


def test_on_path_the_hint_says_rage(tmp_path: Path) -> None:
    hints = report_hints(tmp_path, os.environ["PATH"])  # the suite puts rage on PATH
    assert len(hints) == 2 and all(h.startswith("rage send ") for h in hints), hints
    assert runs(hints[0], os.environ["PATH"]).returncode == 0


CRASHING_CLICK = """\
import click
import rage.click


@click.command()
def cli():
    "A tool that crashes."
    raise ValueError("boom")


rage.click.attach(cli, "mytool")
cli()
"""

CRASHING_ARGPARSE = """\
import argparse
import rage
from rage.integration.argparse import add_rage_subparser, dispatch_rage

rage.install("mytool")
parser = argparse.ArgumentParser()
sub = parser.add_subparsers(dest="cmd")
sub.add_parser("go")
add_rage_subparser(sub, "mytool")
args = parser.parse_args()
dispatch_rage(args)
raise ValueError("boom")
"""


@pytest.mark.parametrize("how", ["python mytool.py", "./mytool.py"])
@pytest.mark.parametrize("tool", [CRASHING_CLICK, CRASHING_ARGPARSE], ids=["click", "argparse"])
def test_the_crash_hint_of_a_script_runs_as_printed(tmp_path: Path, how: str,
                                                    tool: str) -> None:
    # a tool author's first try: `python mytool.py` crashes, and the hint said
    # `mytool.py rage ID` (or `mytool rage ID`), which the shell cannot find
    script = tmp_path / "mytool.py"
    script.write_text(f"#!{sys.executable}\n{tool}")
    script.chmod(0o755)
    argv = [sys.executable, "mytool.py"] if how.startswith("python") else ["./mytool.py"]
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    crashed = subprocess.run([*argv, *(["go"] if tool is CRASHING_ARGPARSE else [])],
                             cwd=tmp_path, env=env, capture_output=True, text=True,
                             check=False, timeout=60)
    assert crashed.returncode == 1 and "ValueError: boom" in crashed.stderr
    [hint] = [line for line in crashed.stderr.splitlines() if "to report it run: " in line]
    command = hint.split("to report it run: ", 1)[1]
    out = tmp_path / "out"
    out.mkdir()
    reported = subprocess.run(["sh", "-c", f"{command} --yes --output {out}/"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, check=False,
                              timeout=120)
    assert reported.returncode == 0, (command, reported.stderr)
    assert [p.name.startswith("mytool-") for p in out.iterdir()] == [True]
