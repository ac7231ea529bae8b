"""An argv printed as a list: a ``CalledProcessError``'s ``Command '['mysql', '-pX', 'db']'
returned non-zero exit status 1``, a logged ``sys.argv``, a JSON array, node's inspect of
``spawnargs``; and a command line printed as a quoted value (node's ``cmd: 'mysql -pX db'``).
The argv rules ran on argv and on command lines at a line's start, so every one of these
leaked. Now each list of strings holding an option goes through the same rules, and only
the elements that change are rewritten, in their quotes.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from tests.conftest import run_rage
from tests.redact_helpers import red, red_both, reported

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
    (f"[ 'mysql', '-uroot', '-p{S}', 'appdb' ]", "'-p[REDACTED:secret-field]', 'appdb' ]"),
    (f"  cmd: 'mysql -uroot -p{S} appdb',",
     "  cmd: 'mysql -uroot -p[REDACTED:secret-field] appdb',"),
    (f'  "command": "sshpass -p {S} ssh host"', '"sshpass -p [REDACTED:secret-field] ssh host"'),
])
def test_an_argv_printed_as_a_list_is_redacted_by_the_argv_rules(text: str, kept: str) -> None:
    out, counts = red_both(text)
    assert S not in out, out
    assert kept in out, out
    assert counts == {"secret-field": 1}


@pytest.mark.parametrize("text", [
    "Command '['git', 'push', '--force-with-lease', 'origin', 'main']' returned non-zero "
    "exit status 1.",
    "['--token-file', '/run/secrets/token', '--verbose']",
    "argv: ['docker', 'run', '-p', '8080:80', 'nginx']",
    "['a', '-b', 'c']",
    "parts = ['--', '-x']",
    "running 'git push origin main'",
])
def test_lists_without_a_secret_stay(text: str) -> None:
    assert red(text) == (text, {})


def failing_mysql(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose PATH finds first a `mysql` that fails as a refused login does,
    and a file holding the password (a tool reads it, as from its config: not in argv)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mysql = bin_dir / "mysql"
    mysql.write_text("#!/bin/sh\necho 'ERROR 1045 (28000): Access denied' >&2\nexit 1\n")
    mysql.chmod(mysql.stat().st_mode | stat.S_IXUSR)
    pw = tmp_path / "pw"
    pw.write_text(S)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"), pw


def test_a_real_called_process_error_traceback(tmp_path: Path) -> None:
    """A Python tool runs `mysql -p<password>` (a stand-in that fails, first on PATH) with
    check=True: the real interpreter prints the traceback with the argv list."""
    env, pw = failing_mysql(tmp_path)
    code = ("import subprocess, sys\n"
            "pw = open(sys.argv[1]).read()\n"
            "subprocess.run(['mysql', '-uroot', '-p' + pw, 'appdb'], check=True)\n")
    proc = run_rage("run", "--app", "dbtool", "--", sys.executable, "-c", code, str(pw), env=env)
    assert proc.returncode == 1
    assert f"'-p{S}'" in proc.stderr  # the traceback as the user saw it
    raw = reported("dbtool", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert b"'-uroot', '-p[REDACTED:secret-field]', 'appdb']' returned non-zero" in raw


NODE = """
const cp = require('child_process');
const pw = require('fs').readFileSync(process.argv[1], 'utf8');
cp.exec(`mysql -uroot -p${pw} appdb`, (e) => {
  console.error(e);
  const p = cp.spawn('mysql', ['-uroot', '-p' + pw, 'appdb']);
  p.on('exit', () => console.error(p.spawnargs));
});
"""


def test_a_real_node_child_process_error(tmp_path: Path) -> None:
    """node prints a failed child's error with `cmd: '...'` and its spawnargs as a list."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed (.ci/run installs it)")
    env, pw = failing_mysql(tmp_path)
    proc = run_rage("run", "--app", "nodetool", "--", "node", "-e", NODE, str(pw), env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"cmd: 'mysql -uroot -p{S} appdb'" in proc.stderr, proc.stderr
    assert f"'-p{S}'" in proc.stderr
    raw = reported("nodetool", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert b"cmd: 'mysql -uroot -p[REDACTED:secret-field] appdb'" in raw
