"""The redaction engine: planted secrets never survive, benign look-alikes always do."""

from __future__ import annotations

import os
import random
import stat
import string
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rage.errors import ConfigError
from rage.redact import Redactor, register_literal, scrub_literals
from rage.redact.normalize import needs_normalizing, normalize

ALNUM = string.ascii_letters + string.digits
UPPER_NUM = string.ascii_uppercase + string.digits
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def chars(alphabet: str, n: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=n, max_size=n)


# (kind, strategy producing (planted text, the distinctive part that must vanish))
def _simple(prefix: str, body: st.SearchStrategy[str]) -> st.SearchStrategy[tuple[str, str]]:
    return body.map(lambda b: (prefix + b, prefix + b))


def _pem(kind: str) -> st.SearchStrategy[tuple[str, str]]:
    def build(lines: list[str]) -> tuple[str, str]:
        body = "\n".join(lines)
        return (f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----",
                lines[0])
    return st.lists(chars(B64, 64), min_size=1, max_size=8).map(build)


def _jwt() -> st.SearchStrategy[tuple[str, str]]:
    def build(parts: tuple[str, str, str]) -> tuple[str, str]:
        h, p, s = parts
        tok = f"eyJ{h}.eyJ{p}.{s}"
        return tok, tok
    return st.tuples(chars(URLSAFE, 20), chars(URLSAFE, 40), chars(URLSAFE, 43)).map(build)


SECRETS: dict[str, st.SearchStrategy[tuple[str, str]]] = {
    "aws-access-key": _simple("AKIA", chars(UPPER_NUM, 16)),
    "github-token": st.one_of(_simple("ghp_", chars(ALNUM, 36)),
                              _simple("github_pat_", chars(ALNUM + "_", 82))),
    "gitlab-token": _simple("glpat-", chars(URLSAFE, 20)),
    "slack-token": _simple("xoxb-", chars(string.digits + "-", 12).map(
        lambda d: d + "-aB3dE5gH7jK9mN1pQ3sT5vW")),
    "stripe-key": _simple("sk_live_", chars(ALNUM, 24)),
    "npm-token": _simple("npm_", chars(ALNUM, 36)),
    "pypi-token": _simple("pypi-AgEIcHlwaS5vcmc", chars(URLSAFE, 60)),
    "openai-key": st.one_of(_simple("sk-proj-", chars(URLSAFE, 48)),
                            _simple("sk-", chars(ALNUM, 48))),
    "anthropic-key": _simple("sk-ant-api03-", chars(URLSAFE, 93).map(lambda b: b + "AA")),
    "google-api-key": _simple("AIza", chars(URLSAFE, 35)),
    "jwt": _jwt(),
    "private-key": st.one_of(_pem("RSA "), _pem("OPENSSH "), _pem(""), _pem("EC "),
                             _pem("PGP ").map(lambda t: (
                                 t[0].replace("PRIVATE KEY-----", "PRIVATE KEY BLOCK-----"),
                                 t[1]))),
    "url-credentials": chars(ALNUM + "!$*", 12).map(
        lambda pw: (f"https://deploy:{pw}@git.example.com/repo.git", pw)),
    "auth-header": chars(URLSAFE + ".", 32).map(
        lambda t: (f"\nAuthorization: Bearer {t}\n", t)),
    "cookie": chars(ALNUM, 24).map(lambda t: (f"\nCookie: sid={t}; theme=dark\n", t)),
    "secret-field": st.one_of(
        chars(ALNUM, 16).map(lambda v: (f"password={v}", v)),
        chars(ALNUM, 16).map(lambda v: (f'"api_key": "{v}"', v)),
        chars(ALNUM, 16).map(lambda v: (f"\n  client_secret: {v}\n", v)),
        chars(ALNUM, 16).map(lambda v: (f"--token {v}", v)),
    ),
}
KINDS = sorted(SECRETS)

# random surroundings: letters, digits, spaces, punctuation, newlines
NOISE = st.text(alphabet=ALNUM + " \t\n.,;:!?()[]{}<>/\\|#%&*+=-_\"'", max_size=80)
# for exact counts: nothing that can form `key=`/`key:` or a URL around the planted secret
QUIET = st.text(alphabet=string.ascii_letters + string.digits + " \n.,", max_size=80)
SEP = st.sampled_from([" ", "\n", "\t", " (", ") ", ", "])


def plain() -> Redactor:
    return Redactor(pseudonymize=False)


@st.composite
def planted(draw: st.DrawFn, noise: st.SearchStrategy[str] = NOISE
            ) -> tuple[str, str, list[str]]:
    """Text with 1-3 secrets of random kinds; returns (text, kind of each, their parts)."""
    pieces: list[str] = [draw(noise)]
    kinds: list[str] = []
    parts: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(KINDS))
        text, part = draw(SECRETS[kind])
        pieces += [draw(SEP), text, draw(SEP), draw(noise)]
        kinds.append(kind)
        parts.append(part)
    return "".join(pieces), ",".join(kinds), parts


