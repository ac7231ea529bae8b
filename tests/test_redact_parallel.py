"""Parallel streams and the anchored scan: same output as the plain, in-process engine."""

from __future__ import annotations

import os
import random
import signal
import string
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rage.redact import Redactor, register_literal
from rage.redact_parallel import redact_stream

NAMES = dict(home="/home/alice", user="alice", hostname="alice-laptop.example.com")
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _log(seed: int, lines: int) -> bytes:
    """A log with secrets, other people's homes first seen at random places, key blocks."""
    rnd = random.Random(seed)
    people = [f"person{i:02d}" for i in range(40)]
    out: list[str] = []
    for i in range(lines):
        r = rnd.random()
        tok = "".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(36))
        if r < 0.05:
            out.append(f"{i} open /home/{rnd.choice(people)}/notes.txt by alice")
        elif r < 0.06:
            out.append(f"{i} auth token=ghp_{tok} sk_live_{tok[:24]} AKIA{tok[:16].upper()}")
        elif r < 0.07:
            out.append(f"{i} fetch https://bob:{tok[:10]}@git.example.com/x mail a@b.org")
        elif r < 0.072:
            out.append("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join([tok] * 30)
                       + "\n-----END RSA PRIVATE KEY-----")
        elif r < 0.08:
            out.append(f"{i} ALICE-LAPTOP said INTERNAL-{rnd.randint(100000, 999999)} ok")
        else:
            out.append(f"{i} worker_{i % 7} finished batch_{i} in {rnd.random():.3f}s")
    return ("\n".join(out) + "\n").encode()


def _chunks(data: bytes, size: int) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i:i + size]


def _serial(data: bytes, **kw: object) -> tuple[bytes, Redactor]:
    r = Redactor(**NAMES, **kw)  # type: ignore[arg-type]
    return b"".join(r.stream(_chunks(data, 65536), workers=1)), r


@pytest.mark.parametrize("patterns", [(), (r"INTERNAL-\d{6}", r"person\d\d")])
def test_parallel_equals_in_process(patterns: tuple[str, ...]) -> None:
    data = _log(1, 60000)
    want, ref = _serial(data, patterns=patterns)
    r = Redactor(**NAMES, patterns=patterns)  # type: ignore[arg-type]
    got = b"".join(redact_stream(r, _chunks(data, 50000), block=65536, workers=2,
                                 min_parallel=200_000, piece=100_000))
    assert got == want
    assert r.counts == ref.counts
    assert r.pseudonym_map() == ref.pseudonym_map()
    assert r.counts["private-key"] > 5 and r.counts["user"] > 100
    assert b"person" not in got and b"ghp_" not in got
    assert _children() == set(), "workers are reaped"


def _children() -> set[int]:
    pid = os.getpid()
    path = Path(f"/proc/{pid}/task/{pid}/children")
    if not path.exists():
        pytest.skip("no /proc children list")
    return {int(p) for p in path.read_text().split()}


def test_killed_worker_costs_only_speed() -> None:
    data = _log(2, 40000)
    want, ref = _serial(data)
    r = Redactor(**NAMES)  # type: ignore[arg-type]
    it = redact_stream(r, _chunks(data, 30000), block=65536, workers=2, min_parallel=0,
                       piece=60_000)
    got = [next(it)]
    kids = _children()
    assert len(kids) == 2
    os.kill(min(kids), signal.SIGKILL)
    got.extend(it)
    assert b"".join(got) == want
    assert r.counts == ref.counts
    assert _children() == set()


def test_abandoned_stream_reaps_workers() -> None:
    r = Redactor(**NAMES)  # type: ignore[arg-type]
    it = redact_stream(r, _chunks(_log(3, 30000), 30000), block=65536, workers=2,
                       min_parallel=0, piece=60_000)
    next(it)
    assert len(_children()) == 2
    it.close()
    assert _children() == set()


def test_literal_registered_mid_stream_applies_to_later_output() -> None:
    secret = "Mid-" + os.urandom(8).hex()
    lines = [f"line {i} {secret if i % 50 == 0 else 'nothing'}\n" for i in range(40000)]
    data = "".join(lines).encode()
    r = Redactor(**NAMES)  # type: ignore[arg-type]
    it = redact_stream(r, _chunks(data, 20000), block=32768, workers=2, min_parallel=0,
                       piece=40_000)
    first = next(it)
    register_literal(secret)
    rest = b"".join(it)
    assert secret.encode() in first  # before registration: passed through, as in-process
    assert secret.encode() not in rest
    assert rest.count(b"[REDACTED:literal]") == (data.count(secret.encode())
                                                 - first.count(secret.encode()))


def test_file_uses_workers_for_large_input(tmp_path: Path) -> None:
    src, dst = tmp_path / "in.log", tmp_path / "out.log"
    data = _log(4, 250000)  # > PARALLEL_MIN
    assert len(data) > 9 * 1024 * 1024
    src.write_bytes(data)
    r = Redactor(**NAMES)  # type: ignore[arg-type]
    r.file(src, dst)
    want, ref = _serial(data)
    assert dst.read_bytes() == want
    assert r.counts == ref.counts


# the anchored scan (one pass per anchor byte, `@` for URLs) against every plain trigger
PIECES = st.sampled_from([
    "ghp_", "gho_" + "a" * 36, "ghp_" + "B1" * 18, "github_pat_" + "x_" * 12, "sk_live_",
    "sk_test_" + "k" * 16, "rk_live_" + "9" * 20, "npm_" + "n" * 36, "AKIA", "ASIA" + "Q" * 16,
    "ABIA" + "Z9" * 8, "ACCA" + "7" * 16, "xAKIA" + "Q" * 16, "_", "__", "A", "AA", "@", "@@",
    "://", "https://", "ftp://u:p@", "https://hooks.slack.com/services/" + "T0/B1/" * 5,
    "user:pw@host", "a@b.c", "token=", "x_token: ", "/home/bob", "alice", " ", "\n", "-", "=",
    "k_", "m_", "gh", "sk", "npm", "pypi-AgE" + "p" * 50, "eyJ" + "a" * 10 + ".e" + "b" * 9,
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, min_size=1, max_size=40), st.integers(0, 3))
def test_anchored_scan_equals_plain_triggers(parts: list[str], dense: int) -> None:
    # `dense` pads with underscores or A's so the anchors cross their density limit too
    text = "".join(parts) + ("_" * 700 + "A" * 700 if dense == 3 else "_A" * dense * 300)
    fast = Redactor(**NAMES)  # type: ignore[arg-type]
    slow = Redactor(**NAMES)  # type: ignore[arg-type]
    slow.reference_scan = True
    assert fast.text(text) == slow.text(text)
    assert fast.counts == slow.counts
