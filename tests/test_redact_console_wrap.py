"""A value under a secret name that a program wrapped at its console's width.

Rich folds a word longer than its console (80 columns when its output is a pipe) at the
width, and `fold` any line: an AWS session token (~400 characters) printed as
`AWS_SESSION_TOKEN=...` ran over six lines, and only the first lost its part. The rest is
taken when the lines after the cut value are token bytes of one console-wide width, and
then the leading token bytes of the line after them; and when the cut line is exactly as
wide as a console the run's output had (80, its terminal's, its COLUMNS), the leading token
bytes of the next line, a rest shorter than a line (a 100-character token at 80 columns
kept its last 20 characters).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.redact_helpers import member, record_script, red_both

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
TOKEN = "IQoJb3JpZ2luX2VjE" + "".join(random.Random(7).choices(ALPHABET, k=380)) + "=="


def pieces_left(secret: str, out: str, n: int = 12) -> list[str]:
    return [secret[i:i + n] for i in range(len(secret) - n + 1) if secret[i:i + n] in out]


def rich_print(text: str, width: int | None = None) -> str:
    """What Rich prints of ``text`` to a pipe (its console 80 wide unless ``width``)."""
    code = ("import sys; from rich.console import Console; "
            "Console(width=int(sys.argv[2]) if sys.argv[2] != '0' else None)"
            ".print(sys.argv[1])")
    return subprocess.run([sys.executable, "-c", code, text, str(width or 0)],
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("width", [None, 100, 120])
def test_a_token_rich_folded_goes_whole(width: int | None) -> None:
    text = rich_print(f"exporting AWS_SESSION_TOKEN={TOKEN} for the job", width)
    assert text.count("\n") >= 4 and TOKEN[100:120] in text.replace("\n", "")
    out, counts = red_both(text)
    assert not pieces_left(TOKEN, out), out
    assert out.rstrip().endswith("[REDACTED:secret-field] for the job")
    assert counts == {"secret-field": 1}  # one secret, counted once


@pytest.mark.skipif(shutil.which("fold") is None, reason="fold is not installed")
def test_a_long_value_folded_by_fold() -> None:
    line = f"2026-12-06T10:00:00Z INFO token request client_secret={TOKEN[:300]} scope=read\n"
    text = subprocess.run(["fold", "-w", "72"], input=line, capture_output=True, text=True,
                          check=True).stdout
    out, _ = red_both(text + "2026-12-06T10:00:01Z INFO done\n")
    assert not pieces_left(TOKEN[:300], out), out
    assert "[REDACTED:secret-field] scope" in out  # what follows the value stays
    assert out.endswith("\n2026-12-06T10:00:01Z INFO done\n")


@pytest.mark.parametrize("after", [
    "Done",  # a token that filled its last line exactly: what follows is the next text
    "for the job",
    "2026-12-06T10:00:01Z INFO next step",
    "  indented: the next record",
    "short line",
])
def test_what_follows_a_wrapped_value_stays(after: str) -> None:
    width = 80
    value = TOKEN[: width * 2 - len("API_TOKEN=")]
    text = ("API_TOKEN=" + value)[:width] + "\n" + ("API_TOKEN=" + value)[width:] + "\n"
    out, _ = red_both(text + after + "\n")
    assert not pieces_left(value, out) and out.endswith("\n" + after + "\n"), out


@pytest.mark.parametrize("text", [
    "password=hunter2-Secret-9\n" + "x" * 39 + "\n",  # under a console's width
    "password=hunter2-Secret-9\nretrying in 5s: connection refused by the server now ok\n",
    "password=hunter2-Secret-9\n" + "a" * 80 + "\n" + "b" * 79 + "\n",  # no digit, one case
])
def test_lines_that_are_no_wrap_stay(text: str) -> None:
    out, _ = red_both(text)
    assert out.split("\n")[1:] == text.split("\n")[1:], out


def test_a_rich_cli_recorded_and_reported(tmp_path: Path) -> None:
    """A CLI that prints through Rich, recorded with `rage run` (a pipe: 80 columns) and
    reported: no piece of the token is in the bundle."""
    script = textwrap.dedent('''
        import sys
        from rich.console import Console
        token = open(sys.argv[1]).read().strip()
        Console().print(f"[bold]exporting[/] AWS_SESSION_TOKEN={token} for the job")
        sys.exit(5)
    ''')
    proc, raw, bundle = record_script(tmp_path, script, TOKEN)
    assert proc.returncode == 5, proc.stderr
    assert TOKEN[200:220] in proc.stdout.replace("\n", "")  # the user saw it, wrapped
    assert not pieces_left(TOKEN, raw.decode("utf-8", "replace"))
    assert member(bundle, "run/stdout.log").rstrip().endswith(
        "[REDACTED:secret-field] for the job")


RICH_SCRIPT = textwrap.dedent('''
    import sys
    from rich.console import Console
    token = open(sys.argv[1]).read().strip()
    Console().print(f"exporting API_TOKEN={token} for the job")
    Console().print("2026-12-06T10:00:01Z INFO next step")
    sys.exit(3)
''')


@pytest.mark.parametrize(("length", "width"), [(100, None), (95, None), (150, 120), (70, 60)])
def test_the_rest_of_a_value_shorter_than_a_line(length: int, width: int | None) -> None:
    """The cut line is exactly a console's width, the rest less than a line: the width
    tells the value was cut (80 always; another width once the run recorded it)."""
    value = TOKEN[:length]
    text = rich_print(f"exporting API_TOKEN={value} for the job", width)
    lines = text.split("\n")
    assert any(len(x) == (width or 80) for x in lines) and lines[2].endswith(" for the job")
    assert len(lines[2]) - len(" for the job") < (width or 80)  # the rest: less than a line
    from rage.redact import Redactor

    r = Redactor(home="/home/alice", user="alice", hostname="h.example.com")
    r.wrap_widths |= {width or 80}
    out = r.text(text)
    assert not pieces_left(value, out), out
    assert "[REDACTED:secret-field]\n[REDACTED:secret-field] for the job" in out
    assert r.counts == {"secret-field": 1}  # one secret, counted once
    if width:  # at a width the run did not record, the rest stays: nothing tells the cut
        plain, _ = red_both(text)
        assert pieces_left(value, plain)


@pytest.mark.skipif(shutil.which("fold") is None, reason="fold is not installed")
def test_the_rest_of_a_value_fold_cut_at_80() -> None:
    line = f"2026-12-06T10:00:00Z INFO client_secret={TOKEN[:60]} scope=read\n"
    text = subprocess.run(["fold"], input=line, capture_output=True, text=True,
                          check=True).stdout
    assert len(text.split("\n")[0]) == 80
    out, counts = red_both(text + "2026-12-06T10:00:01Z INFO done\n")
    assert not pieces_left(TOKEN[:60], out), out
    assert "[REDACTED:secret-field]\n[REDACTED:secret-field] scope=read\n" in out
    assert counts == {"secret-field": 1}


@pytest.mark.parametrize("after", [
    "Done", "for the job", "2026-12-06T10:00:01Z INFO next step", "  indented: the next one",
    "retries=3 and going", "aaaaaaaaaa lower case words", "", "#1",
])
def test_what_follows_a_value_ending_an_80_wide_line_stays(after: str) -> None:
    """A value that happens to end a line of 80: the next line's first word stays unless
    it can be a token's tail (a digit, mixed case, padding) and holds no `=` but padding."""
    head = "2026-12-06T10:00:00Z INFO password="
    text = head + "hunter2-Secret-9" + "x" * (80 - len(head) - 16) + "\n" + after + "\n"
    assert len(text.split("\n")[0]) == 80
    out, _ = red_both(text)
    assert out.endswith("[REDACTED:secret-field]\n" + after + "\n"), out


