"""Hex dumps (rage.redact.hexdump): what curl --trace, xxd, hexdump -C, od and tcpdump -X show.

A dump prints each byte twice, as hex and as a character, 16 a line: a token runs over
several lines in both columns and no line holds a match. Every dump here is made by the
real program; the redacted dump must show no part of the secret in either column, keep its
layout, and keep every line that held none of it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rage.redact import Redactor
from rage.redact.hexdump import parse
from tests.redact_helpers import http_server, red_both

TOKEN = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngAbCdEf0123"
BEARER = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.dGhpcyBpcyBub3QgYSByZWFsIHNpZw"
PASSWORD = "correct-Horse-battery-9"

DUMPERS = {
    "xxd": ["xxd"],
    "xxd -g1": ["xxd", "-g1"],
    "xxd -c32": ["xxd", "-c32"],
    "hexdump -C": ["hexdump", "-C"],
    "od": ["od", "-A", "x", "-t", "x1z", "-v"],
}
needs = pytest.mark.skipif(any(shutil.which(c[0]) is None for c in DUMPERS.values()),
                           reason="xxd, hexdump or od is not installed")


def dump(tool: str, data: bytes) -> bytes:
    return subprocess.run(DUMPERS[tool], input=data, capture_output=True, check=True).stdout


def red(text: bytes) -> bytes:
    return Redactor(home="/home/alice", user="alice", hostname="laptop").bytes(text)


def shown(out: bytes, width: int = 16) -> tuple[str, str]:
    """All hex digits and all characters the dump's lines show, each column run together
    (a masked byte breaks neither: it is no digit); ``width``: bytes a line shows."""
    hexes, chars = [], []
    for line in out.split(b"\n"):
        m = re.match(rb"[ \t]*(?:0x)?[0-9a-f]{4,8}:? {1,2}(.*)", line)
        if m is None:
            continue
        body = m[1].decode("latin-1")
        hexes.append("".join(re.findall(r"\b[0-9a-f*]{2,8}\b", body[:len(body) * 3 // 4])))
        chars.append(body[-width:])
    return "".join(hexes), "".join(chars)


def leaked(out: bytes, secret: str) -> list[str]:
    """The 6-byte parts of ``secret`` that ``out`` shows, in hex or as characters."""
    hexes, chars = shown(out)
    parts = [secret[i:i + 6] for i in range(0, len(secret) - 5)]
    return [p for p in parts if p.encode().hex() in hexes or p in chars]


@needs
@pytest.mark.parametrize("tool", DUMPERS)
@pytest.mark.parametrize(("request_text", "secret"), [
    (f"GET /api HTTP/1.1\r\nHost: example.com\r\nAuthorization: Bearer {BEARER}\r\n\r\n",
     BEARER),
    (f"POST /login HTTP/1.1\r\n\r\nusername=bob&password={PASSWORD}&remember=1", PASSWORD),
    (f'{{"event": "push", "token": "{TOKEN}", "ok": true}}\n', TOKEN),
    (f"export GITHUB_TOKEN={TOKEN}\nmake deploy\n", TOKEN),
])
def test_a_secret_in_a_dump_goes_from_both_columns(tool: str, request_text: str,
                                                   secret: str) -> None:
    data = request_text.encode()
    text = b"before the dump\n" + dump(tool, data) + b"after it\n"
    out = red(text)
    assert not leaked(out, secret), leaked(out, secret)
    assert secret[:6].encode().hex() in shown(text)[0]  # the test sees what leaks
    assert out.startswith(b"before the dump\n") and out.endswith(b"after it\n")
    # its bytes, and no others, masked: `**` in the hex and `*` in the characters each
    assert out.count(b"*") - text.count(b"*") == 3 * len(secret)
    kept = [a for a, b in zip(text.split(b"\n"), out.split(b"\n"), strict=True) if a == b]
    assert len(kept) >= 3  # the lines that hold none of it stay (the first is the dump's)


@needs
@pytest.mark.parametrize("tool", DUMPERS)
def test_a_pseudonymised_name_is_masked_whole(tool: str) -> None:
    """A name the report pseudonymises in text (the user's, in a home) is masked in a dump:
    every byte of it, no letter left because the pseudonym shares it."""
    text = dump(tool, b"cwd=/home/alice/projects/demo user=alice shell=/bin/bash\n")
    _, chars = shown(red(text), 32 if "-c32" in tool else 16)
    assert not any(part in chars for part in ("alic", "lice")), chars
    assert chars.count("*") >= 2 * len("alice"), chars


@needs
@pytest.mark.parametrize("tool", DUMPERS)
def test_a_dump_without_secrets_stays(tool: str) -> None:
    """An executable's head, a text with the words `token` and `password` but no value, and
    lines that start like a dump's but are not one."""
    with open(sys.executable, "rb") as f:
        binary = f.read(4096)
    prose = b"the token expired; please enter your password again\nretry=3 ok\n"
    for data in (binary, prose):
        text = dump(tool, data)
        assert red(text) == text
    lines = (b"deadbeef: 12 items processed\n"
             b"0001  ab cd  not a dump line\n"
             b"2026  12 06 10:00 cron started\n")
    assert red(lines) == lines


@needs
def test_each_line_parses_as_its_program_printed_it() -> None:
    data = bytes(range(256)) + b"  leading and trailing blanks  "
    for tool in DUMPERS:
        lines = [ln for ln in dump(tool, data).split(b"\n") if ln and b" " in ln.strip()]
        parsed = [parse(ln) for ln in lines]
        assert all(p is not None for p in parsed), (tool, lines[[
            p is None for p in parsed].index(True)])
        assert b"".join(p.data for p in parsed if p is not None) == data, tool


@needs
def test_both_scans_agree() -> None:
    text = (dump("xxd", f"Authorization: Bearer {BEARER}\r\n".encode())
            + dump("hexdump -C", f"password={PASSWORD}\n".encode()))
    out, _ = red_both(text.decode())  # the same from Hyperscan's pass and the finds
    assert not leaked(out.encode(), BEARER) and not leaked(out.encode(), PASSWORD)


@needs
@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=40), st.binary(max_size=40), st.sampled_from(sorted(DUMPERS)))
def test_a_token_anywhere_in_binary_data(before: bytes, after: bytes, tool: str) -> None:
    """Wherever the token falls on the dump's lines, between whatever bytes."""
    data = before + b" token=" + TOKEN.encode() + b" " + after
    out = red(dump(tool, data))
    assert not leaked(out, TOKEN), (tool, leaked(out, TOKEN))


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_a_real_curl_trace_recorded(tmp_path: Path) -> None:
    """`curl --trace -` (hex and characters, 16 bytes a line) of a request with a Bearer
    token and a form body's password, recorded with `rage run` and reported."""
    from tests.redact_helpers import member, record_script, served_script

    script = served_script(403, '''
        token, password = open(sys.argv[1]).read().split()
        subprocess.run(["curl", "-s", "--trace", "-", "-o", "/dev/null",
                        "-H", "Authorization: Bearer " + token,
                        "-d", "user=alice&password=" + password, url + "/login"], check=True)
        sys.exit(4)
    ''')
    proc, raw, out = record_script(tmp_path, script, f"{BEARER} {PASSWORD}")
    assert proc.returncode == 4, proc.stderr
    assert BEARER[:6].encode().hex(" ") in proc.stdout  # curl showed it, in hex
    stdout = member(out, "run/stdout.log").encode()
    assert b"=> Send header" in stdout and b"<= Recv header" in stdout
    assert not leaked(stdout, BEARER) and not leaked(stdout, PASSWORD)
    assert not leaked(raw, BEARER) and not leaked(raw, PASSWORD)
    assert b"48 54 54 50 2f 31 2e 30 20 34 30 33 20 46 6f 72 HTTP/1.0 403 For" in stdout


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("xxd") is None,
                    reason="curl or xxd is not installed")
