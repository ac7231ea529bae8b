"""Command lines printed in output are redacted as the command lines they are.

``text()`` of a one-line string (argv, a note) applied the command-line rules
(:mod:`rage.redact.argv`), but the bytes of output and logs did not: a shell's xtrace
(``+ sshpass -p X ssh host``), a CI log or a Makefile echoing its commands, and ``ps``
output kept every secret that only a program's own option rules know (``sshpass -p``,
``redis-cli -a``, ``mysql -pX``, ``vault login X``, ``docker login -p``, ``curl -u``,
``sqlplus user/X@db``). Now every line that runs a known program, at its start or after a
prompt, a trace mark, a log prefix or ``ps`` columns, goes through the same rules.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from rage.redact import Redactor
from tests.conftest import run_rage

S = "Zq8s3cretValue77xY"
LINES = {
    "xtrace-sshpass": f"+ sshpass -p {S} ssh deploy@host.example.com",
    "xtrace-redis": f"++ redis-cli -h cache -a {S} ping",
    "prompt-mysql": f"$ mysql -u root -p{S} appdb",
    "make-echo": f"mysqldump -u backup -p{S} --all-databases > all.sql",
    "vault-login": f"+ vault login {S}",
    "docker-login": f"+ docker login -u bot -p {S} registry.example.com",
    "curl-user": f"+ curl -sS -u deploy:{S} https://api.example.com/v1/me",
    "ldapsearch": f"ldapsearch -x -D cn=admin,dc=example,dc=com -w {S} -b dc=example,dc=com",
    "sqlplus": f"+ sqlplus -S app/{S}@//db.example.com:1521/orcl @run.sql",
    "log-prefix": f"2026-12-02T10:00:00Z INFO runner: exec: sshpass -p {S} rsync -a src/ h:/d",
    "ps-aux": f"root      4242  0.0  0.1  12345  6789 ?  Ss  10:00   0:00 redis-cli -a {S} ping",
    "sudo": f"+ sudo -u app mysql -u app -p{S} -e 'select 1'",
    "sh-c": f"+ sh -c 'sshpass -p {S} ssh host uptime'",
}


@pytest.mark.parametrize("name", sorted(LINES))
def test_a_printed_command_line_is_redacted_as_one(name: str) -> None:
    line = LINES[name]
    for buf in (line.encode() + b"\n", b"before\n" + line.encode() + b"\nafter\n"):
        r = Redactor(pseudonymize=False)
        out = r.bytes(buf)
        assert S.encode() not in out, out
        assert out.count(b"\n") == buf.count(b"\n")
        assert sum(r.counts.values()) >= 1
    # what is not the secret stays: the program and the words around the value
    text = Redactor(pseudonymize=False).bytes(line.encode()).decode()
    prog = next(w for w in ("sshpass", "redis-cli", "mysqldump", "mysql", "vault", "docker",
                            "curl", "ldapsearch", "sqlplus") if w in line)
    assert prog in text and text.split(prog)[0] == line.split(prog)[0]


def test_in_a_stream_through_the_workers() -> None:
    """Past the parallel threshold the same lines go through forked workers."""
    filler = b"2026-12-02T10:00:00Z INFO ordinary line of a long log with words\n" * 200_000
    lines = b"".join(v.encode() + b"\n" for v in LINES.values())
    data = filler + lines + filler
    r = Redactor(pseudonymize=False)
    out = b"".join(r.stream(iter([data[i:i + (1 << 20)] for i in range(0, len(data), 1 << 20)]),
                            size=len(data), workers=2))
    assert S.encode() not in out and out.count(b"\n") == data.count(b"\n")


KEPT = [
    "+ docker run -p 8080:80 -u 1000:1000 nginx",
    "$ mysql -u root -p appdb",
    "+ redis-cli -h cache ping",
    "+ curl -sS https://api.example.com/v1/items",
    "root      4242  0.0  0.1  12345  6789 ?  Ss  10:00   0:00 redis-server *:6379",
    "Use curl -u to pass a user name, or sshpass for scripts.",
    "+ git config --global user.name 'CI Bot'",
    "+ sqlplus / as sysdba",
    "it's a shell's xtrace: + sh -c 'echo \"unbalanced",
]


@pytest.mark.parametrize("line", KEPT)
def test_command_lines_without_a_secret_stay_byte_for_byte(line: str) -> None:
    r = Redactor(pseudonymize=False)
    assert r.bytes(line.encode() + b"\n") == line.encode() + b"\n"
    assert r.counts == {}


def test_a_real_shell_trace_in_a_recorded_run(tmp_path: Path) -> None:
    """A real `sh -x` script prints each command before running it (stub functions stand
    for the programs); the bundle's stderr.log keeps none of the secrets."""
    script = "; ".join(f"{p}() {{ :; }}" for p in ("sshpass", "ldapsearch", "mysql", "vault"))
    script += f"; sshpass -p {S} ssh host; ldapsearch -x -w {S}; mysql -p{S} db"
    script += f"; vault login {S}; exit 4"
    env = dict(os.environ, RAGE_HOME=str(tmp_path / "rh"), RAGE_CONFIG=os.devnull)
    proc = run_rage("run", "--", "sh", "-xc", script, env=env)
    assert proc.returncode == 4
    assert proc.stderr.count(S) == 4  # the real trace: what the user saw, unchanged
    out = tmp_path / "b.tar.zst"
    assert run_rage("report", "--last", "--yes", "--output", str(out), env=env).returncode == 0
    raw = subprocess.run(["zstd", "-dc", str(out)], check=True, capture_output=True).stdout
    assert S.encode() not in raw
    stderr = subprocess.run(f"zstd -dc {shlex.quote(str(out))} | tar -xO run/stderr.log",
                            shell=True, check=True, capture_output=True, text=True).stdout
    # the script in argv is kept as written, so its secret is learned from it (round 28:
    # before, its words were joined anew and did not align) and goes as a literal here
    assert "+ sshpass -p [REDACTED:literal] ssh host" in stderr, stderr
    assert "+ mysql -p[REDACTED:literal] db" in stderr, stderr
    meta = subprocess.run(f"zstd -dc {shlex.quote(str(out))} | tar -xO run/meta.json",
                          shell=True, check=True, capture_output=True, text=True).stdout
    assert "mysql -p[REDACTED:secret-field] db; vault login" in json.loads(meta)["argv"][2]
