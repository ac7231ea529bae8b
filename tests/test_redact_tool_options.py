"""Tools' own password options, in argv and as output prints their command lines.

Found by running, as a user would, the forms the tools document (round 27):

- A command line printed in output was redacted only for the programs the multi-line rule
  had a needle for: `ipmitool -P X`, `rdesktop -p X`, SNMP's `-A X` and `pdm config
  pypi.password X` were caught in argv and leaked in an xtrace of the same command. The
  test over the tables below fails for any program of theirs without a needle.
- A long option spelled with one dash (keytool's and jarsigner's `-storepass X`, influx's
  `-password X`, x11vnc's `-passwd X`) leaked from text: only `--NAME X` was read.
- Forms no rule knew: Samba's `net ads join -U user%X` and its kin, Windows' `net user NAME
  X` and `net use ... X`, `htpasswd -bc`, MinIO's `mc alias set ... SECRET`, macOS's
  `security unlock-keychain -p X` and `add-generic-password -w X`, OpenShift's `oc login -p
  X`, `ldappasswd -s X`, PsExec's `-p X` (and `PsExec64.exe`), `wpa_passphrase SSID X`,
  ncftp's `-p X`, `rclone config create ... secret_access_key X`, restic's
  `--password-command 'echo X'`, `choco apikey -k X`, `cargo login X`, poetry's
  `pypi-token.*` and `http-basic.*`, Bundler's `bundle config HOST user:X`, FreeRDP's
  `/p:X`, TFVC's `/login:user,X`, Perforce's `-P X`, unixODBC's `isql DSN USER X`, and
  `sudo -S` fed by a pipe or a here-string.
- Benign damage the one-dash form would have brought, and some that was there: Go's flag
  help (`--token string   API token`, cobra's and pflag's, in every kubectl, gh and helm
  help), `the -token flag is deprecated`, ffmpeg's `-pass 2`, keytool's `-storepass:env VAR`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from rage.redact import Redactor
from rage.redact import argv as A
from tests.conftest import run_rage
from tests.redact_helpers import red, red_both, reported

S = "Zq8s3cretValue77xY"
R = "[REDACTED:secret-field]"


def _table_forms() -> Iterator[list[str]]:
    """One command line for each secret option, operand or user:password form the rules'
    tables name."""
    for prog, opts in A._SECRET_OPTS.items():
        login = ["login"] if prog in A._LOGIN_ONLY else []
        for opt in sorted(opts):
            yield [prog, *login, opt, S, "host.example.com"]
    for prog, (opts, sep) in A._USERPASS.items():
        for opt in sorted(opts):
            yield [prog, opt, f"deploy{sep}{S}", "host.example.com"]
    for prog, subs in A._POSITIONAL.items():
        for sub in sorted(subs):
            yield [prog, sub, S]
    for key, sub_opts in A._SUBCOMMAND_OPTS.items():
        for opt in sorted(sub_opts):
            yield [*key, opt, S]
    for prog, forms in A._NTH_OPERAND.items():
        for words, nth in forms:
            yield [prog, *words, *(f"operand{k}" for k in range(1, nth)), S]


FORMS = list(_table_forms())


@pytest.mark.parametrize("argv", FORMS, ids=[" ".join(f[:3]) for f in FORMS])
def test_every_form_of_the_tables_goes_from_argv_and_from_text(argv: list[str]) -> None:
    """The same command as argv, as an xtrace's line among others, and as a list."""
    r = Redactor(pseudonymize=False)
    assert S not in json.dumps(r.argv(argv))
    line = shlex.join(argv)
    for text in (f"+ {line}\n", f"Step 3/9 : deploy\n+ {line}\ndone\n",
                 f"subprocess.CalledProcessError: Command '{argv!r}' returned non-zero exit "
                 "status 1.\n"):
        out, _counts = red(text)
        assert S not in out, out


def test_the_tables_in_text_agree_in_both_scans() -> None:
    """The needles are the same for the native and the pure-Python scan: one text with
    every form, redacted by each."""
    text = "".join(f"+ {shlex.join(f)}\n" for f in FORMS)
    out, _counts = red_both(text)
    assert S not in out