@SETTINGS
@given(planted())
def test_planted_secret_never_survives_text(case: tuple[str, str, list[str]]) -> None:
    text, _, parts = case
    out = plain().text(text)
    assert_gone(text, out, parts)


def assert_gone(before: str, after: str, parts: list[str]) -> None:
    """Every planted copy is gone (random noise may hold the same characters by chance)."""
    for part in set(parts):
        assert after.count(part) <= before.count(part) - parts.count(part), after


@SETTINGS
@given(planted(QUIET))
def test_counts_match_what_was_planted(case: tuple[str, str, list[str]]) -> None:
    text, kinds, _ = case
    r = plain()
    r.text(text)
    expected: dict[str, int] = {}
    for k in kinds.split(","):
        expected[k] = expected.get(k, 0) + 1
    assert r.counts == expected


def _chunks(data: bytes, sizes: list[int]) -> Iterator[bytes]:
    i = 0
    for n in sizes:
        if i >= len(data):
            break
        yield data[i:i + n]
        i += n
    if i < len(data):
        yield data[i:]


@SETTINGS
@given(planted(), st.lists(st.integers(1, 40), min_size=1, max_size=60),
       st.integers(1, 64))
def test_stream_equals_whole_and_catches_straddling_secrets(
        case: tuple[str, str, list[str]], sizes: list[int], block: int) -> None:
    text, _, parts = case
    data = ("alice was on laptop in /home/alice/src\n" + text + "\n/home/bob/x\n").encode()
    whole = Redactor(home="/home/alice", user="alice", hostname="laptop").bytes(data)
    r = Redactor(home="/home/alice", user="alice", hostname="laptop")
    streamed = b"".join(r.stream(_chunks(data, sizes), block=block))
    assert streamed == whole
    assert_gone(data.decode(), streamed.decode(), parts)


BENIGN = [
    "commit 3f2a9c1b7d0e4f5a6b7c8d9e0f1a2b3c4d5e6f70 (HEAD -> main)",
    "digest sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "request 123e4567-e89b-12d3-a456-426614174000 took 12ms",
    "rage 1.4.0rc2 on Python 3.11.9 (main, Apr  6 2024, 17:59:24) [GCC 11.4.0]",
    "GET https://api.example.com/v1/items?page=3&per_page=50 -> 200",
    "ssh://git@github.com/pallets/click.git",
    "git@github.com:pallets/click.git",
    "/usr/lib/python3.11/site-packages/click/core.py",
    "2024-05-01T12:34:56.789+02:00 INFO started",
    'Traceback (most recent call last):\n  File "/opt/app/main.py", line 3, in <module>\n'
    "    main()\nValueError: invalid literal for int() with base 10: 'x'",
    "the monkey=banana keys=1200 tokens: 4096 max_tokens=1500",
    "SSH_AUTH_SOCK=/tmp/ssh-XXXX/agent.42 AUTHOR=Jane",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    "task-sk-learn-tutorial-on-classification-models",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
    "password_reset_enabled=true auth=none session=42",
    "my password is not in this sentence",
    "malice and alicent met at /srv/data",
    "/mnt/data/home/users.txt",
]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_lookalikes_survive_exactly(text: str) -> None:
    r = Redactor(home="/home/alice", user="alice", hostname="laptop")
    assert r.text(text) == text
    assert r.counts == {}


@SETTINGS
@given(st.lists(st.sampled_from(BENIGN), min_size=1, max_size=6), NOISE)
def test_benign_survive_in_any_mix(items: list[str], glue: str) -> None:
    glue = glue.replace("=", " ").replace(":", " ")  # glue must not build `key=` shapes
    text = ("\n" + glue + "\n").join(items)
    assert Redactor(home="/home/alice", user="alice", hostname="laptop").text(text) == text


