"""A report made later, from another shell, removes what the recording shell's environment
revealed: the secret values of its secret-named variables, wherever the run's files repeat
them, although the reporting shell has none of them and the history never kept them
(rage.record.hidden). Every recorder (the wrapper, a shim, the Python integration, a run
whose recorder was killed), every way to report (`rage report`, `mytool rage`, `rage redact`
of a run's file), each a real process in a real environment without those variables."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import zstandard

from rage.record import context, hidden
from rage.sensitive import masked_environ
from tests.test_cli_exit_codes import RAGE

# The four, each printed bare: none in a shape a rule knows without its name
SECRETS = {
    "GITHUB_TOKEN": "ghp_R4nd0mT0kenV4lu3ABCDEFGHIJKLMNOPQRS",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Ky3nDSa",
    "MY_SERVICE_PW": "Tr0ub4dor&3x",
    "DB_PASSWORD": "n3cl0;RO4h=;tz0RE%",
}
SCRIPT = """\
echo "aws secret $AWS_SECRET_ACCESS_KEY"
echo "plain word: $MY_SERVICE_PW"
echo "using $GITHUB_TOKEN and $DB_PASSWORD" >&2
exit 3
"""
NEVER_PRINTED = "N0tPr1ntedAnywhere-9f8e7d6c"


def shell(home: Path, **extra: str) -> dict[str, str]:
    """An environment like the test's own, with none of the secrets but ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in SECRETS and k != "UNUSED_TOKEN"}
    return {**env, "RAGE_HOME": str(home), **extra}


def recording_shell(home: Path) -> dict[str, str]:
    return shell(home, **SECRETS, UNUSED_TOKEN=NEVER_PRINTED)


def members(bundle: Path) -> dict[str, bytes]:
    raw = zstandard.ZstdDecompressor().stream_reader(bundle.read_bytes()).read()
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        return {m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
                for m in tar.getmembers() if m.isfile()}