@pytest.mark.parametrize(("text", "want"), [
    (f"+ jarsigner -keystore k.jks -storepass {S} -keypass {S} app.jar release",
     f"+ jarsigner -keystore k.jks -storepass {R} -keypass {R} app.jar release"),
    (f"Running: influx -username admin -password {S}",
     f"Running: influx -username admin -password {R}"),
    (f"x11vnc -display :0 -passwd {S} -forever", f"x11vnc -display :0 -passwd {R} -forever"),
    (f"+ echo {S} | sudo -S -k apt-get update", f"+ echo {R} | sudo -S -k apt-get update"),
    (f"sudo -S systemctl restart app <<< {S}", f"sudo -S systemctl restart app <<< {R}"),
    (f"+ restic -r /srv/b snapshots --password-command 'echo {S}'",
     f"+ restic -r /srv/b snapshots --password-command 'echo {R}'"),
    (f"+ net user deploy {S} /add", f"+ net user deploy {R} /add"),
    # (a line of output: one string alone is read as argv, shlex's quoting and all)
    (f"+ net use \\\\fs\\share /user:deploy {S}\n", f"+ net use \\\\fs\\share /user:deploy {R}\n"),
])
def test_command_lines_in_output(text: str, want: str) -> None:
    out, counts = red_both(text)
    assert out == want
    assert set(counts) == {"secret-field"}


@pytest.mark.parametrize("argv", [
    ["net", "user", "deploy", "/delete"], ["net", "use", "Z:", "\\\\fs\\share", "*", "/user:bob"],
    ["htpasswd", "-c", ".htpasswd", "admin"], ["cargo", "login", "--registry", "acme"],
    ["mc", "alias", "list"], ["wpa_passphrase", "acme-office"],
    ["rclone", "config", "create", "r", "s3", "provider", "AWS", "env_auth", "true"],
    ["poetry", "config", "virtualenvs.in-project", "true"],
    ["bundle", "config", "set", "--local", "path", "vendor/bundle"],
    ["xfreerdp", "/u:bob", "/v:win.example.com", "/cert:ignore"],
    ["security", "find-generic-password", "-s", "deploy", "-w"],
    ["keytool", "-list", "-storepass:env", "STOREPASS", "-keypass:file", "/run/secrets/kp"],
    ["ffmpeg", "-i", "in.mp4", "-pass", "2", "out.mp4"], ["choco", "install", "-y", "git"],
    ["oc", "port-forward", "-p", "8080:80"],
])
def test_benign_argv_kept(argv: list[str]) -> None:
    r = Redactor(pseudonymize=False)
    assert r.argv(argv) == argv
    line = f"+ {shlex.join(argv)}"
    assert red(line) == (line, {})


@pytest.mark.parametrize("text", [
    "      --token string              API token for the registry",
    "  -password string\n    \tpassword of the database (default \"\")",
    "  -token string",
    "the -token flag is deprecated, use --token-file instead",
    "+ openssl req -new -key server.key -out server.csr",
    "+ openssl rsa -in key.pem -passin env:KEY_PASSWORD -out plain.pem",
    "+ ffmpeg -y -i in.mp4 -c:v libx264 -pass 2 -passlogfile stats out.mp4",
    "+ keytool -list -v -keystore ks.jks -storepass:env STOREPASS",
    "+ pytest -k test_token_refresh -x",
])
def test_benign_text_kept(text: str) -> None:
    assert red_both(text) == (text, {})


def _tool(name: str, where: str = ".ci/run installs it") -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed ({where})")
    return path


# .ci/run does not install a JDK: Debian's default-jdk-headless is some 265 MB for one test,
# and the project's machine image ships OpenJDK 17, so CI runs this test without it
_JDK = "it comes with a JDK, e.g. Debian's default-jdk-headless; .ci/run does not install one"