def test_examples_keep_keys_and_structure() -> None:
    r = Redactor(home="/home/alice", user="alice", hostname="laptop.example.com")
    cases = {
        "git clone https://bob:pa@ss@git.example.com/x.git":
            "git clone https://[REDACTED:url-credentials]@git.example.com/x.git",
        "Authorization: Basic dXNlcjpwYXNz": "Authorization: Basic [REDACTED:auth-header]",
        'curl -H "Cookie: a=1; b=2" https://x':
            'curl -H "Cookie: [REDACTED:cookie]" https://x',
        "Set-Cookie: sid=abc123; Path=/; HttpOnly": "Set-Cookie: [REDACTED:cookie]",
        "X-Api-Key: 0123456789abcdef": "X-Api-Key: [REDACTED:auth-header]",
        '{"password": "hunter22", "user": "x"}':
            '{"password": "[REDACTED:secret-field]", "user": "x"}',
        "  db_password: 'two words'": "  db_password: '[REDACTED:secret-field]'",
        "password: two words here": "password: [REDACTED:secret-field]",
        "mytool --password=abc --token xyz -v":
            "mytool --password=[REDACTED:secret-field] --token [REDACTED:secret-field] -v",
        "GET /cb?code=1&access_token=abcdef&x=2":
            "GET /cb?code=1&access_token=[REDACTED:secret-field]&x=2",
        "monkey=ghp_" + "a" * 36: "monkey=[REDACTED:github-token]",
        "/home/alice/src/x.py by alice@laptop.example.com (LAPTOP) /home/bob/y /home/alice":
            "~/src/x.py by user-1@host-1 (host-1) /home/user-2/y ~",
        "x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\nAAAA\n2024-01-01 next":
            "x [REDACTED:private-key]\n2024-01-01 next",
        '"key": "-----BEGIN RSA PRIVATE KEY-----\\nMIIE\\n-----END RSA PRIVATE KEY-----\\n"':
            '"key": "[REDACTED:private-key]\\n"',
    }
    for src, want in cases.items():
        assert r.text(src) == want, src
    again = r.text("\n".join(cases.values()))
    assert again == "\n".join(cases.values()), "redacting twice changes nothing"


def test_pseudonyms_consistent_and_distinct() -> None:
    r = Redactor(home="/home/alice", user="alice", hostname="laptop")
    a = r.text("/home/bob/a /home/carol/b /home/bob/c alice")
    assert a == "/home/user-2/a /home/user-3/b /home/user-2/c user-1"
    assert r.pseudonym_map() == {"/home/alice": "~", "laptop": "host-1", "alice": "user-1",
                                 "bob": "user-2", "carol": "user-3"}
    other = Redactor(home="/home/alice", user="alice", hostname="laptop")
    assert other.text("/home/carol/b") == "/home/user-2/b", "tables are per Redactor"


def test_common_and_short_names_are_not_pseudonymised() -> None:
    r = Redactor(home="/root", user="root", hostname="vm")
    assert r.text("root cause in /root/app and /rootfs; vm ok") == \
        "root cause in ~/app and /rootfs; vm ok"
    off = Redactor(pseudonymize=False, home="/home/alice", user="alice", hostname="laptop")
    assert off.text("/home/alice alice laptop") == "/home/alice alice laptop"


@SETTINGS
@given(st.binary(max_size=300))
def test_bytes_roundtrip_without_secrets(data: bytes) -> None:
    r = Redactor(pseudonymize=False)
    out = r.bytes(data)
    if not r.counts:  # unchanged, but for what the terminal did (escapes, redraws)
        assert out == normalize(data)
        if not needs_normalizing(data):
            assert out == data


def test_non_utf8_kept_around_secret() -> None:
    data = b"\xff\xfe bin \x80 token=abcdef12 \xc3(\n"
    out = Redactor(pseudonymize=False).bytes(data)
    assert out == b"\xff\xfe bin \x80 token=[REDACTED:secret-field] \xc3(\n"
    s = data.decode("utf-8", "surrogateescape")
    assert Redactor(pseudonymize=False).text(s).encode("utf-8", "surrogateescape") == out


def test_literals_registry_and_fast_scrub() -> None:
    secret = "Zq9-literal-" + os.urandom(6).hex()
    assert scrub_literals(f"x {secret} y").count(secret) in (0, 1)
    register_literal(secret)
    register_literal("abc")  # too short: ignored
    assert scrub_literals(f"x {secret} y {secret}") == \
        "x [REDACTED:literal] y [REDACTED:literal]"
    assert scrub_literals("abc abc") == "abc abc"
    r = Redactor(pseudonymize=False)
    assert r.text(f"k={secret[:4]} v:{secret}.") == f"k={secret[:4]} v:[REDACTED:literal]."
    later = "Late-" + os.urandom(6).hex()
    register_literal(later)  # registered after the Redactor was built: still applies
    assert r.text(later) == "[REDACTED:literal]"
    own = Redactor(literals=["sekrit-value"], pseudonymize=False)
    assert own.text("a sekrit-value b") == "a [REDACTED:literal] b"
    assert own.counts == {"literal": 1}


def test_custom_patterns_and_invalid_ones() -> None:
    r = Redactor(patterns=[r"INTERNAL-\d{6}"], pseudonymize=False)
    assert r.text("ticket INTERNAL-123456 ok") == "ticket [REDACTED:custom] ok"
    assert r.counts == {"custom": 1}
    with pytest.raises(ConfigError, match="invalid redact pattern"):
        Redactor(patterns=["(unclosed"])
    with pytest.raises(ConfigError, match="empty string"):
        Redactor(patterns=["x*"])