def test_the_corpus_dumps_are_the_real_programs(tmp_path: Path) -> None:
    """The corpus renders its hex-dump contexts with ports of xxd and of curl's dump in hex
    mode: byte for byte what the programs print, for every byte value and a short line."""
    from tests.corpus.contexts import curl_trace_hex, xxd

    data = bytes(range(256)) + b"Authorization: Bearer x\r\n"
    for chunk in (data, data[:7], data[:16], data[:17]):
        assert xxd(chunk) == dump("xxd", chunk)
    body = tmp_path / "body"
    body.write_bytes(data)
    with http_server(204) as url:
        trace = subprocess.run(
            ["curl", "-s", "--trace", "-", "-o", "/dev/null", "--data-binary", f"@{body}", url],
            check=True, capture_output=True).stdout
    assert curl_trace_hex(data) in trace


def _kernel_refuses_capture() -> str | None:
    """Why the kernel (or the sandbox around it) refuses a packet socket, or None."""
    import socket

    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close()
    except OSError as e:
        return f"a packet socket: {e.strerror}"
    return None


def _tcpdump_of_a_request(token: str) -> bytes:
    """What real `tcpdump -X` prints of an HTTP request on the loopback carrying ``token``.
    Skips where tcpdump is not installed, or cannot capture for a reason that is not a bug
    here (not root, or the kernel refuses packet sockets); a root that can open a packet
    socket and still fails to capture is a failure."""
    import os
    import time

    for tool in ("tcpdump", "curl"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (.ci/run installs it)")
    with http_server(204) as url, subprocess.Popen(
            ["tcpdump", "-i", "lo", "-X", "-n", "-l", "-c", "1",
             f"tcp dst port {url.rsplit(':', 1)[1]} and tcp[tcpflags] & tcp-push != 0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE) as cap:
        assert cap.stderr is not None
        said = [cap.stderr.readline() for _ in range(2)]  # "listening on lo, ..."
        if not any(b"listening" in line for line in said):
            cap.kill()
            _, rest = cap.communicate()
            why = b"".join(said).decode(errors="replace").strip() + rest.decode(errors="replace")
            if os.geteuid() != 0:
                pytest.skip(f"tcpdump cannot capture as a user who is not root: {why}")
            if (refused := _kernel_refuses_capture()) is not None:
                pytest.skip(f"the kernel refuses packet capture here ({refused}): {why}")
            pytest.fail(f"tcpdump is installed and we are root, yet it cannot capture: {why}")
        time.sleep(0.2)  # "listening" is printed just before the capture starts
        subprocess.run(["curl", "-s", "-o", "/dev/null", "-H",
                        f"Authorization: Bearer {token}", url + "/"], check=True)
        out, _ = cap.communicate(timeout=10)
    return out


def test_a_real_tcpdump_of_a_request() -> None:
    out = _tcpdump_of_a_request(BEARER)
    assert BEARER[:6].encode().hex()[:4].encode() in out  # tcpdump showed it
    assert "Authorization:.Bearer." in shown(out)[1]  # tcpdump shows a blank as `.`
    got = red(out)
    assert not leaked(got, BEARER), leaked(got, BEARER)
    assert got.count(b"\n") == out.count(b"\n") and b"0x0000:  4500" in got


@needs
def test_a_stream_never_parts_a_dump() -> None:
    """Every cut of a stream between a dump's lines gives the output of the whole text: a
    block never ends inside a run of dump lines (held back to the run's start), so a
    secret's bytes are decoded together."""
    data = b"x" * 150 + f" token={TOKEN} ".encode() + b"y" * 150
    text = b"log before\n" * 5 + dump("xxd", data) + b"log after\n" * 5
    whole = red(text)
    assert not leaked(whole, TOKEN)
    for cut in [i + 1 for i, c in enumerate(text) if c == 10][:-1]:
        r = Redactor(home="/home/alice", user="alice", hostname="laptop")
        out = b"".join(r.stream([text[:cut], text[cut:]], block=cut, workers=0))
        assert out == whole, cut


@needs
def test_a_text_that_starts_within_a_dump() -> None:
    """A block of a long dump, or a dump from an offset (`xxd -s`), holds no line at an
    offset ending in 0000 (what the native scan looks for): its first line tells."""
    data = b"z" * 300 + f" password={PASSWORD}\n".encode()
    text = subprocess.run(["xxd", "-s", "0x100"], input=data, capture_output=True,
                          check=True).stdout
    assert not text.startswith(b"00000000") and b"0000: " not in text
    assert not leaked(red(text), PASSWORD)
