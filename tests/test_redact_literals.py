"""Values printed as Python literals with a prefix: a dict's repr of bytes (`'password':
b'x'`), as botocore's debug log prints every request header (`'X-Amz-Security-Token':
b'...'`). The value shapes took the lone `b` for the value and kept the quoted secret after
it; now the literal is the value, its prefix and quotes kept. A real boto3 client's debug
log, recorded with `rage run` and reported, keeps no session token.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import run_rage
from tests.redact_helpers import red, red_both, reported

S = "Zq8s3cretValue77xY"


@pytest.mark.parametrize(("text", "kept"), [
    (f"{{'password': b'{S}', 'user': b'app'}}", "{'password': b'[REDACTED:secret-field]', "
                                               "'user': b'app'}"),
    (f'{{"token": b"{S}"}}', '{"token": b"[REDACTED:secret-field]"}'),
    (f"api_key = rb'{S}'", "api_key = rb'[REDACTED:secret-field]'"),
    (f"secret: u'{S}'", "secret: u'[REDACTED:secret-field]'"),
    (f"headers={{'X-Amz-Security-Token': b'{S}', 'X-Amz-Date': b'20261202T100000Z'}}",
     "'X-Amz-Security-Token': b'[REDACTED:auth-header]', 'X-Amz-Date': b'20261202T100000Z'}"),
])
def test_a_prefixed_literal_is_the_value(text: str, kept: str) -> None:
    out, counts = red_both(text)
    assert S not in out, out
    assert kept in out, out
    assert sum(counts.values()) == 1


@pytest.mark.parametrize("text", [
    "{'token': b'', 'password': None}",
    "{'User-Agent': b'aws-cli/2.15.0', 'Content-Type': b'application/json'}",
])
def test_literals_with_nothing_secret_stay(text: str) -> None:
    assert red(text) == (text, {})


BOTO = """
import logging, socket, sys
import boto3
from botocore.config import Config
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
boto3.set_stream_logger("botocore.endpoint", logging.DEBUG)
c = boto3.client("sts", region_name="us-east-1", endpoint_url=f"http://127.0.0.1:{port}",
                 aws_access_key_id="ASIAXEXAMPLE12345678",
                 aws_secret_access_key=open(sys.argv[1]).read().split()[0],
                 aws_session_token=open(sys.argv[1]).read().split()[1],
                 config=Config(retries={"max_attempts": 0}, connect_timeout=1))
try:
    c.get_caller_identity()
except Exception as e:
    sys.exit(type(e).__name__)
"""


def test_a_real_boto3_debug_log(tmp_path: Path) -> None:
    """botocore logs the signed request before sending it (here to a closed port): the
    session token in the headers is on screen and nowhere in the bundle."""
    pytest.importorskip("boto3")
    token = "IQoJb3JpZ2luX2VjEJr" + S * 3
    creds = tmp_path / "creds"  # read by the script: not in its argv
    creds.write_text(f"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY {token}")
    script = tmp_path / "app.py"
    script.write_text(BOTO)
    proc = run_rage("run", "--app", "boto", "--", sys.executable, str(script), str(creds))
    assert proc.returncode == 1, proc.stderr
    assert f"'X-Amz-Security-Token': b'{token}'" in proc.stderr  # what the user saw
    raw = reported("boto", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert b"'X-Amz-Security-Token': b'[REDACTED:auth-header]'" in raw
