"""argv redacted as the command line it is: in meta.json, the manifest and `Command:`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rage.redact import Redactor
from tests.conftest import run_rage

S = "Zq8s3cretValue77"  # one distinctive secret: a grep finds any leak


@pytest.mark.parametrize("argv", [
    ["mytool", "--token", S], ["mytool", "--api-key", S], ["mytool", "--password", S],
    ["gpg", "--batch", "--passphrase", S, "-c", "f"], ["mysql", "-u", "root", f"-p{S}", "db"],
    ["mariadb-dump", f"-p{S}"], ["redis-cli", "-h", "h", "-a", S, "ping"],
    ["ldapsearch", "-x", "-D", "cn=admin", "-w", S], ["ldapsearch", f"-w{S}"],
    ["curl", "-u", f"bob:{S}", "https://example.com"], ["curl", f"-ubob:{S}", "x"],
    ["curl", "--proxy-user", f"bob:{S}", "x"], ["vault", "login", S],
    ["vault", "login", "-method=userpass", "username=bob", f"password={S}"],
    ["nuget", "setapikey", S, "-Source", "https://api.nuget.org/v3/index.json"],
    ["nuget", "push", "p.nupkg", "-ApiKey", S], ["dotnet", "nuget", "push", "p", "-k", S],
    ["docker", "login", "-u", "bob", "-p", S, "registry.example.com"],
    ["docker", "login", "--password", S], ["podman", "login", "-p", S, "quay.io"],
    ["sshpass", "-p", S, "ssh", "bob@host"], ["sshpass", f"-p{S}", "ssh", "h"],
    ["openssl", "enc", "-aes-256-cbc", "-pass", f"pass:{S}", "-in", "f"],
    ["openssl", "pkcs12", "-export", f"-passout=pass:{S}"],
    ["nmcli", "device", "wifi", "connect", "home", "password", S],
    ["nmcli", "connection", "modify", "home", "wifi-sec.psk", S],
    ["keytool", "-importkeystore", "-storepass", S], ["java", f"-Dapp.db.password={S}", "-jar"],
    ["sudo", "-u", "postgres", "env", "A=1", "mysql", f"-p{S}"], ["timeout", "5", "redis-cli",
                                                                  "-a", S],
    ["bash", "-c", f"mysql -p{S} db && echo done"], ["sh", "-c", f"curl -u u:{S} x | jq ."],
    ["npm", "config", "set", "//registry.npmjs.org/:_authToken", S],
    ["git", "config", "--global", "github.token", S], ["htpasswd", "-b", "f", "bob", S],
    ["smbclient", "-U", f"bob%{S}", "//h/share"], ["ssh-keygen", "-t", "ed25519", "-N", S],
    ["sqlcmd", "-S", "h", "-U", "sa", "-P", S], ["mytool", f"--db-password={S}"],
    ["mytool", f"DB_PASS={S}"], ["az", "login", "-u", "bob", "-p", S],
])
def test_secret_in_argv_is_removed(argv: list[str]) -> None:
    r = Redactor(pseudonymize=False)
    out = r.argv(argv)
    assert S not in " ".join(out), out
    assert r.counts, out
    assert len(out) == len(argv)


OTHER = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"  # a secret word of its own in the same script
RANDOM = "Hx7pQ2mZr9vK3wLd"  # a token the nearby rules take (S holds English words)


@pytest.mark.parametrize("shape", [
    f"echo Authorization: Bearer {S}9abcXYZ >&2", f"echo password: {S}",
    f"echo the API key is {RANDOM}", f"curl -H 'X-Api-Key: {S}' x",
])
@pytest.mark.parametrize("other", ["", f"echo {OTHER}; ", "mysql -pZq8other1 db; "])
def test_a_script_s_shapes_of_several_words_go_beside_any_other(shape: str, other: str) -> None:
    """`sh -c SCRIPT`: the script is redacted word by word as argv, and as text for the
    shapes no one word holds; once another word of it was redacted, the text pass was
    skipped and the Bearer header went out whole."""
    r = Redactor(pseudonymize=False)
    out = r.argv(["sh", "-c", other + shape])
    assert [x for x in (S, RANDOM, OTHER, "Zq8other1") if x in out[2]] == [], out
    assert r.counts


@pytest.mark.parametrize("argv", [
    ["docker", "run", "-p", "8080:80", "nginx"], ["mysql", "-p", "mydb"],
    ["mytool", "--token-file", "/etc/app/token"], ["mytool", "--token-file=/etc/app/token"],
    ["openssl", "enc", "-pass", "env:PW"], ["openssl", "enc", "-pass", "file:/run/pw"],
    ["mytool", "--max-tokens", "4096"], ["pytest", "-k", "test_token_refresh"],
    ["mytool", "--password", "${DB_PASSWORD}"], ["ssh", "-p", "2222", "host"],
    ["helm", "install", "-p", "x"], ["git", "commit", "-m", "fix token refresh"],
    ["curl", "-u", "bob", "https://example.com"], ["mytool", "--no-auth", "--verbose"],
    ["docker", "run", "-u", "1000:1000", "img"],
])
def test_benign_argv_kept(argv: list[str]) -> None:
    r = Redactor(pseudonymize=False)
    assert r.argv(argv) == argv
    assert not r.counts


def test_bundle_has_no_argv_secret_anywhere(tmp_path: Path) -> None:
    """A real recorded run whose argv holds secrets the old element-wise rules kept:
    meta.json, manifest.json and summary.md's Command line are all clean."""
    script = tmp_path / "tool.py"
    script.write_text("import sys\nprint('args', len(sys.argv))\nsys.exit(2)\n")
    proc = run_rage("run", "--app", "mytool", "--", sys.executable, str(script), "--token", S,
                    "-u", f"bob:{S}2", "--api-key", f"{S}3")
    assert proc.returncode == 2, proc.stderr
    out = tmp_path / "b.tar.zst"
    proc = run_rage("report", "--last", "--yes", "--no-collect", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    dest = tmp_path / "x"
    dest.mkdir()
    subprocess.run(f"zstd -qdc {out} | tar -x -C {dest}", shell=True, check=True)
    blob = b"".join(p.read_bytes() for p in dest.rglob("*") if p.is_file())
    assert S.encode() not in blob
    summary = (dest / "summary.md").read_text()
    assert "--token '[REDACTED:secret-field]'" in summary
    assert os.fsencode(str(script.name)) in blob  # the rest of the command line is evidence


TOKEN = "ghp_" + "Zq8Lr2Vx9Kp4Tn6Wm1Hc3Bd5Fg7Js0Ya2Ue4"
SHA = "0123456789abcdef0123456789abcdef01234567"
UUID = "3f2a1b4c-1234-4abc-9def-0123456789ab"


def _bundle_files(tmp_path: Path, *args: str, env: dict[str, str] | None = None
                  ) -> dict[str, bytes]:
    out = tmp_path / "b.tar.zst"
    proc = run_rage("report", "--last", "--yes", "--output", str(out), *args, env=env)
    assert proc.returncode == 0, proc.stderr
    dest = tmp_path / "x"
    dest.mkdir()
    subprocess.run(f"zstd -qdc {out} | tar -x -C {dest}", shell=True, check=True)
    return {p.relative_to(dest).as_posix(): p.read_bytes()
            for p in dest.rglob("*") if p.is_file()}


def test_pty_recording_with_colour_codes_is_redacted(tmp_path: Path) -> None:
    """pty mode keeps every escape the program wrote: a coloured token, and a key=value cut
    by grep's `\\e[01;31m...\\e[m\\e[K`, are found, and the bundle holds the plain text."""
    from tests.test_select import pty_rage

    script = tmp_path / "colour.py"  # the secrets in its output only, not in argv
    script.write_text(f"print('\\x1b[32m{TOKEN}\\x1b[0m')\n"
                      f"print('password\\x1b[01;31m\\x1b[K=\\x1b[m\\x1b[K{S}')\n"
                      "print('done')\n")
    with pty_rage("run", "--app", "ptyapp", "--", sys.executable, str(script)) as p:
        p.expect("done")
        assert p.wait() == 0
    files = _bundle_files(tmp_path, "--no-collect")
    blob = b"".join(files.values())
    assert TOKEN.encode() not in blob and S.encode() not in blob
    output = files.get("run/output.log", b"")
    assert b"[REDACTED:github-token]" in output and b"\x1b" not in output
    assert b"password=[REDACTED:secret-field]" in output


def test_environment_section_keeps_evidence_and_hides_secrets(tmp_path: Path) -> None:
    env = dict(os.environ, GIT_COMMIT=SHA, BUILD_ID=UUID, MAX_TOKENS="4096",
               AUTH_METHOD="oidc", KEY_VAULT_NAME="acme-prod-kv", DB_PASS=S,
               storageAccountKey=S + "2", GITHUB_PAT=S + "3")
    proc = run_rage("run", "--app", "envapp", "--", sys.executable, "-c", "pass", env=env)
    assert proc.returncode == 0, proc.stderr
    files = _bundle_files(tmp_path, "--only", "environment", env=env)
    blob = b"".join(files.values())
    assert S.encode() not in blob
    envjson = files["collectors/environment.json"].decode()
    for name, value in (("GIT_COMMIT", SHA), ("BUILD_ID", UUID), ("MAX_TOKENS", "4096"),
                        ("AUTH_METHOD", "oidc"), ("KEY_VAULT_NAME", "acme-prod-kv")):
        assert f'"{name}": "{value}"' in envjson, name


@pytest.mark.parametrize(("line", "kept"), [
    (f"mysql -u root -p{S} db", "mysql -u root"), (f"+ redis-cli -a {S} ping", "+ redis-cli"),
    (f"$ sshpass -p {S} ssh bob@host", "$ sshpass -p"), (f"vault login {S}", "vault login"),
    (f"sudo docker login -u bob -p {S} registry.example.com", "registry.example.com"),
])
def test_command_line_as_text(line: str, kept: str) -> None:
    """A one-line string that is a command (the summary's Command line, a process list, an
    xtrace line) is read as a command line."""
    out = Redactor(pseudonymize=False).text(line)
    assert S not in out and kept in out


def test_data_reads_argv_keys_as_command_lines() -> None:
    r = Redactor(pseudonymize=False)
    assert r.data({"argv": ["mysql", f"-p{S}"], "other": ["mysql", f"-p{S}"]}) == {
        "argv": ["mysql", "-p[REDACTED:secret-field]"], "other": ["mysql", f"-p{S}"]}


@pytest.mark.parametrize("argv", [
    ["echo", "Authorization:", "Bearer", RANDOM],
    ["curl", "-H", "Authorization:", "Bearer", RANDOM], ["mytool", "password:", RANDOM],
    ["echo", "the", "API", "key", "is", RANDOM],
])
def test_a_shape_across_argv_elements_is_removed(argv: list[str]) -> None:
    """`rage run -- echo Authorization: Bearer X`: the shell split the header into
    elements, and each was redacted alone, so none held the shape."""
    r = Redactor(pseudonymize=False)
    out = r.argv(argv)
    assert RANDOM not in " ".join(out) and len(out) == len(argv), out
    assert out[:-1] == argv[:-1]
