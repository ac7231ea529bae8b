"""Parallel streams and the anchored scan: same output as the plain, in-process engine."""

from __future__ import annotations

import io
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
from rage.redact.parallel import redact_stream

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


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("patterns", [(), (r"INTERNAL-\d{6}", r"person\d\d")])
def test_parallel_equals_in_process(patterns: tuple[str, ...], depth: int,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The same output, counts and pseudonyms, with one or two pieces in flight per worker
    (each through its own pair of shared slots)."""
    from rage.redact import parallel

    monkeypatch.setattr(parallel, "DEPTH", depth)
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


@pytest.mark.parametrize("slots", [(50_000, 1 << 24), (1 << 23, 50_000), (50_000, 50_000)])
def test_pieces_and_results_larger_than_shared_memory_go_through_the_pipes(
        slots: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of ~100 kB: the slots that are smaller than them are passed over, in either
    direction, and the output is the same, all of it from the workers (a piece the parent
    had to redo, because a worker failed, would come without its frame)."""
    import zlib

    from rage.redact import parallel

    monkeypatch.setattr(parallel, "_IN_SLOT", slots[0])
    monkeypatch.setattr(parallel, "_OUT_SLOT", slots[1])
    data = _log(1, 60000)  # no key block early on, which would hold everything back
    want, ref = _serial(data)
    r = Redactor(**NAMES)  # type: ignore[arg-type]
    pieces = list(parallel.redact_pieces(r, _chunks(data, 50000), block=65536, workers=2,
                                         min_parallel=200_000, piece=100_000,
                                         compress=zlib.compress))
    assert b"".join(out for out, _ in pieces) == want and r.counts == ref.counts
    framed = [(out, frame) for out, frame in pieces if frame is not None]
    # less the first, in-process, and those in flight (DEPTH per worker) when a name was
    # first seen in a worker
    assert len(pieces) > 10 and len(framed) >= len(pieces) - 2 * (1 + parallel.DEPTH)
    assert all(zlib.decompress(frame) == out for out, frame in framed)
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
    # the byte groups (`-`, `/`; `k`, `w` in lower-cased text) and the `J` anchor
    "AIza" + "S" * 35, "J", "yJ", "eyJ", "glpat-" + "g" * 20, "gldt-", "glrt-" + "r_" * 10,
    "xoxb-" + "1" * 10, "xoxe-", "xox", "sk-", "sk-proj-" + "p" * 20, "sk-" + "o" * 32, "pypi-",
    "-", "--", "/", "//", "/Users/carol", "/home/", "/home/alice", "hooks.slack.com/services/",
    "k", "w", "kw", "token", "TOKEN", "Key", "key=", "mykey: ", "Cookie: a=b", "passw", "PWD=",
    "pwd", "--password ", "x-pwd-y=", "Set-Cookie: s=1", "okey", "monkey=", "secret=",
    "Session: ", "signature", "SALT=", "dsn=", "s", "a", "AUTH", "x-auth-token: ", "bearer ",
    "Bearer abcdefgh1234", "Credential", "aws_secret_access_key", "sa", "ss", "alice-laptop",
])
# text that makes every anchor and byte group too common to use: the plain finds run
DENSE = "--/kwsaJ_A" * 2000


@pytest.mark.parametrize("text", ["alice-laptopwhttps://", "alice-mapping://x",
                                  "alice-spinner: x"])
def test_a_name_where_a_shape_was_no_secret_is_still_a_name(text: str) -> None:
    """Hypothesis found it: a scheme's start (`alice-laptopwhttps://`) where a key shape
    matched and was no secret hid the user's name from the reference scan, which tried no
    name there; the native scan, whose start there is a name's only, replaced it."""
    fast = Redactor(**NAMES)  # type: ignore[arg-type]
    slow = Redactor(**NAMES)  # type: ignore[arg-type]
    slow.reference_scan = True
    out = slow.text(text)
    assert out == fast.text(text)
    assert "alice" not in out and out.startswith("user-")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, min_size=1, max_size=40), st.integers(0, 5))
def test_anchored_scan_equals_plain_triggers(parts: list[str], dense: int) -> None:
    # `dense` pads with underscores or A's so the anchors cross their density limit too,
    # or with every anchor and group byte, before or after the pieces
    text = "".join(parts) + ("_" * 700 + "A" * 700 if dense == 3 else "_A" * dense * 300)
    if dense == 4:
        text = DENSE + text
    elif dense == 5:
        text += DENSE
    fast = Redactor(**NAMES)  # type: ignore[arg-type]
    slow = Redactor(**NAMES)  # type: ignore[arg-type]
    slow.reference_scan = True
    assert fast.text(text) == slow.text(text)
    assert fast.counts == slow.counts


def test_size_hint_starts_workers_at_once() -> None:
    """A stream known to be large goes to the workers from its first piece; same output."""
    from rage.redact.parallel import PARALLEL_MIN

    data = _log(5, 60000)  # ~2 MiB: without the hint it would stay in-process
    assert len(data) < PARALLEL_MIN
    want, ref = _serial(data)
    r = Redactor(**NAMES)  # type: ignore[arg-type]
    it = r.stream(_chunks(data, 65536), block=65536, workers=2, size=PARALLEL_MIN)
    got = [next(it)]
    assert len(_children()) == 2
    got.extend(it)
    assert b"".join(got) == want
    assert r.counts == ref.counts
    assert r.pseudonym_map() == ref.pseudonym_map()
    assert _children() == set()
    small = Redactor(**NAMES)  # type: ignore[arg-type]
    it = small.stream(_chunks(data, 65536), block=65536, workers=2, size=len(data))
    assert next(it) and _children() == set()  # a small hint: in-process, as before
    assert b"".join(it) and small.counts == ref.counts


