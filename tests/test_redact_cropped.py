"""A quoted secret on a line cropped before its closing quote: a rich panel (a traceback's
source lines and locals, typer's default) or a table cut to the terminal's width shows
`password = 'Zq8s3cret…  │`. The value shapes wanted the closing quote, so the secret
leaked whole; now the rest of the line up to the crop's ellipsis or the panel's border is
the value. A real rich traceback, recorded with `rage run` and reported, keeps none.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import run_rage
from tests.redact_helpers import red, reported

S = "Zq8s3cretValue77xY-a-long-password-that-a-panel-crops-Zq8s3cretValue77xY"
HEAD = S[:30]


@pytest.mark.parametrize(("line", "kept"), [
    (f"│ │  password = '{HEAD}… │ │", "│ │  password = '[REDACTED:secret-field]… │ │"),
    (f'│   5 │   password = "{HEAD} │', '│   5 │   password = "[REDACTED:secret-field] │'),
    (f"┃ api_token: '{HEAD}… ┃", "┃ api_token: '[REDACTED:secret-field]… ┃"),
    (f"DB_PASSWORD='{HEAD}…", "DB_PASSWORD='[REDACTED:secret-field]…"),
    (f'password: "{HEAD}', 'password: "[REDACTED:secret-field]'),  # `cut -c1-40`
])
def test_a_cropped_quoted_value_goes_up_to_the_crop(line: str, kept: str) -> None:
    out, counts = red(line)
    assert HEAD not in out, out
    assert counts == {"secret-field": 1}
    assert out == kept, out


@pytest.mark.parametrize("line", [
    "auth: 'token refreshed",  # prose whose quote is never closed: a word, kept
    "│ │ api_token = None                                                  │ │",
    "│ │  password = ''                                                     │ │",
    "session: 'new",
    # code whose string closes around the key: not cropped (stdlib getpass, http.cookies)
    "def unix_getpass(prompt='Password: ', stream=None):",
    "│ def unix_getpass(prompt='Password: ', stream=None):                    │",
    '    def output(self, attrs=None, header="Set-Cookie:"):',
])
def test_what_a_cropped_line_holds_besides_stays(line: str) -> None:
    assert red(line) == (line, {})


SCRIPT = """
from rich.traceback import install
install(show_locals=True, width=80)
def connect(host, api_token):
    password = open({pw!r}).read()
    raise ConnectionError(f"refused by {{host}}")
connect("db.example.com", open({pw!r}).read())
"""


def test_a_real_rich_traceback_with_locals(tmp_path: Path) -> None:
    """rich crops each local's repr to the panel: the secret's head is on screen and in
    the run's stderr.log, and nowhere in the bundle."""
    pytest.importorskip("rich")
    pw = tmp_path / "pw"
    pw.write_text(S)  # read by the script: not in its argv or source
    script = tmp_path / "app.py"
    script.write_text(SCRIPT.format(pw=str(pw)))
    proc = run_rage("run", "--app", "richapp", "--", sys.executable, str(script))
    assert proc.returncode == 1
    assert HEAD in proc.stderr and S not in proc.stderr, proc.stderr  # cropped, as seen
    raw = reported("richapp", tmp_path / "b.tar.zst")
    assert S[:12].encode() not in raw
    assert b"password = '[REDACTED:secret-field]" in raw