def test_real_keytool_and_jarsigner_in_an_xtrace(tmp_path: Path) -> None:
    """A release script with `set -x`: the JDK's keytool makes a keystore and jarsigner
    signs a jar, each given `-storepass X` as their manuals say; the xtrace prints both."""
    for name in ("keytool", "jarsigner", "jar"):
        _tool(name, _JDK)
    (tmp_path / "a.txt").write_text("hello\n")
    script = tmp_path / "release.sh"
    script.write_text(
        "set -ex\n"
        f"cd {shlex.quote(str(tmp_path))}\n"
        f"keytool -genkeypair -keystore ks.jks -storepass {S} -keypass {S} -alias release "
        "-dname CN=release -keyalg RSA -keysize 2048 -validity 2 -noprompt\n"
        "jar cf app.jar a.txt\n"
        f"jarsigner -keystore ks.jks -storepass {S} app.jar release\n")
    proc = run_rage("run", "--app", "release", "--", "bash", str(script), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"+ jarsigner -keystore ks.jks -storepass {S} app.jar release" in proc.stderr
    raw = reported("release", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert f"+ jarsigner -keystore ks.jks -storepass {R} app.jar release".encode() in raw
    assert f"-storepass {R} -keypass {R} -alias release".encode() in raw


def test_real_wpa_passphrase_and_htpasswd(tmp_path: Path) -> None:
    """`wpa_passphrase SSID X` prints X (`#psk="X"`) and the key derived from it; `htpasswd
    -bc FILE USER X` takes X as its last argument. Both recorded with `rage run`."""
    _tool("wpa_passphrase")
    _tool("htpasswd")
    proc = run_rage("run", "--app", "wifi", "--", "wpa_passphrase", "acme-office", S)
    assert proc.returncode == 0, proc.stderr
    psk = next(line.split("=", 1)[1] for line in proc.stdout.splitlines()
               if line.strip().startswith("psk="))
    raw = reported("wifi", tmp_path / "w.tar.zst")
    assert S.encode() not in raw and psk.encode() not in raw
    assert b'ssid="acme-office"' in raw
    htfile = tmp_path / "htpasswd"
    proc = run_rage("run", "--app", "web", "--", "htpasswd", "-bc", str(htfile), "admin", S)
    assert proc.returncode == 0, proc.stderr
    assert htfile.read_text().startswith("admin:")
    raw = reported("web", tmp_path / "h.tar.zst")
    assert S.encode() not in raw
    meta = json.loads(subprocess.run(
        ["tar", "-xOf", str(tmp_path / "h.tar.zst"), "run/meta.json"], capture_output=True,
        check=True).stdout)
    assert meta["argv"] == ["htpasswd", "-bc", str(htfile), "admin", R]


def test_real_sudo_fed_by_a_pipe(tmp_path: Path) -> None:
    """`echo X | sudo -S CMD`: bash's xtrace prints `+ echo X` and `+ sudo -S ...` on
    lines of their own; sudo (as root here, so it asks nothing) runs the command."""
    _tool("sudo")
    if os.geteuid() != 0:
        pytest.skip("sudo asks a password of a user who is not root")
    script = tmp_path / "s.sh"
    script.write_text(f"set -x\nPW={S}\necho \"$PW\" | sudo -S -k true\n")
    proc = run_rage("run", "--app", "deploy", "--", "bash", str(script))
    assert proc.returncode == 0, proc.stderr
    assert f"+ echo {S}" in proc.stderr
    raw = reported("deploy", tmp_path / "s.tar.zst")
    assert S.encode() not in raw
    assert f"+ echo {R}".encode() in raw and b"+ sudo -S -k true" in raw


def test_real_expect_script_given_with_c(tmp_path: Path) -> None:
    """A real `expect -c` script answering a password prompt (round 28): its `send "X\\r"`
    leaked from argv (meta.json, the manifest) and from an xtrace of the command, where the
    expect rule looked only at a line that starts with `expect`."""
    _tool("expect")
    script = tmp_path / "deploy.sh"
    digest = hashlib.sha256(S.encode()).hexdigest()[:16]  # the program checks it so
    prompt = ('read -r -s -p Password: p; echo; [ "$(printf %s "$p" | sha256sum | cut -c1-16)"'
              f' = {digest} ] && echo granted')
    inner = f'spawn bash -c {{{prompt}}}; expect "assword:"; send "{S}\\r"; expect eof'
    script.write_text("set -x\nexpect -c " + shlex.quote(inner) + "\n")
    proc = run_rage("run", "--app", "expect", "--", "bash", str(script), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "granted" in proc.stdout  # the real expect answered the real prompt
    assert S in proc.stderr  # the xtrace, as the user saw it
    raw = reported("expect", tmp_path / "e.tar.zst")
    assert S.encode() not in raw
    assert b'send \\"[REDACTED:' in raw or b'send "[REDACTED:' in raw


def test_real_expect_error_trace_of_a_failed_send(tmp_path: Path) -> None:
    """The program an expect script spawned is gone before the password is sent: Tcl
    prints the failed command in its error trace (`    while executing` / `"send "X\\r""`),
    which the expect rule did not know. The script is a file, so nothing else in the run
    names the password."""
    _tool("expect")
    exp = tmp_path / "login.exp"
    exp.write_text(f'spawn true\nexpect "assword:"\nsend "{S}\\r"\n')
    proc = run_rage("run", "--app", "expect2", "--", "expect", str(exp), timeout=60)
    assert "while executing" in proc.stderr and S in proc.stderr, proc.stderr  # the trace
    raw = reported("expect2", tmp_path / "t.tar.zst")
    assert S.encode() not in raw
    assert b'"send "[REDACTED:secret-field]\\r""' in raw
