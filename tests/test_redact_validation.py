"""What validation errors quote: pydantic's ``ValidationError`` prints the field's location
on a line of its own and the rejected input on the next (``input_value='...'``); the same
errors as data (``e.errors()``, ``e.json()``, FastAPI's 422 body) put ``"loc"`` and
``"input"`` in one object. Settings read from the environment (pydantic-settings) print a
rejected ``DB_PASSWORD`` so. On the code before, each of these kept the secret.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.conftest import run_rage
from tests.redact_helpers import red, red_both, reported

S = "Zq8s3cretValue77xY"
R = "[REDACTED:secret-field]"


@pytest.mark.parametrize(("text", "kept"), [
    ("1 validation error for Settings\ndb_password\n  Input should be a valid integer, unable to "
     f"parse string as an integer [type=int_parsing, input_value='{S}', input_type=str]\n"
     "    For further information visit https://errors.pydantic.dev/2.14/v/int_parsing",
     f"input_value='{R}', input_type=str]"),
    (f"database.api_key\n  String should have at least 64 characters [type=string_too_short, "
     f'input_value="{S}", input_type=str]', f'input_value="{R}"'),
    ("pin\n  Input should be less than 10 [type=less_than, input_value=482913, input_type=int]",
     f"input_value={R}, input_type=int]"),
    ('[{"type":"string_too_short","loc":["body","password"],"msg":"String should have at least '
     f'12 characters","input":"{S}","ctx":{{"min_length":12}}}}]', f'"input":"{R}"'),
    (f"[{{'type': 'int_parsing', 'loc': ('api_key',), 'msg': 'Input should be a valid integer', "
     f"'input': '{S}', 'url': 'https://errors.pydantic.dev/2.14/v/int_parsing'}}]",
     f"'input': '{R}', 'url'"),
    ('{\n  "detail": [\n    {\n      "type": "string_too_short",\n      "loc": [\n        "body",'
     '\n        "password"\n      ],\n      "msg": "String should have at least 12 characters",'
     f'\n      "input": "{S}"\n    }}\n  ]\n}}', f'"input": "{R}"'),
    # two errors on one line: each its own
    ('[{"loc":["username"],"input":1},{"loc":["password"],"input":"' + S + '"},'
     '{"loc":["token"],"input":"' + S + '"}]', f'"input":"{R}"}}]'),
])
def test_the_input_a_secret_field_rejected_goes(text: str, kept: str) -> None:
    out, counts = red_both(text)
    assert S not in out, out
    assert kept in out, out
    assert set(counts) == {"secret-field"}


@pytest.mark.parametrize("text", [
    "page_size\n  Input should be a valid integer [type=int_parsing, input_value='abc', "
    "input_type=str]",
    "  Input should be a valid integer [type=int_parsing, input_value='abc', input_type=str]",
    "max_tokens\n  Input should be less than 100 [type=less_than, input_value=4096, "
    "input_type=int]",
    'password\n  Field required [type=missing, input_value={}, input_type=dict]',
    '[{"loc":["body","page_size"],"msg":"bad","input":"abc"}]',
    '{"loc": ["body", "token"], "input": "${API_TOKEN}"}',
    '{"input": "hello world", "model": "gpt"}',
])
def test_other_inputs_stay(text: str) -> None:
    assert red(text) == (text, {})


APP = f"""
import json, sys
from pydantic import BaseModel, ValidationError
from pydantic_settings import BaseSettings

class Settings(BaseSettings):
    db_password: int
    api_key: str
    log_level: int = 0

class Login(BaseModel):
    username: str
    password: int

try:
    Login(username="deploy", password="{S}")
except ValidationError as e:
    print(json.dumps(e.errors(include_url=False)))
Settings()  # DB_PASSWORD is no integer: the traceback ends with the error
"""


def test_a_real_pydantic_settings_error(tmp_path: Path) -> None:
    pytest.importorskip("pydantic_settings")
    app = tmp_path / "app.py"
    app.write_text(APP)
    env = dict(os.environ, DB_PASSWORD=f"{S}2", API_KEY="x", LOG_LEVEL="verbose")
    proc = run_rage("run", "--app", "settings", "--", sys.executable, str(app), env=env)
    assert proc.returncode == 1, proc.stderr
    assert f"input_value='{S}2'" in proc.stderr and f'"input": "{S}"' in proc.stdout
    raw = reported("settings", tmp_path / "b.tar.zst", env=dict(os.environ))
    assert S.encode() not in raw
    # the recording environment's DB_PASSWORD, learned from the record (rage.record.hidden)
    # whatever shell reports it, is a literal wherever it appears
    assert b"input_value='[REDACTED:literal]', input_type=str]" in raw
    assert (f'"loc": ["password"], "msg": "Input should be a valid integer, unable to parse '
            f'string as an integer", "input": "{R}"').encode() in raw
    assert b"input_value='verbose'" in raw  # log_level's input is evidence
