"""An argv printed as a list: a ``CalledProcessError``'s ``Command '['mysql', '-pX', 'db']'
returned non-zero exit status 1``, a logged ``sys.argv``, a JSON array. The argv rules ran
on argv and on command lines, not on lists in output, so every one of these leaked. Now
each list of strings holding an option goes through the same rules, and only the elements
that change are rewritten, in their quotes.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from tests.conftest import run_rage
from tests.redact_helpers import both_scans, red, reported

S = "Zq8s3cretValue77xY"


@pytest.mark.parametrize(("text", "kept"), [
    (f"subprocess.CalledProcessError: Command '['mysql', '-uroot', '-p{S}', 'appdb']' returned "
     "non-zero exit status 1.", "'-uroot', '-p[REDACTED:secret-field]', 'appdb']' returned"),
    (f"Command '['sshpass', '-p', '{S}', 'ssh', 'host']' returned non-zero exit status 5.",
     "['sshpass', '-p', '[REDACTED:secret-field]', 'ssh', 'host']"),
    (f"INFO argv: ['deploy', '--token', '{S}', '--env', 'prod']",
     "['deploy', '--token', '[REDACTED:secret-field]', '--env', 'prod']"),
    (f"DEBUG running ['curl', '-sS', '-u', 'deploy:{S}', 'https://api.example.com']",
     "'-u', 'deploy:[REDACTED:secret-field]', 'https://api.example.com']"),
    (f'{{"argv": ["app", "--password", "{S}", "--verbose"]}}',
     '["app", "--password", "[REDACTED:secret-field]", "--verbose"]'),
    (f"cmd=['redis-cli','-a','{S}','ping']", "['redis-cli','-a','[REDACTED:secret-field]','ping']"),
])
def test_an_argv_printed_as_a_list_is_redacted_by_the_argv_rules(text: str, kept: str) -> None:
    out, counts = red(text)
    assert S not in out, out
    assert kept in out, out
    assert counts == {"secret-field": 1}
    native, pure = both_scans(text)
    assert native == pure == out


@pytest.mark.parametrize("text", [
    "Command '['git', 'push', '--force-with-lease', 'origin', 'main']' returned non-zero "
    "exit status 1.",
    "['--token-file', '/run/secrets/token', '--verbose']",
    "argv: ['docker', 'run', '-p', '8080:80', 'nginx']",
    "['a', '-b', 'c']",
    "parts = ['--', '-x']",
])
def test_lists_without_a_secret_stay(text: str) -> None:
    assert red(text) == (text, {})


def test_a_real_called_process_error_traceback(tmp_path: Path) -> None:
    """A Python tool runs `mysql -p<password>` (a stand-in that fails, first on PATH) with
    check=True: the real interpreter prints the traceback with the argv list."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mysql = bin_dir / "mysql"
    mysql.write_text("#!/bin/sh\necho 'ERROR 1045 (28000): Access denied' >&2\nexit 1\n")
    mysql.chmod(mysql.stat().st_mode | stat.S_IXUSR)
    pw = tmp_path / "pw"  # read by the tool, as from its config: not in its own argv
    pw.write_text(S)
    code = ("import subprocess, sys\n"
            "pw = open(sys.argv[1]).read()\n"
            "subprocess.run(['mysql', '-uroot', '-p' + pw, 'appdb'], check=True)\n")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    proc = run_rage("run", "--app", "dbtool", "--", sys.executable, "-c", code, str(pw), env=env)
    assert proc.returncode == 1
    assert f"'-p{S}'" in proc.stderr  # the traceback as the user saw it
    raw = reported("dbtool", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert b"'-uroot', '-p[REDACTED:secret-field]', 'appdb']' returned non-zero" in raw