def test_a_rich_cli_recorded_with_columns_set(tmp_path: Path) -> None:
    """`COLUMNS=100 rage run -- CLI` on a pipe: Rich wraps at 100, the recorded environment
    says so, and the report takes the rest of a 130-character token off the next line."""
    value = TOKEN[:130]
    proc, raw, bundle = record_script(tmp_path, RICH_SCRIPT, value, env={"COLUMNS": "100"})
    assert proc.returncode == 3, proc.stderr
    assert any(len(x) == 100 for x in proc.stdout.split("\n"))  # Rich followed COLUMNS
    assert not pieces_left(value, raw.decode("utf-8", "replace"))
    assert "[REDACTED:secret-field]\n[REDACTED:secret-field] for the job\n" in member(
        bundle, "run/stdout.log")


def test_a_rich_cli_recorded_on_a_terminal_120_wide(tmp_path: Path) -> None:
    """`rage run` on a terminal 120 columns wide: the child's pseudo-terminal is that wide,
    Rich wraps there, the run's meta records `columns`, and the report uses it."""
    from tests.redact_helpers import reported
    from tests.test_wrapper_pty import only_run, terminal

    # os.environ, not the process's own: ncurses, set up by a test before, exported COLUMNS=80
    # and LINES=24 to it, which a child inherits (and Rich follows) unless given this one
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    # a terminal that wraps, whatever the shell running the suite says (TERM=dumb: Rich
    # then draws no panel and wraps nothing)
    env["TERM"] = "xterm-256color"

    value = TOKEN[:150]
    (tmp_path / "script.py").write_text(RICH_SCRIPT)
    (tmp_path / "secrets").write_text(value)
    with terminal("--app", "richapp", "--", sys.executable, str(tmp_path / "script.py"),
                  str(tmp_path / "secrets"), rows=40, cols=120, env=env) as term:
        assert term.finish() == 3
    screen = re.sub(r"\x1b\[[0-9;]*m", "", term.seen.decode("utf-8", "replace"))
    assert value in screen.replace("\r\n", "")  # the user saw it (in colour), wrapped at 120
    assert any(len(line) == 120 for line in screen.split("\r\n"))
    assert only_run("richapp")["exit_code"] == 3
    (meta,) = Path(os.environ["RAGE_HOME"]).rglob("meta.json")
    assert json.loads(meta.read_text())["columns"] == 120
    raw = reported("richapp", tmp_path / "b.tar.zst").decode("utf-8", "replace")
    assert not pieces_left(value, raw), raw



def test_the_python_integration_records_its_terminals_width(tmp_path: Path) -> None:
    """`rage.install(...)` in a program whose output is a terminal 100 columns wide: its
    run's meta says `columns` 100, which the report takes as a console width."""
    from tests.test_wrapper_pty import set_size

    script = tmp_path / "app.py"
    script.write_text("import rage\nrage.install('widthapp')\nprint('hello')\n")
    master, slave = os.openpty()
    set_size(master, 30, 100)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    try:
        proc = subprocess.run([sys.executable, str(script)], stdin=subprocess.DEVNULL,
                              stdout=slave, stderr=slave, env=env, timeout=60, check=False)
    finally:
        os.close(slave)
        with contextlib.suppress(OSError):
            while os.read(master, 65536):
                pass
        os.close(master)
    assert proc.returncode == 0
    (meta,) = Path(os.environ["RAGE_HOME"]).rglob("meta.json")
    assert json.loads(meta.read_text())["columns"] == 100