def report(env: dict[str, str], out: Path, *args: str) -> dict[str, bytes]:
    proc = subprocess.run([RAGE, "report", "--last", "--yes", "--no-collect", *args,
                           "--output", str(out)], env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr, proc.stderr
    return members(out)


def leaks(bundle: dict[str, bytes], values: list[str]) -> list[tuple[str, str]]:
    return [(name, v) for name, data in bundle.items() for v in values
            if v.encode() in data or json.dumps(v)[1:-1].encode() in data]


def only_run(home: Path) -> Path:
    [run_dir] = [p for p in home.glob("*/runs/*") if p.is_dir()]
    return run_dir


def record_script(tmp_path: Path, home: Path) -> subprocess.CompletedProcess[bytes]:
    script = tmp_path / "leak.sh"
    script.write_text(SCRIPT)
    proc = subprocess.run([RAGE, "run", "--", "sh", str(script)], env=recording_shell(home),
                          capture_output=True, timeout=60, check=False)
    assert proc.returncode == 3
    assert SECRETS["DB_PASSWORD"].encode() in proc.stderr  # the user saw it: it is recorded
    return proc


def test_the_wrapper_s_run_reported_from_another_shell_keeps_none(tmp_path: Path) -> None:
    home = tmp_path / "home"
    record_script(tmp_path, home)
    other = report(shell(home), tmp_path / "other.tar.zst")
    assert leaks(other, list(SECRETS.values())) == []
    assert other["run/stdout.log"].count(b"[REDACTED") == 2
    assert b"[REDACTED" in other["summary.md"]
    # the report says the same as one made from the recording shell, byte for byte
    same = report(recording_shell(home), tmp_path / "same.tar.zst")
    for name in ("run/stdout.log", "run/stderr.log"):
        assert other[name] == same[name]
    assert other["summary.md"] == same["summary.md"]


def test_the_history_keeps_only_where_its_own_files_hold_a_secret(tmp_path: Path) -> None:
    """After the run: no value, no digest of a value its files never held (UNUSED_TOKEN),
    private like the rest of the record."""
    home = tmp_path / "home"
    record_script(tmp_path, home)
    run_dir = only_run(home)
    path = run_dir / hidden.FILE
    assert path.stat().st_mode & 0o777 == 0o600
    text = path.read_text()
    for v in [*SECRETS.values(), NEVER_PRINTED]:
        assert v not in text
    data = json.loads(text)
    assert data["settled"] is True and "digests" not in data
    places = {(rel, n) for rel, _at, n, _d in data["found"]}
    assert places == {("stdout.log", len(SECRETS["AWS_SECRET_ACCESS_KEY"])),
                      ("stdout.log", len(SECRETS["MY_SERVICE_PW"])),
                      ("stderr.log", len(SECRETS["GITHUB_TOKEN"])),
                      ("stderr.log", len(SECRETS["DB_PASSWORD"]))}


def test_a_run_that_printed_no_secret_keeps_no_hidden_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = subprocess.run([RAGE, "run", "--", "echo", "nothing to see"],
                          env=recording_shell(home), capture_output=True, timeout=60,
                          check=False)
    assert proc.returncode == 0
    assert not (only_run(home) / hidden.FILE).exists()


def test_a_shim_s_run_reported_from_another_shell_keeps_none(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bindir, shims = tmp_path / "bin", tmp_path / "shims"
    bindir.mkdir()
    tool = bindir / "leaky"
    tool.write_text("#!/bin/sh\n" + SCRIPT)
    tool.chmod(0o755)
    env = shell(home, PATH=f"{shims}{os.pathsep}{bindir}{os.pathsep}{os.environ['PATH']}")
    made = subprocess.run([RAGE, "shim", "install", "leaky", "--dir", str(shims)], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert made.returncode == 0, made.stderr
    proc = subprocess.run(["leaky"], env={**env, **SECRETS}, capture_output=True, timeout=60,
                          check=False)
    assert proc.returncode == 3 and SECRETS["GITHUB_TOKEN"].encode() in proc.stderr
    assert (only_run(home).parent.parent.name) == "leaky"
    assert leaks(report(env, tmp_path / "b.tar.zst"), list(SECRETS.values())) == []


TOOL = """\
import logging, os, sys
import click
import rage.click

log = logging.getLogger("mytool")

@click.group()
def cli():
    logging.basicConfig(level=logging.WARNING)

@cli.command()
def sync():
    key = os.environ["MYTOOL_API_KEY"]
    log.debug("using api key %s", key)  # never on the terminal: in log.jsonl
    if os.environ.get("DIE"):
        log.error("still using %s", key)  # flushed at once (ERROR)
        os.kill(os.getpid(), 9)
    sys.exit(2)

rage.click.attach(cli, "mytool", version="1.0")

if __name__ == "__main__":
    cli()
"""
API_KEY = "k3y-Fr0m-The-Rec0rding-Sh3ll-77"


def test_the_integration_s_debug_log_reported_with_mytool_rage_keeps_none(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "mytool.py").write_text(TOOL)
    run = subprocess.run([sys.executable, str(tmp_path / "mytool.py"), "sync"],
                         env=shell(home, MYTOOL_API_KEY=API_KEY), capture_output=True,
                         text=True, timeout=60, check=False)
    assert run.returncode == 2 and API_KEY not in run.stderr + run.stdout
    log = (only_run(home) / "log.jsonl").read_text()
    assert API_KEY in log  # recorded: the report must remove it
    out = tmp_path / "b.tar.zst"
    rep = subprocess.run([sys.executable, str(tmp_path / "mytool.py"), "rage", "--last",
                          "--yes", "--no-collect", "--output", str(out)], env=shell(home),
                         capture_output=True, text=True, timeout=120, check=False)
    assert rep.returncode == 0, rep.stderr
    bundle = members(out)
    assert b"using api key [REDACTED" in bundle["run/log.jsonl"]
    assert leaks(bundle, [API_KEY]) == []


def test_a_run_whose_recorder_was_killed_is_matched_by_digest(tmp_path: Path) -> None:
    """SIGKILL: the run never ends, nothing settled where the values are; the report finds
    them among the files' tokens by their digests."""
    home = tmp_path / "home"
    (tmp_path / "mytool.py").write_text(TOOL)
    run = subprocess.run([sys.executable, str(tmp_path / "mytool.py"), "sync"],
                         env=shell(home, MYTOOL_API_KEY=API_KEY, DIE="1"),
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == -signal.SIGKILL
    run_dir = only_run(home)
    data = json.loads((run_dir / hidden.FILE).read_text())
    assert data["settled"] is False and API_KEY not in json.dumps(data)
    assert API_KEY in (run_dir / "log.jsonl").read_text()
    bundle = report(shell(home), tmp_path / "b.tar.zst")
    assert b"still using [REDACTED" in bundle["run/log.jsonl"]
    assert leaks(bundle, [API_KEY]) == []


def test_rage_redact_of_a_run_s_file_from_another_shell(tmp_path: Path) -> None:
    home = tmp_path / "home"
    record_script(tmp_path, home)
    for name in ("stdout.log", "stderr.log"):
        proc = subprocess.run([RAGE, "redact", str(only_run(home) / name)], env=shell(home),
                              capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode == 0, proc.stderr
        assert "[REDACTED" in proc.stdout
        assert [v for v in SECRETS.values() if v in proc.stdout] == []


@pytest.mark.parametrize("around", [
    "{v}", "x={v}", "'{v}'", '"{v}"', "({v})", "{v},", "{v}.", "https://u:{v}@h/", "[{v}]",
    "k: {v}\n", "\t{v}\t",
])
def test_the_digest_scan_finds_a_value_wherever_a_token_ends(tmp_path: Path,
                                                             around: str) -> None:
    """The path a killed run's report takes, on real files: a value between any of the
    token edges a program prints around it, with separators of its own."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    values = ["n3cl0;RO4h=;tz0RE%", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Ky3nDSa"]
    masked = masked_environ({"DB_PASSWORD": values[0], "AWS_SECRET_KEY": values[1]})
    assert context.start_hidden(str(run_dir / hidden.FILE), values) is not None
    assert not set(masked.values()) & set(values)  # what environ.json hides
    text = "noise " + " and ".join(around.format(v=v) for v in values) + " more noise\n"
    (run_dir / "output.log").write_text(text)
    assert sorted(hidden.recovered(str(run_dir))) == sorted(values)


def test_a_damaged_hidden_file_is_said_and_the_report_goes_on(tmp_path: Path) -> None:
    home = tmp_path / "home"
    record_script(tmp_path, home)
    (only_run(home) / hidden.FILE).write_text('{"schema": 1, "salt": 7}')
    proc = subprocess.run([RAGE, "report", "--last", "--yes", "--no-collect", "--output",
                           str(tmp_path / "b.tar.zst")], env=shell(home), capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0
    assert [line for line in proc.stderr.splitlines() if "hidden.json" in line] == [
        line for line in proc.stderr.splitlines() if line.startswith("rage: warning:")]
    assert "hidden.json of run" in proc.stderr and "Traceback" not in proc.stderr


def test_an_environment_without_secret_values_writes_nothing(tmp_path: Path) -> None:
    """What the recorder passes: the values environ.json masks (none here, and one too
    short to learn)."""
    environ = {"PATH": "/usr/bin", "HOME": "/root", "API_TOKEN": "short"}
    masked = masked_environ(environ)
    hid = [v for k, v in environ.items() if masked[k] != v]
    assert hid == ["short"]
    assert context.start_hidden(str(tmp_path / "h.json"), hid) is None
    assert not (tmp_path / "h.json").exists()
