"""CappedFile keeps exactly the head and the tail of what was written, on real files."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rage.record.capture import MARKER, CappedFile


def expected(data: bytes, cap: int) -> bytes:
    head_n, tail_n = cap - cap // 2, cap // 2
    if len(data) <= cap:
        return data
    tail = data[len(data) - tail_n:] if tail_n else b""
    return data[:head_n] + MARKER % (len(data) - head_n - tail_n) + tail


@settings(max_examples=300, deadline=None)
@given(
    writes=st.lists(st.binary(max_size=300), max_size=60),
    cap=st.integers(min_value=0, max_value=900),
)
def test_head_marker_tail(writes: list[bytes], cap: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "out.log"
        f = CappedFile(path, cap)
        for w in writes:
            f.write(w)
        t = f.close()
        data = b"".join(writes)
        assert path.read_bytes() == expected(data, cap)
        assert t.total_bytes == len(data)
        assert t.dropped_bytes == max(len(data) - cap, 0)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_many_small_writes_keep_the_exact_tail(tmp_path: Path) -> None:
    # enough writes to exercise the periodic compaction of the tail list
    path = tmp_path / "out.log"
    f = CappedFile(path, 10_000)
    chunks = [f"line {i:06d}\n".encode() for i in range(50_000)]
    for c in chunks:
        f.write(c)
    f.close()
    assert path.read_bytes() == expected(b"".join(chunks), 10_000)



@settings(max_examples=300, deadline=None)
@given(
    writes=st.lists(st.binary(max_size=300), max_size=60),
    cap=st.integers(min_value=0, max_value=900),
    slack=st.integers(min_value=1, max_value=700),
)
def test_what_was_written_is_on_disk_before_close(writes: list[bytes], cap: int,
                                                   slack: int) -> None:
    """A recorder killed before close leaves head, marker and every byte after the cut."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "out.log"
        f = CappedFile(path, cap, write_through=True, slack=slack)
        data = b""
        head_n, tail_n = cap - cap // 2, cap // 2
        for w in writes:
            f.write(w)
            data += w
            on_disk = path.read_bytes()  # no flush: nothing is held in this process
            assert on_disk[:head_n] == data[:head_n]
            rest = on_disk[min(len(data), head_n):]
            if tail_n == 0 or rest == data[head_n:]:
                continue
            # cut: the marker says how much, and everything after it is there
            dropped = int(rest.split(b" bytes dropped here")[0].rsplit(b" ", 1)[1])
            assert rest == MARKER % dropped + data[head_n + dropped:]
            assert len(rest) - len(MARKER % dropped) < tail_n + max(tail_n, slack)
        t = f.close()
        assert path.read_bytes() == expected(data, cap)
        assert t.dropped_bytes == max(len(data) - cap, 0)
