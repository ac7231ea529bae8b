"""`mytool rage` for click and argparse apps, run as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rage.record.history import Run, RunStore

CLICK_TOOL = """\
import logging, sys
import click
import rage.click

log = logging.getLogger("mytool")

@click.group()
def cli():
    "A tool."

@cli.command()
def ok():
    log.debug("fine")
    click.echo("ok " + str("rage.cli.report_cmd" in sys.modules))

@cli.command()
def boom():
    log.info("about to explode")
    raise ZeroDivisionError("boom")

@cli.command()
def refuse():
    raise click.ClickException("refused")

@cli.command()
@click.pass_context
def three(ctx):
    ctx.exit(3)

rage.click.attach(cli, "mytool", version="2.0")

if __name__ == "__main__":
    cli()
"""

ARGPARSE_TOOL = """\
import argparse, logging, sys
import rage
from rage.integration.argparse import add_rage_subparser, dispatch_rage

def main():
    rage.install("mytool", version="3.0")
    parser = argparse.ArgumentParser(prog="mytool")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("ok")
    sub.add_parser("boom")
    add_rage_subparser(sub, "mytool")
    args = parser.parse_args()
    dispatch_rage(args)
    if args.command == "boom":
        raise ZeroDivisionError("boom")
    print("ok", "click" in sys.modules)

main()
"""


def tool(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`mytool ARGS` as a user runs an installed tool: a script on PATH."""
    script = tmp_path / "mytool"
    if not script.exists():
        script.write_text(textwrap.dedent(source))
    text = script.read_text()
    if not text.startswith("#!"):
        script.write_text(f"#!{sys.executable}\n{text}")
    script.chmod(0o755)
    env = {**os.environ, "PATH": os.pathsep.join([str(tmp_path), os.environ["PATH"]])}
    return subprocess.run(["mytool", *args], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)


def runs() -> list[Run]:
    return RunStore().list("mytool").runs  # newest first


@pytest.fixture(params=["click", "argparse"])
def source(request: pytest.FixtureRequest) -> str:
    return CLICK_TOOL if request.param == "click" else ARGPARSE_TOOL


def test_normal_command_is_recorded_without_importing_report(tmp_path: Path,
                                                             source: str) -> None:
    proc = tool(tmp_path, source, "ok")
    assert proc.returncode == 0, proc.stderr
    # click apps import click anyway; neither pulls in the report machinery
    assert proc.stdout == "ok False\n"
    (run,) = runs()
    assert run.status == "ok" and run.argv[1:] == ("ok",)


def test_crash_hint_names_the_apps_own_command(tmp_path: Path, source: str) -> None:
    proc = tool(tmp_path, source, "boom")
    assert proc.returncode == 1
    assert "ZeroDivisionError: boom" in proc.stderr
    (run,) = runs()
    assert proc.stderr.endswith(
        f"mytool: this crash was recorded; to report it run: mytool rage {run.short_id}\n")
    assert run.status == "crashed"
    assert "ZeroDivisionError: boom" in (run.dir / "traceback.txt").read_text()


def test_rage_help_comes_from_the_report_command(tmp_path: Path, source: str) -> None:
    proc = tool(tmp_path, source, "rage", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Usage: mytool rage" in proc.stdout
    for opt in ("--last", "--last-failed", "--yes", "--preview", "--output", "--to", "--note"):
        assert opt in proc.stdout
    assert RunStore().list("mytool", include_report_commands=True).runs == []  # not a run


def test_rage_last_bundles_the_crashed_run_not_itself(tmp_path: Path, source: str) -> None:
    assert tool(tmp_path, source, "boom").returncode == 1
    (crashed,) = runs()
    out = tmp_path / "bundle.tar.zst"
    proc = tool(tmp_path, source, "rage", "--last", "--yes", "--no-collect", "--output",
                str(out))
    assert proc.returncode == 0, proc.stderr
    from rage.bundle import open_bundle

    reader = open_bundle(out)
    manifest = json.loads(reader.read("manifest.json"))
    assert crashed.id in json.dumps(manifest)
    names = [m.name for m in reader.members]
    assert any(n.endswith("traceback.txt") for n in names)
    # `mytool rage` is not a run of mytool: only the crash is listed
    assert [r.id for r in RunStore().list("mytool", include_report_commands=True).runs] == [
        crashed.id]


def test_click_exit_codes(tmp_path: Path) -> None:
    assert tool(tmp_path, CLICK_TOOL, "refuse").returncode == 1
    assert tool(tmp_path, CLICK_TOOL, "three").returncode == 3
    assert tool(tmp_path, CLICK_TOOL, "--bogus").returncode == 2
    got = [(r.argv[1], r.status, r.exit_code) for r in reversed(runs())]
    assert got == [("refuse", "failed", 1), ("three", "failed", 3), ("--bogus", "failed", 2)]


def test_click_help_lists_rage_without_importing_report(tmp_path: Path) -> None:
    script = tmp_path / "mytool"
    script.write_text(CLICK_TOOL.replace(
        'if __name__ == "__main__":\n    cli()',
        'if __name__ == "__main__":\n'
        '    try:\n        cli()\n'
        '    finally:\n        print("report imported:", "rage.cli.report_cmd" in sys.modules)'))
    proc = tool(tmp_path, "", "--help")
    assert proc.returncode == 0
    assert "rage " in proc.stdout and "Report a problem" in proc.stdout
    assert proc.stdout.endswith("report imported: False\n")


def test_attach_rejects_unknown_options() -> None:
    import click

    from rage.click import attach

    with pytest.raises(TypeError, match="colour"):
        attach(click.Group("g"), "g", colour="red")


def test_rage_errors_name_the_tool_without_a_terminal(tmp_path: Path, source: str) -> None:
    # no run recorded yet but this one, and no terminal to choose on: a clear one-line error
    proc = tool(tmp_path, source, "rage")
    assert proc.returncode != 0
    assert proc.stderr.startswith("mytool: "), proc.stderr
    assert "Traceback" not in proc.stderr
