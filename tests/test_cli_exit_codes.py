"""Every row of the documented exit-code table (docs/exit-codes.md), through the real `rage`
console script.

The table is the contract: each test below reads the documentation's row and makes the installed
`rage` script (the one users run) produce it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rage.errors import ExitCode
from tests.test_select import Pty, record
from tests.test_upload_servers import make_bundle

RAGE = str(Path(sys.executable).with_name("rage"))
EXIT_CODES = Path(__file__).resolve().parent.parent / "docs" / "exit-codes.md"


def rage(*args: str, env: dict[str, str] | None = None, stdin: int | None = subprocess.DEVNULL,
         timeout: float = 60, **kw: object) -> subprocess.CompletedProcess[str]:
    """Run the installed console script, as a user would."""
    proc: subprocess.CompletedProcess[str] = subprocess.run(  # type: ignore[call-overload]
        [RAGE, *args], capture_output=True, text=True, timeout=timeout, stdin=stdin,
        env={**os.environ, **(env or {})}, check=False, **kw)
    return proc


def pty_script(*args: str, env: dict[str, str] | None = None) -> Pty:
    full = {**os.environ, "PAGER": "cat", "TERM": "dumb", "COLUMNS": "120", **(env or {})}
    return Pty([RAGE, *args], env=full)


def table() -> dict[int, str]:
    """The documented exit-code table: code -> meaning."""
    section = EXIT_CODES.read_text()
    return {int(m.group(1)): m.group(2)
            for m in re.finditer(r"^\| (\d+) \| (.+?) \|$", section, re.MULTILINE)}


def test_the_table_has_the_rows_tested_here() -> None:
    assert sorted(table()) == [0, 1, 2, 3, 4, 5, 6, 130]
    # every code rage has is documented: the table's, and `rage run`'s own two below it
    assert set(table()) | {126, 127} == {int(code) for code in ExitCode}
    assert "126 when `CMD` is not executable, 127" in EXIT_CODES.read_text()


def test_0_success_and_a_closed_pipe_is_not_an_error() -> None:
    for i in range(30):
        record("demo", ["demo", str(i)], 0)
    p = subprocess.run(f"'{RAGE}' list --limit 30 | head -1", shell=True, capture_output=True,
                       text=True, timeout=60, check=False, executable="/bin/bash")
    assert p.stdout.startswith("  ID"), p.stdout
    status = subprocess.run(
        f"'{RAGE}' list --limit 30 | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}",
        shell=True, capture_output=True, text=True, timeout=60, check=False,
        executable="/bin/bash")
    assert status.stdout.strip() == "0", status.stderr
    assert "Traceback" not in status.stderr and "Broken pipe" not in status.stderr


def test_1_internal_error_is_one_line(tmp_path: Path) -> None:
    # an unexpected exception inside a command, through the same group the script runs
    (tmp_path / "boom_cmd.py").write_text(textwrap.dedent("""
        import click

        @click.command()
        def boom():
            raise RuntimeError("kaput")
    """))
    code = ("import sys\nfrom rage.cli.main import COMMANDS, cli\n"
            "COMMANDS['boom'] = 'boom_cmd:boom'\n"
            "cli.main(args=sys.argv[1:], prog_name='rage')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    p = subprocess.run([sys.executable, "-c", code, "boom"], capture_output=True, text=True,
                       timeout=60, env=env, check=False)
    assert p.returncode == 1
    assert p.stderr.splitlines()[0] == "rage: internal error: RuntimeError: kaput"
    assert "Traceback" not in p.stderr


def test_2_usage_errors() -> None:
    b = make_bundle(Path(os.environ["RAGE_HOME"]) / "b.tar.zst")
    assert rage("send", str(b), "--to", "ftp://x/", "--yes").returncode == 2
    record("demo", ["demo"], 1)
    p = rage("report")  # no terminal, no selector
    assert p.returncode == 2 and "--last" in p.stderr
    assert rage("list", "--limit", "0").returncode == 2


def test_3_nothing_to_report() -> None:
    p = rage("inspect", "nosuch.tar.zst")
    assert p.returncode == 3 and "no such bundle file: nosuch.tar.zst" in p.stderr
    record("demo", ["demo"], 1)
    p = rage("forget", "--all", "--app", "nosuch", "--yes")
    assert p.returncode == 3 and "no runs of nosuch" in p.stderr
    assert rage("show", "ffffffff").returncode == 3
    assert rage("send", "nosuch", "--to", "https://example.org/", "--yes").returncode == 3


def test_4_upload_failed_bundle_kept() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    b = make_bundle(Path(os.environ["RAGE_HOME"]) / "b.tar.zst")
    p = rage("send", str(b), "--to", f"http://127.0.0.1:{port}/", "--yes")
    assert p.returncode == 4
    assert str(b) in p.stderr and b.exists()


def test_5_declined_at_a_prompt() -> None:
    record("demo", ["demo"], 1)
    p = pty_script("forget", "--all", "--app", "demo")
    try:
        p.expect("forget all 1 run(s) of demo? [y/N]")
        p.send("n\n")
        assert p.wait() == 5
    finally:
        p.close()
    assert rage("list", "--app", "demo").stdout.count("demo") == 1
    p = pty_script("report", "--last", "--no-collect")
    try:
        p.expect("What went wrong?")
        p.send("\n")
        p.expect("Create the bundle? [Y/n, p to preview]")
        p.send("n\n")
        assert p.wait() == 5
    finally:
        p.close()


def test_6_invalid_input(tmp_path: Path) -> None:
    b = make_bundle(tmp_path / "b.tar.zst", extra=[("run/x.log", b"x")])
    raw = bytearray(b.read_bytes())
    good = subprocess.run(["zstd", "-dc", str(b)], capture_output=True, check=False).stdout
    tampered = good.replace(b"disk on fire", b"disk on ice!")
    import zstandard

    (tmp_path / "t.tar.zst").write_bytes(zstandard.ZstdCompressor().compress(tampered))
    p = rage("inspect", str(tmp_path / "t.tar.zst"))
    assert p.returncode == 6 and "checksum mismatch" in p.stderr
    (tmp_path / "junk.tar.zst").write_bytes(bytes(raw[:40]))
    assert rage("inspect", str(tmp_path / "junk.tar.zst")).returncode == 6


@pytest.mark.parametrize("where", ["chooser", "note", "confirm"])
def test_130_interrupted_at_a_prompt(where: str) -> None:
    record("demo", ["demo"], 1)
    p = pty_script("report", "--app", "demo", "--no-collect")
    try:
        p.expect("q to quit]")
        if where != "chooser":
            p.send("1\n")
            p.expect("What went wrong?")
        if where == "confirm":
            p.send("\n")
            p.expect("Create the bundle?")
        time.sleep(0.2)
        p.proc.send_signal(signal.SIGINT)
        assert p.wait() == 130
        assert "interrupted" in p.seen.decode()
        assert "Traceback" not in p.seen.decode() and "Aborted!" not in p.seen.decode()
    finally:
        p.close()
    assert not list((Path(os.environ["RAGE_HOME"]) / "demo").rglob("*.tar.zst"))


@pytest.mark.parametrize("command", ["send", "forget"])
def test_130_interrupted_at_a_click_prompt(command: str) -> None:
    record("demo", ["demo"], 1)
    b = make_bundle(Path(os.environ["RAGE_HOME"]) / "b.tar.zst")
    args = (["send", str(b), "--to", "https://example.org/"] if command == "send"
            else ["forget", "--all", "--app", "demo"])
    p = pty_script(*args)
    try:
        p.expect("? [")
        time.sleep(0.2)
        p.proc.send_signal(signal.SIGINT)
        assert p.wait() == 130
        assert "rage: interrupted" in p.seen.decode() and "Aborted!" not in p.seen.decode()
    finally:
        p.close()
    assert rage("list", "--app", "demo").stdout.count("demo") == 1


# Python buffers stdout unless PYTHONUNBUFFERED is set (CI shells often set it; users'
# shells do not): a write that fails may then surface only at the interpreter's final
# flush, as "Exception ignored ..." and status 120
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("args", [["--help"], ["--version"], ["list"], ["list", "--help"],
                                  ["show", "last"], ["redact", "LOG"],
                                  ["report", "--last", "--yes", "--no-collect", "--output", "-"]])
def test_a_full_output_is_one_line_and_the_bad_input_status(args: list[str],
                                                            tmp_path: Path) -> None:
    """`rage list > /dev/full`: one line naming the output, status 6; no traceback, no
    "internal error", no "Exception ignored", not Python's 120."""
    assert rage("run", "--", "sh", "-c", "echo hello; exit 3").returncode == 3
    log = tmp_path / "app.log"
    log.write_text("connecting with password=hunter2\n" * 100)
    argv = [str(log) if a == "LOG" else a for a in args]
    with open("/dev/full", "w") as full:
        proc = subprocess.run([RAGE, *argv], stdout=full, stderr=subprocess.PIPE, text=True,
                              env=BUFFERED, timeout=120, check=False,
                              stdin=subprocess.DEVNULL)
    assert (proc.returncode, proc.stderr) == (
        int(ExitCode.BAD_INPUT), "rage: cannot write standard output: No space left on device\n")


@pytest.mark.parametrize("args", [["--help"], ["list"], ["show", "last"]])
def test_a_reader_that_went_away_had_what_it_wanted(args: list[str]) -> None:
    """`rage list | head -0`: status 0 and not a word, buffered or not."""
    assert rage("run", "--", "true").returncode == 0
    with subprocess.Popen([RAGE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=BUFFERED, stdin=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader is gone before rage writes
        err = proc.stderr.read()
        assert (proc.wait(timeout=60), err) == (0, b"")