def test_data_recurses_and_redacts_secret_fields() -> None:
    r = Redactor(home="/home/alice", user="alice", hostname="laptop")
    obj = {
        "/home/alice/proj": {"api_key": "abc", "token": None, "password": "", "auth": True},
        "env": {"GITHUB_TOKEN": "ghp_" + "x" * 36, "PATH": "/home/alice/bin:/usr/bin",
                "SSH_AUTH_SOCK": "/tmp/agent"},
        "argv": ("tool", "--password", "pw", "https://u:p@h/"),
        "n": 3, "credentials": {"user": "alice", "secret": ["a", "b"]},
    }
    out = r.data(obj)
    assert out == {
        "~/proj": {"api_key": "[REDACTED:secret-field]", "token": None, "password": "",
                   "auth": True},
        "env": {"GITHUB_TOKEN": "[REDACTED:secret-field]", "PATH": "~/bin:/usr/bin",
                "SSH_AUTH_SOCK": "/tmp/agent"},
        "argv": ("tool", "--password", "pw", "https://[REDACTED:url-credentials]@h/"),
        "n": 3, "credentials": {"user": "user-1", "secret": "[REDACTED:secret-field]"},
    }
    assert r.counts["secret-field"] == 3


def test_file_is_private_and_streams(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.log", tmp_path / "out.log"
    key = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(["A" * 64] * 3000) + \
        "\n-----END RSA PRIVATE KEY-----\n"
    filler = "".join(f"line {i} nothing to see\n" for i in range(60000))
    src.write_text(filler + key + filler + "token=abcdef123\n")
    Redactor(pseudonymize=False).file(src, dst)
    assert stat.S_IMODE(os.stat(dst).st_mode) == 0o600
    out = dst.read_text()
    assert out == filler + "[REDACTED:private-key]\n" + filler + "token=[REDACTED:secret-field]\n"


def test_memory_bounded_on_large_stream() -> None:
    quiet = b"2024-05-01T12:00:00Z INFO [core] worker 7 finished batch 1923 in 0.83s\n" * 19
    line = quiet + b"2024-05-01T12:00:01Z DEBUG [net] retry with token=abcdef123456\n"
    n_lines = 50_000_000 // len(line)

    def gen() -> Iterator[bytes]:
        for _ in range(n_lines // 1000):
            yield line * 1000

    r = Redactor(home="/home/alice", user="alice", hostname="laptop")
    tracemalloc.start()
    try:
        total = sum(len(out) for out in r.stream(gen()))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total > 40_000_000
    assert r.counts["secret-field"] == n_lines // 1000 * 1000
    assert peak < 16 * 1024 * 1024, peak


def test_scrub_literals_is_cheap_without_registrations() -> None:
    # in a fresh interpreter nothing is registered: the text object comes back as is
    code = ("from rage.redact import scrub_literals\n"
            "s = 'x' * 1000\nassert scrub_literals(s) is s\nprint('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "ok"


def _random_log(rnd: random.Random, n: int) -> Callable[[], str]:
    return lambda: "".join(rnd.choice(BENIGN) + "\n" for _ in range(n))


def test_stream_with_large_blocks_and_keys_across_boundaries() -> None:
    rnd = random.Random(3)
    pieces = []
    for i in range(40):
        pieces.append(_random_log(rnd, 300)())
        pieces.append(f"-----BEGIN EC PRIVATE KEY-----\n{'B' * 64}\n{'C' * (i * 997 % 64)}\n"
                      "-----END EC PRIVATE KEY-----\n")
    data = "".join(pieces).encode()
    whole = plain().bytes(data)
    r = plain()
    sizes = [rnd.randint(1, 70000) for _ in range(200)]
    assert b"".join(r.stream(_chunks(data, sizes), block=50000)) == whole
    assert r.counts == {"private-key": 40}
    assert b"BBBB" not in whole


@pytest.mark.parametrize("opener", [
    "eyJ" + "0" * 20 + ".eyJ" + "0" * 40 + "." + "0" * 43,  # a JWT: the rest wrapped below
    "Authorization: Bearer " + "Tk5Rb" * 10,
])
def test_a_wrapped_value_is_redacted_whole_when_its_line_starts_a_block(opener: str) -> None:
    """A stream cut right before the line of an opener waits for the lines after it: the
    wrapped rest of a token is redacted as in one piece, wherever the chunks end."""
    data = f"first line\n {opener}\n0000000000000\nlast /home/bob/x\n".encode()
    whole = Redactor(home="/home/alice", user="alice", hostname="laptop").bytes(data)
    assert b"0000000000000" not in whole
    for size in range(1, len(data) + 1):
        r = Redactor(home="/home/alice", user="alice", hostname="laptop")
        assert b"".join(r.stream(_chunks(data, [size] * len(data)), block=1)) == whole, size
