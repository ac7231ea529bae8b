"""What is typed after a password prompt, where the terminal echoed it, and OpenVPN's
inline secrets.

A prompt that leaves echo on (``read -p`` in a script, a tool that does not turn it off, a
pasted transcript) records the answer after it: git's ``Password for 'https://u@host': ``,
sudo's, ssh's ``Enter passphrase for key '...'``, psql's ``Password for user u:``, curl's,
openssl's ``Enter PEM pass phrase:``. Each leaked whole on the code before: the words
between ``password`` and the ``:`` are no key shape. A log's sentence with the same words
keeps its last word; a prompt nobody answered stays byte for byte.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from rage.redact import Redactor
from tests.redact_helpers import both_scans, red, reported
from tests.test_wrapper_pty import terminal

S = "Zq8s3cretValue77xY"


PROMPTS = [
    f"Password for 'https://alice@github.com': {S}",
    f"[sudo] password for alice: {S}",
    f"Enter passphrase for key '/srv/keys/id_ed25519': {S}",
    f"Enter passphrase for /srv/keys/id_rsa: {S}",
    f"Password for user postgres: {S}",
    f"Enter host password for user 'deploy': {S}",
    f"Enter PEM pass phrase: {S}",
    f"Verifying - Enter PEM pass phrase: {S}",
    f"Enter pass phrase for server.key: {S}",
    f"Enter password for app@db.example.com: {S}",
    f"Password (again): {S}",
    f"Password for 'https://alice@github.com': {S}\r",
    f"Password for 'https://alice@github.com': correct horse battery {S}",
]


@pytest.mark.parametrize("line", PROMPTS)
def test_the_answer_after_a_prompt_goes_and_the_prompt_stays(line: str) -> None:
    out, counts = red(line)
    assert S not in out, out
    prompt = line[:line.index(": ") + 2]
    assert out.startswith(prompt + "[REDACTED:secret-field]"), out
    assert counts == {"secret-field": 1}
    fast, slow = both_scans(f"12:00 start\n{line}\nnext line\n")
    assert fast == slow


@pytest.mark.parametrize("line", [
    "Password for 'https://alice@github.com': ",  # echo off: nothing after it
    "[sudo] password for alice: ",
    "Sorry, try again.",
    "Changing password for alice.",
    "passwd: password updated successfully",
    "passwd: password expiry information changed.",
    "2026-12-02 INFO reset password for bob: done",
    "Bad passphrase, try again for /srv/keys/id_rsa: ",
    "psql: error: connection to server failed: FATAL:  password authentication failed "
    'for user "postgres"',
    "The password for the account is kept in the vault",
])
def test_prompts_without_an_answer_and_sentences_stay(line: str) -> None:
    assert red(line) == (line, {})


def test_a_name_in_the_prompt_is_pseudonymised_with_the_answer_gone() -> None:
    line = f"Enter passphrase for key '/home/bob/.ssh/id_ed25519': {S}"
    out, counts = red(line, home="/home/alice", user="alice", hostname="alice-laptop")
    assert re.fullmatch(r"Enter passphrase for key '/home/user-\d/\.ssh/id_ed25519': "
                        r"\[REDACTED:secret-field\]", out), out
    assert counts == {"secret-field": 1, "user": 1}


OVPN = ("client\nremote vpn.example.com 1194\n<auth-user-pass>\nalice\n{p}\n</auth-user-pass>\n"
        "<tls-auth>\n-----BEGIN OpenVPN Static key V1-----\n"
        "e685bdaf659a25a200e2b9e0a00f5f3a\n{p2}\n-----END OpenVPN Static key V1-----\n"
        "</tls-auth>\nkey-direction 1\nverb 3\n")


def test_an_openvpn_profiles_password_and_static_key_go() -> None:
    hexkey = "3e1a0b1a7b8c9d0e1f2a3b4c5d6e7f80"
    text = OVPN.format(p=S, p2=hexkey)
    out, counts = red(text)
    assert S not in out and hexkey not in out, out
    assert "<auth-user-pass>\nalice\n[REDACTED:secret-field]\n</auth-user-pass>\n" in out
    assert "<tls-auth>\n[REDACTED:private-key]\n</tls-auth>\nkey-direction 1\n" in out
    assert counts == {"secret-field": 1, "private-key": 1}
    fast, slow = both_scans(text)
    assert fast == slow


def test_an_openvpn_profile_streamed_in_small_blocks_is_seen_whole() -> None:
    """The stream never cuts between `<auth-user-pass>` and the password."""
    text = ("x" * 70 + "\n") * 2000 + OVPN.format(p=S, p2="ab" * 16)
    data = text.encode()
    for block in (4096, 65536):
        r = Redactor(pseudonymize=False)
        out = b"".join(r.stream((data[i:i + 997] for i in range(0, len(data), 997)),
                                block=block))
        assert S.encode() not in out
        assert out == Redactor(pseudonymize=False).bytes(data)


def test_a_real_echoing_prompt_recorded_on_a_terminal(tmp_path: Path) -> None:
    """bash's `read -p` (no -s) on a real terminal under `rage run`: the terminal echoes the
    answer, the user sees it and output.log records it; the bundle does not."""
    script = ("read -r -p \"Password for 'https://alice@example.com': \" pw; "
              "echo \"length ${#pw}\"; exit 3")
    with terminal("--app", "prompt", "--", "bash", "-c", script) as term:
        term.read_until(b"example.com': ")
        time.sleep(0.1)
        os.write(term.master, S.encode() + b"\r")
        term.read_until(b"length 18")
        assert term.finish() == 3
    assert S.encode() in term.seen  # echoed: what the user saw
    raw = reported("prompt", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert b"Password for 'https://alice@example.com': [REDACTED:secret-field]" in raw