def test_names_numbered_in_the_parent_reach_the_workers() -> None:
    """Other people's homes first seen in one piece are numbered in the parent, and later
    pieces (redacted in workers told the numbers) use the same pseudonyms."""
    people = [f"member{i:02d}" for i in range(30)]
    lines = [f"{i} read /home/{people[(i * 7) % 30]}/f.txt then /home/{people[i % 30]}/g\n"
             for i in range(30000)]
    data = "".join(lines).encode()
    want, ref = _serial(data)
    r = Redactor(**NAMES)  # type: ignore[arg-type]
    got = b"".join(redact_stream(r, _chunks(data, 40000), block=32768, workers=2,
                                 min_parallel=0, piece=50_000))
    assert got == want
    assert r.pseudonym_map() == ref.pseudonym_map()
    assert r.counts == ref.counts == {"user": 60000}


def _mapped_out(data: bytes, tmp_path: Path, **kw: object) -> tuple[bytes, Redactor]:
    """``data`` written to a file, mapped, and redacted by redact_mapped."""
    import mmap

    from rage.redact.parallel import redact_mapped

    path = tmp_path / "mapped.log"
    path.write_bytes(data)
    r = Redactor(**NAMES)  # type: ignore[arg-type]
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        got = b"".join(out for out, _ in redact_mapped(r, mm, **kw))  # type: ignore[arg-type]
    return got, r


@pytest.mark.parametrize("workers", [1, 2])
def test_a_mapped_file_equals_the_stream(workers: int, tmp_path: Path) -> None:
    """Pieces cut from a mapping of the file, not reads joined to a carried line: the same
    output, counts and pseudonyms, in the workers and in-process."""
    data = _log(3, 60000) + b"Authorization: Bearer\n  abcDEF0123456789abcDEF0123456789\n"
    want, ref = _serial(data)
    got, r = _mapped_out(data, tmp_path, block=65536, workers=workers,
                         min_parallel=200_000, piece=100_000)
    assert got == want
    assert r.counts == ref.counts and r.pseudonym_map() == ref.pseudonym_map()
    assert r.counts["private-key"] > 5 and b"ghp_" not in got
    assert _children() == set(), "workers are reaped"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from([
    "x" * 900 + "\n", "token=ghp_" + "a" * 36 + "\n", "password: |\n  hunter2hunter2\n",
    "Authorization: Bearer\n  abcDEF0123456789abcDEF0123456789\n",
    "-----BEGIN RSA PRIVATE KEY-----\n" + "QUJD" * 300 + "\n-----END RSA PRIVATE KEY-----\n",
    "ok /home/alice/x\n", "y" * 5000, "\n"]), min_size=1, max_size=40),
    block=st.sampled_from([512, 1024, 4096]))
def test_mapped_cuts_never_change_the_output(parts: list[str], block: int,
                                             tmp_path: Path) -> None:
    """Wherever a mapped piece ends (a block of a few hundred bytes cuts through multi-line
    values, key blocks and lines longer than the block), the output is the whole text's."""
    data = "".join(parts).encode()
    want = Redactor(**NAMES).bytes(data)  # type: ignore[arg-type]
    got, _ = _mapped_out(data, tmp_path, block=block, workers=1)
    assert got == want


def test_a_lent_output_is_the_streams_and_released_at_the_next_piece(tmp_path: Path) -> None:
    """``lend``: a worker's output comes as a view of its shared memory, not a copy. Read
    while it is held, it is the stream's output, its frame holds it; once the next piece
    is asked for the view is released (the worker writes its next output there)."""
    import mmap

    import zstandard

    from rage.bundle.frames import FrameCompressor
    from rage.redact.parallel import redact_mapped

    data = _log(7, 60000) + b"Authorization: Bearer\n  abcDEF0123456789abcDEF0123456789\n"
    want, ref = _serial(data)
    path = tmp_path / "mapped.log"
    path.write_bytes(data)
    r = Redactor(**NAMES)  # type: ignore[arg-type]
    got: list[bytes] = []
    views: list[memoryview] = []
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for out, frame in redact_mapped(r, mm, block=65536, workers=2, min_parallel=0,
                                        piece=100_000, compress=FrameCompressor(), lend=True):
            for held in views:
                with pytest.raises(ValueError, match="released"):
                    bytes(held)
            got.append(bytes(out))
            if frame is not None:
                reader = zstandard.ZstdDecompressor().stream_reader(
                    io.BytesIO(frame), read_across_frames=True)
                assert reader.read() == got[-1]
            if isinstance(out, memoryview):
                assert frame is not None, "only an output whose frame was made is lent"
                views.append(out)
    assert b"".join(got) == want and r.counts == ref.counts
    assert len(views) > 5, "the workers' outputs were lent"
    assert _children() == set(), "workers are reaped"


def test_a_mapped_line_longer_than_a_segment_equals_the_stream(tmp_path: Path) -> None:
    """A line of 3 MiB is cut into segments that overlap (MAX_SEGMENT): a secret across a
    cut is found in the mapped pieces as in the stream's."""
    from rage.redact import MAX_SEGMENT

    secret = "ghp_" + "Zq7" * 12
    line = ("w " * (MAX_SEGMENT // 2 - 10) + secret + " ") * 3
    data = _log(5, 20000) + line.encode() + b"\n" + _log(6, 20000)
    want, ref = _serial(data)
    got, r = _mapped_out(data, tmp_path, block=1 << 20, workers=2, min_parallel=0,
                         piece=2 << 20)
    assert got == want and r.counts == ref.counts
    assert secret.encode() not in got and r.counts["github-token"] >= 3
