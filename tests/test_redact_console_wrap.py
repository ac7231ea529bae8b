"""A value under a secret name that a program wrapped at its console's width.

Rich folds a word longer than its console (80 columns when its output is a pipe) at the
width, and `fold` any line: an AWS session token (~400 characters) printed as
`AWS_SESSION_TOKEN=...` ran over six lines, and only the first lost its part. The rest is
taken when the lines after the cut value are token bytes of one console-wide width, and
then the leading token bytes of the line after them.
"""

from __future__ import annotations

import random
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
