"""Command lines as shells and tools print them, found by running them.

- A password a pipeline feeds a program that reads it from standard input (``echo X |
  docker login --password-stdin``, the recipe of every CI guide), on one line or as an
  xtrace prints it, a command a line: it leaked, and the registry after ``--password-stdin``
  was redacted instead, as if that option took a value.
- bash's xtrace writes a quote inside a quoted word as ``'\\''``: the key/value rules took
  that for the value and kept the secret after it.
- Options of programs the rules did not know (``ipmitool -P``, SNMP's community,
  ``redis-cli AUTH``, ``mysqladmin password``, httpie's ``-a``), and benign damage: ssh's
  ``-p 2222`` after ``sshpass`` redacted, openssl's ``-key k.pem`` taken as ``-k`` + ``ey``,
  and a command line re-quoted whole (``sleep(30)`` became ``sleep ( 30 )``) when one word in
  it changed.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from rage.redact import Redactor
from tests.conftest import run_rage
from tests.redact_helpers import red, red_both, reported

S = "Zq8s3cretValue77xY"
R = "[REDACTED:secret-field]"


@pytest.mark.parametrize(("text", "want"), [
    (f"echo {S} | docker login -u bob --password-stdin registry.example.com",
     f"echo {R} | docker login -u bob --password-stdin registry.example.com"),
    (f"printf '%s' {S} | helm registry login -u bob --password-stdin reg.example.com",
     f"printf '%s' {R} | helm registry login -u bob --password-stdin reg.example.com"),
    (f"echo 'deploy:{S}' | chpasswd", f"echo '{R}' | chpasswd"),
    (f"+ echo {S}\n+ docker login -u bob --password-stdin registry.example.com",
     f"+ echo {R}\n+ docker login -u bob --password-stdin registry.example.com"),
    (f"+ gpg --batch --passphrase-fd 0 -d x.gpg\n+ printf '%s\\n' {S}",
     f"+ gpg --batch --passphrase-fd 0 -d x.gpg\n+ printf '%s\\n' {R}"),
    (f"+ psql -c 'select * from t where api_key = '\\''{S}'\\'''",
     f"+ psql -c 'select * from t where api_key = '\\''{R}'\\'''"),
    (f"+ sh -c 'export API_TOKEN='\\''{S}'\\''; ./run'",
     f"+ sh -c 'export API_TOKEN='\\''{R}'\\''; ./run'"),
    (f"root  4242  ps  sshpass -p {S} ssh -p 2222 h sleep(30)",
     f"root  4242  ps  sshpass -p {R} ssh -p 2222 h sleep(30)"),
    (f"> AUTH default {S}", f"> AUTH default {R}"),
])
def test_a_command_line_in_output(text: str, want: str) -> None:
    out, counts = red_both(text)
    assert out == want
    assert set(counts) == {"secret-field"}


@pytest.mark.parametrize(("argv", "want"), [
    (["sshpass", "-p", S, "ssh", "-p", "2222", "h"],
     ["sshpass", "-p", R, "ssh", "-p", "2222", "h"]),
    (["sshpass", "-f", "pw.txt", "ssh", "-p", "2222", "h"], None),
    (["docker", "login", "-u", "bob", "--password-stdin", "registry.example.com"], None),
    (["openssl", "req", "-key", "k.pem", "-keylen", "2048"], None),
    (["openssl", "dgst", "-hmac", S, "f"], ["openssl", "dgst", "-hmac", R, "f"]),
    (["redis-cli", "-h", "db", "AUTH", "default", S],
     ["redis-cli", "-h", "db", "AUTH", "default", R]),
    (["mysqladmin", "-h", "db", "-uroot", "password", S],
     ["mysqladmin", "-h", "db", "-uroot", "password", R]),
    (["http", "-a", f"bob:{S}", "example.com"], ["http", "-a", f"bob:{R}", "example.com"]),
    (["etcdctl", "--user", f"root:{S}", "get", "k"],
     ["etcdctl", "--user", f"root:{R}", "get", "k"]),
    (["ipmitool", "-H", "h", "-U", "admin", "-P", S, "power", "status"],
     ["ipmitool", "-H", "h", "-U", "admin", "-P", R, "power", "status"]),
    (["snmpwalk", "-v3", "-A", S, "-X", S, "host"], ["snmpwalk", "-v3", "-A", R, "-X", R, "host"]),
    (["snmpwalk", "-v2c", "-c", S, "host"], ["snmpwalk", "-v2c", "-c", R, "host"]),
])
def test_argv_forms(argv: list[str], want: list[str] | None) -> None:
    assert Redactor(pseudonymize=False).argv(argv) == (argv if want is None else want)


def test_a_real_xtrace_of_a_ci_login(tmp_path: Path) -> None:
    """bash prints a pipeline's commands on lines of their own; `docker` is a stand-in on
    PATH that reads its standard input as the real one does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text("#!/bin/sh\ncat >/dev/null\necho 'Login Succeeded'\n")
    docker.chmod(docker.stat().st_mode | stat.S_IXUSR)
    pw = tmp_path / "pw"
    pw.write_text(S)
    script = tmp_path / "ci.sh"
    script.write_text(f"set -x\nREGISTRY_PASSWORD=$(cat {pw})\n"
                      'echo "$REGISTRY_PASSWORD" | docker login -u ci --password-stdin '
                      "registry.example.com\n"
                      "psql_cmd=\"select * from t where api_key = '$REGISTRY_PASSWORD'\"\n"
                      'true "$psql_cmd"\n')
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    proc = run_rage("run", "--app", "ci", "--", "bash", str(script), env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"+ echo {S}" in proc.stderr and "'\\''" + S in proc.stderr
    raw = reported("ci", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert f"+ echo {R}".encode() in raw
    assert b"+ docker login -u ci --password-stdin registry.example.com" in raw
    assert f"api_key = '\\''{R}'\\''".encode() in raw


@pytest.mark.parametrize(("text", "want"), [
    (f"    command:\n      - --db-password\n      - {S}\n      - --verbose",
     f"    command:\n      - --db-password\n      - {R}\n      - --verbose"),
    (f'      - --api-key\n      - "{S}"', f'      - --api-key\n      - "{R}"'),
    (f'    "cmd": [\n        "mysql",\n        "--password",\n        "{S}",\n        "db"\n    ]',
     f'    "cmd": [\n        "mysql",\n        "--password",\n        "{R}",\n        "db"\n    ]'),
])
def test_an_argv_one_element_a_line(text: str, want: str) -> None:
    """`docker compose config` prints a service's command as a YAML list, ansible -vvv as a
    pretty-printed JSON list: an option alone on its line, its value on the next."""
    out, _counts = red_both(text)
    assert out == want


@pytest.mark.parametrize("text", [
    "      - --token-file\n      - /run/secrets/t",
    "      - --password-stdin\n      - registry.example.com",
    '        "--password",\n        "--verbose",',
])
def test_option_items_without_a_secret_stay(text: str) -> None:
    assert red(text) == (text, {})


def test_a_real_pretty_printed_argv(tmp_path: Path) -> None:
    """A tool that logs the command it runs as indented JSON, as ansible -vvv does."""
    pw = tmp_path / "pw"
    pw.write_text(S)
    code = ("import json, sys\n"
            "cmd = ['mysql', '--user', 'root', '--password', open(sys.argv[1]).read(), 'db']\n"
            "print(json.dumps({'cmd': cmd}, indent=4))\n")
    proc = run_rage("run", "--app", "pretty", "--", sys.executable, "-c", code, str(pw))
    assert proc.returncode == 0, proc.stderr
    assert f'"{S}"' in proc.stdout
    raw = reported("pretty", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert f'        "--password",\n        "{R}",'.encode() in raw
