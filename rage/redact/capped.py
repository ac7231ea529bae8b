"""Redacting one run file into a bundle member within its size cap.

Above the cap only what can reach the bundle is read and redacted: a head region and a tail
region, each extended by the longest multi-line secret the redactor sees whole, so nothing
that is sent was cut before redaction. The kept bytes are laid out as
:class:`rage.record.capture.CappedFile` lays them out (head, marker, tail).
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections import deque
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from rage.fsutil import open_private, open_regular
from rage.record.capture import MARKER, CappedFile

_CHUNK = 1024 * 1024


class Frames(Protocol):
    """Where the redacted bytes go compressed too (:class:`rage.bundle.frames.FrameWriter`)."""

    @property
    def compress(self) -> Callable[[bytes], bytes]: ...

    def add(self, data: bytes | memoryview, frame: bytes | None = None) -> None: ...


def _pieces(redactor: Any, chunks: Iterator[bytes], size: int, frames: Frames | None,
            workers: int | None = None) -> Generator[tuple[bytes, bytes | None], None, None]:
    """The redacted stream, each output with its frame when a worker made one."""
    if frames is not None:
        yield from redactor.stream_pieces(chunks, size=size, compress=frames.compress,
                                          workers=workers)
        return
    stream = redactor.stream(chunks, size=size, workers=workers)
    try:
        for out in stream:
            yield out, None
    finally:
        getattr(stream, "close", lambda: None)()  # stops its workers now


def _mapped(src: Path, size: int, frames: Frames | None) -> mmap.mmap | None:
    """``src`` mapped read-only when it is large enough for the redaction workers and their
    frames are wanted (:meth:`rage.redact.Redactor.mapped_pieces`: pieces cut from the
    mapping, not reads joined to a carried line); None otherwise, or where it cannot be
    mapped: then it is read."""
    from rage.redact.parallel import PARALLEL_MIN

    if frames is None or size < PARALLEL_MIN:
        return None
    try:
        with open_regular(src) as f:  # the mapping keeps the file open itself
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None


def _chunks(path: Path) -> Iterator[bytes]:
    with open_regular(path) as f:
        while chunk := f.read(_CHUNK):
            yield chunk


def redact_capped(
    src: Path, dst: Path, cap: int, size: int, redactor: Any, *, frames: Frames | None = None,
    workers: int | None = None
) -> tuple[dict[str, int], tuple[int, str] | None, bool]:
    """Redact ``src`` into ``dst``, keeping head and tail within ``cap`` if it is too big.

    Returns the truncation note (empty if whole), when it could be computed on the way the
    size and sha256 of the kept bytes, and whether they went to ``frames`` (if given)
    instead of ``dst``, which is then not written: frames made by the redaction workers
    where they could, compressed here where not. (A file whose regions would meet is
    redacted whole and capped into ``dst``, without frames.)

    The cut is always made after redaction, so a secret is
    never split by it. Above the cap only what can reach the bundle is read and redacted:
    a head region and a tail region (see :func:`_cut_regions`), each as one stream; the
    kept bytes are the first ``cap - cap // 2`` of the redacted head and the last
    ``cap // 2`` of the redacted tail, around :data:`rage.record.capture.MARKER`, as
    :class:`CappedFile` lays them out. Then the note is measured on the source:
    ``total_bytes`` is the source size and ``dropped_bytes`` the source bytes left out,
    counting each kept part by its redacted length (by its source length when a whole
    region was kept). When the regions would meet the whole file is redacted and capped,
    and the note is measured on the redacted stream.

    ``workers``: as :meth:`rage.redact.Redactor.stream` takes it (1: in this process, where
    the redactor learns what the file names, see :meth:`rage.redact.Redactor.learned`).
    """
    from rage.digest import sha256

    if cap >= size:
        h = sha256(size=size)
        n = 0
        data = _mapped(src, size, frames)
        with _Sink(dst, frames) as put, data if data is not None else contextlib.nullcontext():
            # a worker's output may be lent (a view of its memory until the next piece):
            # it is only hashed here, and its frame kept
            pieces: Generator[tuple[bytes | memoryview, bytes | None], None, None] = (
                redactor.mapped_pieces(data, compress=frames.compress, lend=True)
                if data is not None and frames is not None
                else _pieces(redactor, _chunks(src), size, frames, workers))
            with contextlib.closing(pieces):  # its workers stop now if this fails
                for chunk, frame in pieces:
                    put(chunk, frame)
                    h.update(chunk)
                    n += len(chunk)
        return {}, (n, h.hexdigest()), frames is not None
    with open_regular(src) as f:
        size = os.fstat(f.fileno()).st_size  # the reads below must stay within the file
        regions = _cut_regions(f, size, cap)
        if regions is not None:
            note, digest = _redact_ends(f, dst, cap, size, regions=regions,
                                        redactor=redactor, frames=frames, workers=workers)
            return note, digest, frames is not None
    capped = CappedFile(dst, cap)
    try:
        for chunk in redactor.stream(_chunks(src), size=size, workers=workers):
            capped.write(chunk)
    finally:
        t = capped.close()
    note = {"total_bytes": t.total_bytes, "dropped_bytes": t.dropped_bytes}
    return (note if t.dropped_bytes else {}), None, False


class _Sink:
    """Where the kept bytes go: ``frames`` if given (with the frame a worker made of each
    piece, or None), else the file ``dst`` (created 0600)."""

    def __init__(self, dst: Path, frames: Frames | None) -> None:
        self._dst, self._frames = dst, frames
        self._out: BinaryIO | None = None

    def __enter__(self) -> Callable[[bytes | memoryview, bytes | None], None]:
        if self._frames is not None:
            return self._frames.add
        self._out = open_private(self._dst, "wb")
        return self._write

    def _write(self, data: bytes | memoryview, _frame: bytes | None) -> None:
        assert self._out is not None
        self._out.write(data)

    def __exit__(self, *exc: object) -> None:
        if self._out is not None:
            self._out.close()


def _cut_regions(f: BinaryIO, size: int, cap: int) -> tuple[int, int] | None:
    """``(head_end, tail_start)``: the source regions whose redaction can reach the bundle.

    The head region ends at a line end at least ``PRIVATE_KEY_MAX`` (1 MiB, the longest
    multi-line secret the redactor sees whole) past the kept head's share, so a secret
    straddling the head cut, a key block included, is redacted whole. The tail region
    starts at a line start at least that margin before the kept tail's share, moved back
    to the BEGIN line of any private key block still open across it, so the block is seen
    from its start. None when the regions would meet: the whole file is redacted instead.
    """
    from rage.redact.patterns import PRIVATE_KEY_MAX as margin

    tail_from = size - cap // 2 - margin
    head_to = cap - cap // 2 + margin
    if head_to >= tail_from:
        return None
    head_end = _line_end_after(f, head_to, tail_from)
    start = None if head_end is None else _line_start_before(f, tail_from, head_end)
    while head_end is not None and start is not None:
        begin = _open_key_block(f, start, size, margin)
        if begin is None:
            return head_end, start
        start = _line_start_before(f, begin, head_end)
    return None


def _line_end_after(f: BinaryIO, pos: int, limit: int) -> int | None:
    """The offset just past the first newline at or after ``pos`` and before ``limit``."""
    while pos < limit:
        f.seek(pos)
        chunk = f.read(min(_CHUNK, limit - pos))
        if not chunk:
            return None
        i = chunk.find(b"\n")
        if i >= 0:
            return pos + i + 1
        pos += len(chunk)
    return None


def _line_start_before(f: BinaryIO, pos: int, floor: int) -> int | None:
    """The line start (just past a newline) at or before ``pos`` and above ``floor``."""
    while pos > floor:
        lo = max(pos - _CHUNK, floor)
        f.seek(lo)
        i = f.read(pos - lo).rfind(b"\n")
        if i >= 0:
            return lo + i + 1
        pos = lo
    return None


def _open_key_block(f: BinaryIO, start: int, size: int, margin: int) -> int | None:
    """Where a private key block begun before ``start`` and running past it begins, if any.

    Matched as the redactor matches it: from its BEGIN, within ``margin`` bytes.
    """
    import re

    from rage.redact.patterns import PRIVATE_KEY, PRIVATE_KEY_BEGIN

    lo = max(start - margin, 0)
    f.seek(lo)
    window = f.read(min(size, start + margin) - lo)
    pem = re.compile(PRIVATE_KEY)
    p = window.find(PRIVATE_KEY_BEGIN, 0, start - lo)
    while p >= 0:
        m = pem.match(window, p, min(p + margin, len(window)))
        if m is not None and lo + m.end() > start:
            return lo + p
        p = window.find(PRIVATE_KEY_BEGIN, p + 1, start - lo)
    return None


def _read_range(f: BinaryIO, start: int, end: int) -> Iterator[bytes]:
    pos = start
    while pos < end:
        f.seek(pos)  # the file is shared by the head and tail streams
        chunk = f.read(min(_CHUNK, end - pos))
        if not chunk:
            return
        pos += len(chunk)
        yield chunk


def _redact_ends(
    f: BinaryIO, dst: Path, cap: int, size: int, *, regions: tuple[int, int], redactor: Any,
    frames: Frames | None, workers: int | None
) -> tuple[dict[str, int], tuple[int, str]]:
    """Redact the head and tail regions of ``f`` and write the kept parts (see _redact_one)."""
    from rage.digest import sha256

    head_end, tail_start = regions
    head_keep, tail_keep = cap - cap // 2, cap // 2
    h = sha256(size=cap)
    n = 0
    with _Sink(dst, frames) as sink:
        def put(data: bytes, frame: bytes | None = None) -> None:
            nonlocal n
            sink(data, frame)
            h.update(data)
            n += len(data)

        head_src = 0
        if head_keep:
            # pulled only until the head is full: what a stream has yielded is final, so
            # the rest of the region is redacted only if redaction shrank the head
            stream = _pieces(redactor, _read_range(f, 0, head_end), head_end, frames, workers)
            try:
                for chunk, frame in stream:
                    whole = len(chunk) <= head_keep - n
                    put(chunk if whole else chunk[: head_keep - n], frame if whole else None)
                    if n >= head_keep:
                        head_src = head_keep
                        break
                else:
                    head_src = head_end
            finally:
                getattr(stream, "close", lambda: None)()
        # the redacted tail region as its chunks, the oldest dropped once the rest holds
        # tail_keep bytes: no copying of the region into one buffer
        tail: deque[tuple[bytes, bytes | None]] = deque()
        held = 0
        for piece in (_pieces(redactor, _read_range(f, tail_start, size), size - tail_start,
                              frames, workers) if tail_keep else ()):
            tail.append(piece)
            held += len(piece[0])
            while held - len(tail[0][0]) >= tail_keep:
                held -= len(tail.popleft()[0])
        tail_src = tail_keep if held >= tail_keep else size - tail_start
        dropped = size - head_src - tail_src
        put(MARKER % dropped)
        if held > tail_keep:
            tail[0] = (tail[0][0][held - tail_keep:], None)  # cut: its frame no longer fits
        for chunk, frame in tail:
            put(chunk, frame)
    return {"total_bytes": size, "dropped_bytes": dropped}, (n, h.hexdigest())
