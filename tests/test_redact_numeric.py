"""A number under a password-like name (a PIN, a numeric password) is a secret on every
surface: text, argv, the environment, structured data, name/value lines and tables. Numbers
under other secret-looking names (MAX_TOKENS=4096, a uid:gid, a key id) stay: evidence.

Found by trying the same secret on each surface: ``DB_PIN=1234`` was caught in text, but
``--pin 1234`` was not (in text nor in argv), ``["acme", "--pin=1234"]`` was kept in
``meta.json``, ``sshpass -p 123456``, ``redis-cli -a 123456`` and ``mysql -p123456`` kept
their passwords, and the recorder stored ``SIM_PIN=1234`` unmasked.
"""

from __future__ import annotations

import pytest

from rage.redact import Redactor
from rage.sensitive import masked_environ

PIN = "482913"


def _redactor() -> Redactor:
    return Redactor(literals=(), patterns=(), pseudonymize=True, home="/home/alice",
                    user="alice", hostname="alice-laptop")


TEXT = {
    "env-line": f"DB_PIN={PIN}",
    "yaml": f"pin: {PIN}",
    "cli-flag": f"acme unlock --pin {PIN} --yes",
    "cli-flag-eq": f"acme unlock --pin={PIN}",
    "json": f'{{"pin": "{PIN}", "user": "bob"}}',
    "password-number": f"DB_PASSWORD={PIN}",
    "sshpass-line": f"$ sshpass -p {PIN} ssh deploy@host.example.com",
    "redis-cli-line": f"+ redis-cli -a {PIN} ping",
    "mysql-line": f"$ mysql -u root -p{PIN} appdb",
    "k8s-name-value": f"        - name: SIM_PIN\n          value: \"{PIN}\"",
    "csv": f"name,username,pin\nprod,bob,{PIN}\n",
    "pin-code-yaml": f"pin_code: {PIN}",
    "pin-code-json": f'{{"pin_code": {PIN}, "user": "bob"}}',
    "pin-number-env": f"SIM_PIN_NUMBER={PIN}",
}


@pytest.mark.parametrize("name", sorted(TEXT))
def test_a_number_under_a_password_name_goes_from_text(name: str) -> None:
    r = _redactor()
    out = r.text(TEXT[name])
    assert PIN not in out, out
    assert "[REDACTED" in out
    assert sum(r.counts.values()) >= 1


ARGV = {
    "pin-flag": ["acme", "unlock", "--pin", PIN],
    "pin-eq": ["acme", "unlock", f"--pin={PIN}"],
    "password-flag": ["acme", "db", "--password", PIN],
    "sshpass-p": ["sshpass", "-p", PIN, "ssh", "deploy@host.example.com"],
    "redis-cli-a": ["redis-cli", "-a", PIN, "ping"],
    "mysql-glued": ["mysql", "-u", "root", f"-p{PIN}", "appdb"],
    "curl-u": ["curl", "-u", f"deploy:{PIN}", "https://api.example.com/v1/me"],
    "smbclient-U": ["smbclient", "//fs/share", "-U", f"deploy%{PIN}"],
    "git-config": ["git", "config", "--global", "acme.password", PIN],
    "ldapsearch-w": ["ldapsearch", "-x", "-w", PIN],
}


@pytest.mark.parametrize("name", sorted(ARGV))
def test_a_number_under_a_password_name_goes_from_argv(name: str) -> None:
    r = _redactor()
    out = r.argv(ARGV[name])
    assert not any(PIN in a for a in out), out
    # and from the same command line as text (the `Command:` line, a shell's xtrace)
    assert PIN not in r.text(" ".join(ARGV[name]))


def test_a_number_under_a_password_name_goes_from_the_environment() -> None:
    env = {"SIM_PIN": PIN, "DB_PASSWORD": PIN, "MAX_TOKENS": "4096", "SESSION_TIMEOUT": "3600",
           "API_KEY_VERSION": "2", "AUTH_RETRIES": "3"}
    masked = masked_environ(env)  # what a recorder stores
    assert masked["SIM_PIN"] != PIN and masked["DB_PASSWORD"] != PIN
    assert {k: masked[k] for k in ("MAX_TOKENS", "SESSION_TIMEOUT", "API_KEY_VERSION",
                                   "AUTH_RETRIES")} == {k: env[k] for k in (
        "MAX_TOKENS", "SESSION_TIMEOUT", "API_KEY_VERSION", "AUTH_RETRIES")}
    data = _redactor().data(env)  # what a report sends
    assert PIN not in str(data)
    assert data["MAX_TOKENS"] == "4096" and data["SESSION_TIMEOUT"] == "3600"


KEPT_TEXT = [
    "MAX_TOKENS=4096",
    "SESSION_TIMEOUT=3600",
    "token_count: 12",
    "api_key_version=2",
    "python train.py --pin-memory --epochs 10",
    "python train.py --pin-memory true --epochs 10",
    "brew pin node",
    "gpg --pinentry-mode loopback --sign a.txt",
    "docker run -u 1000:1000 acme/api:1.4",
    "Step 3/7 : RUN pip install --no-cache-dir -r requirements.txt",
    "kubectl get pods --selector=app=api --output=wide",
    "spinner_interval=80",
    "pin_memory=True num_workers=4",
    "  pin_memory: true",
    "spin_count=5",
]


@pytest.mark.parametrize("line", KEPT_TEXT)
def test_numbers_and_flags_that_are_evidence_stay(line: str) -> None:
    r = _redactor()
    assert r.text(line) == line
    assert r.counts == {}


KEPT_ARGV = [
    ["acme", "--token-ttl", "3600"],
    ["docker", "run", "-u", "1000:1000", "acme/api:1.4"],
    ["python", "train.py", "--pin-memory", "--epochs", "10"],
    ["gpg", "--pinentry-mode", "loopback", "--sign", "a.txt"],
    ["acme", "--max-tokens", "4096"],
    ["acme", "--api-key-id", "42"],
    ["brew", "pin", "node"],
]


@pytest.mark.parametrize("argv", KEPT_ARGV, ids=lambda a: "-".join(a[:2]))
def test_argv_numbers_that_are_evidence_stay(argv: list[str]) -> None:
    r = _redactor()
    assert r.argv(argv) == argv
    assert r.counts == {}
