"""The Hyperscan scan (rage.redact.native, the `fast` extra) against the pure-Python scan.

Both must redact every text the same: the native database encodes the key shapes the
pure-Python scan tests in Python, so a shape compiled wrongly, or a Vectorscan bug, shows
up here as a difference. Texts are spliced from the pieces the shapes are made of (secret
words in every case, separators, quotes, blanks, `--`, `<`, `setenv`, netrc and SQL words,
password prompts, catalogue prefixes, names, URLs), where a difference is most likely.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rage.redact import Redactor
from rage.redact.catalogue import compiled_catalogue
from rage.redact.native import available

pytestmark = pytest.mark.skipif(not available(), reason="hyperscan (the fast extra) is absent")

NAMES = dict(home="/home/alice", user="alice", hostname="alice-laptop")
WORDS = ["token", "TOKEN", "Token", "secret", "password", "passwd", "PASSWORD", "pwd", "key",
         "api_key", "apiKey", "auth", "Authorization", "cookie", "Set-Cookie", "credential",
         "session", "signature", "bearer", "Bearer", "dsn", "salt", "pass", "psk", "GITHUB_PAT",
         "pat", "sig", "pin", "DB_PIN", "x-api-key", "value", "val", "login", "machine",
         "account", "identified by", "IDENTIFIED BY", "setenv", "set -x", "set -gx", "export",
         "/home/alice", "/home/bob", "alice", "alice-laptop", "/Users/carol", "https://",
         "ftp://", "@", "git@", "user:pw@", "asyncio", "cio",
         # a password prompt's words (rage.redact.patterns.PROMPT_KEY)
         "Password for ", "password for ", "passphrase for key ", "Enter PEM pass phrase",
         "pass phrase for ", "Password (again)", "passcode of ", "[sudo] ", "Enter ",
         "'https://bob@host'", "user bob"]
SEPS = ["=", ":", ": ", " = ", "==", "=>", ".=", "?=", ":=", "+=", ",", ">", "<", "\\", '"',
        "'", " ", "  ", "\t", "--", "-", "_", ".", "[", "]", "(", ")", "{", "}", "\n", '\\"',
        "\\n", "\r\n", "&", ";", "/", "\x1b[32m", "\x1b[0m", "\x1b[K"]
TOKENS = ["abc", "hunter2", "0000000000000000", "x" * 20, "AbC123xyZ987qwe456",
          "ghp_" + "a" * 36, "AKIA" + "B" * 16, "xoxb-1234567890-abcdefghij", "sk-" + "c" * 48,
          "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_abcdef", "12", "true", "***"]
PREFIXES = sorted({p.decode("latin-1") for f in compiled_catalogue() for p in f.prefixes})
TAIL = st.text(alphabet="abcXYZ0189_-", max_size=50)
PIECE = st.one_of(st.sampled_from(WORDS), st.sampled_from(SEPS), st.sampled_from(TOKENS),
                  st.builds(str.__add__, st.sampled_from(PREFIXES), TAIL),
                  st.integers(1, 60).map(lambda n: " " * n))
TEXT = st.lists(PIECE, min_size=1, max_size=16).map("".join)


def _pair() -> tuple[Redactor, Redactor]:
    fast = Redactor(**NAMES)  # type: ignore[arg-type]
    fast.build()
    os.environ["RAGE_NATIVE_SCAN"] = "0"  # read when a redactor builds
    try:
        slow = Redactor(**NAMES)  # type: ignore[arg-type]
        slow.build()
    finally:
        del os.environ["RAGE_NATIVE_SCAN"]
    assert fast._scan.native is not None and slow._scan.native is None
    return fast, slow


FAST, SLOW = _pair() if available() else (None, None)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT)
def test_native_scan_redacts_as_the_python_scan(text: str) -> None:
    assert FAST is not None and SLOW is not None
    assert FAST.text(text) == SLOW.text(text)


@pytest.mark.parametrize("text", [
    # both nearby shapes on one line: the option's `no` (not an option after `$`) must not
    # stop the word's test (found by the property above)
    "$1$-pass tokentokenAbC123xyZ987qwe456",
    "x-p Zq8Lr2Vx9Kp4Tn6W is the password",
    " " * 39 + "--token 0000000000000000",  # Vectorscan misses this as one alternation
    "alice was on laptop in /home/alice/src\n0000000000000 --token 0000000000000000 ",
    "  File \"/usr/lib/python3.11/asyncio/base_events.py\", line 653, in run",
    "machine h login bob password hunter22",
    "password hunter22",
    "CREATE USER app WITH PASSWORD 'hunter22';",
    "the password reset for bob expired; bearer of bad news",
    "Authorization: Bearer abcdefgh12345",
    "setenv GITHUB_TOKEN abcdef123456",
    "<add key=\"ClearTextPassword\" value=\"hunter22\"/>",
    # the user's name after their home's parent: the home's match takes it, unless a name
    # byte stands before the home or after the name (then the name has its own start)
    "open /home/alice/src and /home/alice, by alice at /tmp/alice",
    "x/home/alice/src _/home/alice é/home/alice ./home/alice home/alice e/alice",
    "/home/alice~/x /home/alice+y /home/alice.bak /home/alice." + "a" * 70 + " /Users/alice",
    # blanks before the separator: found from the blanks, not from the word
    "db_password" + " " * 40 + "= hunter22",
    '"api_token"\t\t:  "abc123def456"',
    "GITHUB_PAT   .= ghp_x; x_psk ?= y; session_key    value = hunter22",
    # names longer than run_starts looks back (66 bytes) holding several secret words: the
    # reference scan gives each word's starts, so the native one must too (found by a
    # differential run: the second differed before, the first with one start per shape)
    " " * 47 + ":APA91bbXbYbZ9aX_1X8_c9-__a818189c0cY_X_-PATAbC123xyZ987qwe456ODYX-c8_aZZbZZ___X"
    "-90-bc_8Z8-9cookie" + " " * 57 + "==trueAKIA" + "B" * 16,
    "MjcX_b-cYZZXYXbZZ_0a18Y980_a8-1-9Za_8ZcY1Z=>git@" + " " * 41 + "}} value = AbC123xyZ987"
    "qwe456hunter2" + "a_b-c.d" * 15 + "{cookieeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_abcdef"
    "ghp_" + "a" * 36 + "psk--.=&\\",
])
def test_known_shapes_agree(text: str) -> None:
    assert FAST is not None and SLOW is not None
    assert FAST.text(text) == SLOW.text(text)


def test_prose_costs_no_starts() -> None:
    """Secret words in prose give the native scan no start: the log of issue 10."""
    assert FAST is not None
    line = b"2026-12-02T10:00:00Z INFO user session token refreshed password reset key lookup\n"
    starts: set[int] = set()
    FAST._scan.native.starts(line * 100, starts)
    assert starts == set()
    starts.clear()
    FAST._scan.native.starts(b"retry token=abc123def456\n", starts)
    assert starts == {6}  # the key; not the line, whose `key: value` it cannot begin
    starts.clear()
    FAST._scan.native.starts(b"x\n  - token: abc123def456\n", starts)
    assert starts == {2, 6}  # the line (YAML's `- key: value`) and the key


def test_report_redacts_with_the_native_scan_in_a_real_process(tmp_path: object) -> None:
    """`rage redact` in a fresh process (the database compiled there) removes a token in a
    key shape and keeps the prose."""
    text = "password reset ok\ntoken=ghp_" + "a" * 36 + "\n"
    out = subprocess.run([sys.executable, "-m", "rage", "redact", "-"], input=text.encode(),
                         capture_output=True, check=True).stdout.decode()
    assert "password reset ok" in out and "ghp_" not in out


def test_a_forked_child_redacts_while_a_thread_of_the_parent_is_scanning() -> None:
    """The workers of a large report are forked while a thread may be inside a scan (the
    collectors run beside the redaction): the child gets a fresh lock, not one held
    forever by a thread that does not exist there."""
    import threading
    import time

    assert FAST is not None
    guard = FAST._scan.native._guard
    held, release = threading.Event(), threading.Event()

    def scanning() -> None:
        with guard.lock:  # what a scan in another thread holds
            held.set()
            release.wait(10)

    t = threading.Thread(target=scanning)
    t.start()
    held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: redact, then leave at once
            ok = "ghp_" not in FAST.text("token=ghp_" + "a" * 36)
            os._exit(0 if ok else 1)
        deadline = time.monotonic() + 20
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        if done[0] == 0:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung on the parent's scan lock")
        assert os.waitstatus_to_exitcode(done[1]) == 0
    finally:
        release.set()
        t.join()


def test_a_broken_hyperscan_falls_back_to_the_python_scan_with_one_warning(
        tmp_path: Any) -> None:
    """An install that imports but cannot compile (a wheel for another CPU, a broken
    build; here a package of that name whose compile fails, first on PYTHONPATH): `rage
    redact` still redacts, with the pure-Python scan, and says why once."""
    fake = tmp_path / "hyperscan"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "HS_MODE_BLOCK = HS_FLAG_CASELESS = HS_FLAG_SOM_LEFTMOST = HS_FLAG_MULTILINE = 1\n"
        "HS_FLAG_SINGLEMATCH = 1\n"
        "class Database:\n"
        "    def __init__(self, **kw):\n        pass\n"
        "    def compile(self, **kw):\n        raise RuntimeError('no SIMD here')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    text = "token=ghp_" + "a" * 36 + "\npassword reset ok\n" * 3
    r = subprocess.run([sys.executable, "-m", "rage", "redact", "-"], input=text.encode(),
                       capture_output=True, env=env, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert b"ghp_" not in r.stdout and b"password reset ok" in r.stdout
    warnings = [ln for ln in r.stderr.decode().splitlines() if "hyperscan" in ln]
    assert len(warnings) == 1 and "no SIMD here" in warnings[0], r.stderr


def test_markup_and_dashes_cost_no_starts() -> None:
    """`<` and `--` start a key only when a secret word follows in the same identifier: an
    HTML log or a line of dashes gives the native scan nothing to do in Python."""
    assert FAST is not None
    text = b'<div class="row"><span>text</span><td>--verbose</td>\n' + b"-" * 80 + b"\n"
    starts: set[int] = set()
    FAST._scan.native.starts(text * 100, starts)
    assert starts == set()
    FAST._scan.native.starts(b"x <db_password>hunter2</db_password> --api-token abc\n", starts)
    assert {2, 37} <= starts  # the identifiers after `<` and `--`


def test_prefixes_inside_words_and_dates_call_no_python() -> None:
    """A catalogue prefix that is a word (`cio` of crates.io tokens) inside another word
    (every `asyncio` of a Python traceback), dates and blanks before nothing: Hyperscan
    reports no hit at all, where each used to be a call into Python that found nothing."""
    assert FAST is not None
    native = FAST._scan.native
    text = (b'  File "/usr/lib/python3.11/asyncio/base_events.py", line 653, in run\n'
            b"2026-12-02T10:05:33.005Z INFO user session token auth key lookup  ok\n") * 50
    hits: list[int] = []
    with native._guard.lock:
        native._db.scan(text, match_event_handler=lambda i, *_: hits.append(i))
    # (but once a scan for a multi-line rule's needle: `token`, that pass is needed)
    multi = [i for i in hits if native._actions[i] == ((9, 0, None),)]
    assert [i for i in hits if i not in multi] == [] and len(multi) == len(set(multi))
    starts: set[int] = set()
    native.starts(b"crates cio" + b"a" * 32 + b" asyncio", starts, formats=starts)
    assert starts == {7}  # the prefix at a word's start is still reported
    # the user's own home: one hit, at `/home/`, not a second at the name inside it
    paths = b'  File "/home/alice/src/tool/main.py", line 12\n' * 50
    hits.clear()
    with native._guard.lock:
        native._db.scan(paths, match_event_handler=lambda i, *_: hits.append(i))
    assert len(hits) == 50


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["-----BEGIN", "-----BEGI", "----BEGIN", "--", "BEGIN",
                                 "x" * 1000, "\n", "-" * 7]), max_size=40),
       st.integers(0, 8), st.data())
def test_private_key_begins_are_found_as_bytes_find_finds_them(
        pieces: list[str], scale: int, data: st.DataObject) -> None:
    """The plan's search for key blocks (Hyperscan on large buffers) says what find says."""
    from rage.redact import patterns as P
    from rage.redact.engine import _NATIVE_BEGINS, _begins

    buf = "".join(pieces).encode()
    if scale and buf:  # most examples past the size where Hyperscan searches
        buf *= -(-_NATIVE_BEGINS // len(buf)) + scale
    begin = _begins(buf)
    for _ in range(20):
        a = data.draw(st.integers(0, len(buf) + 2))
        b = data.draw(st.integers(a, len(buf) + 12))
        assert begin(a, b) == buf.find(P.PRIVATE_KEY_BEGIN, a, b), (a, b)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["eyJ", "Bearer", "bearer", ": |", ": >", "name",
                                 "kind: Secret", "apiVersion:", "Private-Lines:", "\n",
                                 "x" * 3000 + "\n", "ab"]), max_size=30),
       st.integers(0, 40), st.data())
def test_hold_back_cuts_where_the_finds_cut(pieces: list[str], scale: int,
                                            data: st.DataObject) -> None:
    """The stream's cut before a multi-line opener (one Hyperscan pass over the last SPAN
    bytes) is where a find per opener puts it."""
    from rage.redact import multiline

    buf = "".join(pieces).encode() * (1 + scale)
    limit = data.draw(st.integers(0, len(buf)))
    lo = max(0, limit - multiline.SPAN)
    first = min((i for o in multiline._OPENERS if (i := buf.find(o, lo, limit)) >= 0),
                default=-1)
    expected = limit if first < 0 else buf.rfind(b"\n", 0, first) + 1
    assert multiline.hold_back(buf, limit) == expected
