"""Values longer than 4096 bytes are removed whole (round 28).

Found while making the key/value rules cheaper per secret: an unquoted value was matched
one byte per repetition, at most 4096 of them, and a double-quoted one likewise, so a longer
value lost only its first 4096 bytes (`password=X`, `--token X`, `setenv NAME X`) or
nothing at all (`{"api_key": "X"}`, `password='X'`: the quoted form failed and no other
took it); the forms of particular tools (`.netrc`, `.pgpass`, `requirepass`,
`::add-mask::`, Redis' AUTH, XML elements, LDIF, SASL...) capped theirs at 1-8 KiB. A YAML
line's value (`password: X`) still ends after 8191 bytes: that form takes
the rest of a line, and where a line over 1 MiB is cut in segments, a segment that starts
with `"token": X` would lose the whole segment to it. Long
secrets are ordinary: JWTs with group claims, session cookies, base64 of a service
account's JSON key, a PEM key in one line. A run of ordinary value bytes is now one
repetition, matched at C speed (and no cap left to pass).
"""

from __future__ import annotations

import base64
import json
import random
import string
import sys
from pathlib import Path

import pytest

from tests.conftest import run_rage
from tests.redact_helpers import red_both, reported


def _value(n: int, seed: int = 3) -> str:
    rng = random.Random(seed + n)
    return "Zq8" + "".join(rng.choices(string.ascii_letters + string.digits + "_-", k=n - 3))


FORMS = [
    "password={v}",
    "INFO connecting db_password={v} host=db.internal",
    "--token {v}",
    "curl --api-key={v} https://api.example.com",
    '{{"api_key": "{v}"}}',
    "{{'api_key': '{v}'}}",
    "password='{v}'",
    '{{"name": "DB_PASSWORD", "value": "{v}"}}',
    "setenv DB_PASSWORD {v}",
    "Authorization: Bearer {v}",
    "Cookie: session={v}",
]


@pytest.mark.parametrize("n", [4097, 5000, 20000])
@pytest.mark.parametrize("form", FORMS)
def test_a_long_value_goes_whole(form: str, n: int) -> None:
    v = _value(n)
    line = form.format(v=v) + " done\n" if "{{" not in form else form.format(v=v) + "\n"
    out, counts = red_both(line)
    assert v[:16] not in out and v[-16:] not in out, out[:200]
    assert "[REDACTED:" in out and sum(counts.values()) >= 1
    assert len(out) < 200  # nothing of the value is left beside the marker


# the forms of particular tools and formats, which capped their values at 1-8 KiB too
TOOL_FORMS = [
    "machine db.internal login alice password {v}",
    "requirepass {v}",
    "db.internal:5432:app:alice:{v}",
    "::add-mask::{v}",
    "127.0.0.1:6379> AUTH {v}",
    '127.0.0.1:6379> AUTH "{v}"',
    "SQL> CONNECT scott/{v}@orcl",
    '$p = ConvertTo-SecureString "{v}" -AsPlainText -Force',
    "* Server auth using Basic with user '{v}'",
    "BUNDLE_GEMS__EXAMPLE__COM=deploy:{v}",
    "*cmd* 'PASS {v}'",
    "ACL SETUSER alice on >{v} ~* +@all",
    "<password>{v}</password>",
    '{{"msg": "{{\\"password\\": \\"{v}\\"}}"}}',
]
B64_FORMS = ["send: 'AUTH PLAIN {v}'", "userPassword:: {v}"]


@pytest.mark.parametrize("n", [5000, 20000])
@pytest.mark.parametrize("form", TOOL_FORMS + B64_FORMS)
def test_a_long_value_of_a_tool_form_goes_whole(form: str, n: int) -> None:
    v = _value(n)
    if form in B64_FORMS:
        v = base64.b64encode(v.encode()).decode()
    out, counts = red_both(form.format(v=v) + "\n")
    assert v[:16] not in out and v[n // 2:n // 2 + 16] not in out and v[-16:] not in out, (
        out[:300])
    assert sum(counts.values()) >= 1 and len(out) < 300


@pytest.mark.parametrize("n", [4097, 8000])
def test_a_long_value_of_a_yaml_line_goes_whole(n: int) -> None:
    v = _value(n)
    out, _ = red_both(f"password: {v}\n")
    assert out == "password: [REDACTED:secret-field]\n"


def test_a_long_value_in_a_quoted_string_keeps_what_follows() -> None:
    v = _value(6000)
    out, _ = red_both(f'{{"api_key": "{v}", "region": "eu-west-1", "retries": 3}}\n')
    assert out == ('{"api_key": "[REDACTED:secret-field]", "region": "eu-west-1", '
                   '"retries": 3}\n')


def test_real_program_prints_a_long_secret(tmp_path: Path) -> None:
    """A real program (a Python script run by `rage run`) prints its configuration: the
    6 KB key under `api_key` in JSON, and a `DB_PASSWORD=...` line of 5 KB, as `env`
    would. Before, the bundle kept the whole JSON value and the password's tail."""
    key, pw = _value(6000, 1), _value(5000, 2)
    script = tmp_path / "app.py"
    script.write_text(
        "import json, sys\n"
        f"print(json.dumps({{'api_key': {key!r}, 'region': 'eu-west-1'}}))\n"
        f"print('DB_PASSWORD=' + {pw!r})\n"
        "sys.exit(3)\n")
    proc = run_rage("run", "--app", "longcfg", "--", sys.executable, str(script))
    assert proc.returncode == 3, proc.stderr
    assert key in proc.stdout and pw in proc.stdout  # the tool's output is untouched
    raw = reported("longcfg", tmp_path / "b.tar.zst")
    for secret in (key, pw):
        for part in (secret[:24], secret[2000:2024], secret[-24:]):
            assert part.encode() not in raw
    assert b'"region": "eu-west-1"' in raw
    assert json.dumps({"api_key": "[REDACTED:secret-field]"})[:-1].encode() in raw
