"""Redacting a large stream in forked worker processes, in order, with bounded memory.

The parent cuts the input exactly as the in-process stream does (whole lines, private key
blocks whole, see :meth:`RedactionEngine.plan`) and hands each piece to a worker, round robin,
:data:`DEPTH` pieces in flight per worker at most: once every worker holds that many, the
oldest result is read before the next piece goes, so the parent never blocks on a pipe a
worker is blocked on. A live input that pauses (:data:`FLUSH`) gets every result in flight
out before more input comes.

Workers are forked after the engine is built, so they share its regex, literals and the
pseudonyms known so far. A name first seen in a worker (``/home/<name>``) cannot be numbered
there, since numbers follow the order of first appearance across the whole stream: the worker
writes a random per-pool marker, the name and a NUL instead, and the parent numbers the names
as it takes results in order. User regexes then run in the parent for such a piece, since
they must see the final text. The names numbered since a worker's last piece go to it with
its next piece (which comes later in the stream), so a name is deferred only in the few
pieces in flight when it first appears. Counts are returned per piece and added up in the
parent. The SQL tables a piece creates (their columns, for the INSERTs that name none) come
back with its result and go to every worker with its next piece; a piece that was in flight
when its stream's earlier pieces taught a table, and holds an INSERT, is redone in the parent.

A worker that fails (killed, out of memory) costs nothing but speed: the pieces still in
flight are redacted in-process and the rest of the stream too.

:func:`redact_pieces` can also have each piece compressed where it was redacted (the bundle
writer's zstd frames, see :mod:`rage.bundle.frames`): the workers then do the compression
too, in parallel, instead of the parent after the whole stream. A piece whose final text is
only known in the parent (deferred names, user regexes) comes without its frame.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import marshal
import mmap
import os
import signal
import struct
import sys
from collections.abc import Callable, Generator, Iterable
from typing import BinaryIO

from rage.redact.engine import RedactionEngine, Spans
from rage.redact.literals import registered_literals
from rage.redact.sql import INSERT_NEEDLES, Tables

MiB = 1024 * 1024
PARALLEL_MIN = 8 * MiB  # below this a stream stays in-process: forking costs ~ms
PIECE = 2 * MiB  # bytes per piece handed to a worker (at least; whole lines): 2 MiB
# measured 7-13% faster than 1 MiB on 2 cores (fewer round trips), 4 MiB slower (pipe waits)
MAX_WORKERS = 8
# pieces in flight per worker. Two (a worker finds its next piece waiting) measured no faster
# on 2 cores, where the workers and the parent already keep both busy: 1.13 against 1.07 s
# for a 200 MB report, median of 8; it holds twice the shared memory and defers more pieces
DEPTH = 1

_REQ = struct.Struct("<QQIIBB")  # piece length, where in the source it starts, key spans,
# length of new names, where the piece is (below), which slots
_PIPED, _SHARED, _FROM_SOURCE = 0, 1, 2  # in the pipe after the header, in the worker's
# shared input slot, in the mapped file the worker was forked with (redact_mapped)
# a pipe this large holds a whole request or result, so neither side waits on the other for
# every 64 KiB (Linux; elsewhere, or above the system's limit, the default stays)
_PIPE_SIZE = MiB
_SPAN = struct.Struct("<QQ")
_RES = struct.Struct("<QQQIBB")  # output, counts, frame lengths, deferred names, custom done,
# output and frame in shared memory
# Each worker has two shared memory slots (anonymous, mapped before the fork): the parent
# copies a piece into the one, the worker its output and frame into the other, and the pipes
# carry only headers. Through a pipe, each byte costs a copy in and out of the kernel plus its
# pages: 100 MB took ~80 ms of CPU between two processes, against ~20 ms through memory. A
# piece or result larger than its slot goes through the pipe. Pages are touched only as used.
_IN_SLOT = 8 * MiB
_OUT_SLOT = 16 * MiB


class _Flush(bytes):
    """The type of :data:`FLUSH`."""


# a chunk a live input yields when it has paused (rage redact on a pipe): the whole lines
# gathered so far go now, even those after a multi-line opener that would wait for more
FLUSH = _Flush()

Compress = Callable[[bytes], bytes]
Piece = tuple[bytes, bytes | None]  # redacted bytes, and their frame when a worker made it
# what a worker redacts: ``buf[:limit]`` with its key block ``spans``, and where ``buf``
# starts in the pool's mapped source (-1: not from it, see :func:`redact_mapped`)
Job = tuple[bytes, int, Spans, int]
# a piece whose output may be lent: a view of a worker's shared memory (see redact_mapped)
Lent = tuple[bytes | memoryview, bytes | None]


def default_workers() -> int:
    """Worker processes for a large stream: the CPUs this process may run on, capped."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, MAX_WORKERS))


def redact_stream(engine: RedactionEngine, chunks: Iterable[bytes], *, block: int,
                  workers: int | None = None, min_parallel: int = PARALLEL_MIN,
                  piece: int = PIECE) -> Generator[bytes, None, None]:
    """Redact ``chunks`` in order; past ``min_parallel`` bytes in ``workers`` processes.

    Output equals the in-process stream. Memory: about ``block`` (``max(block, piece)`` once
    parallel) times the number of workers plus three.
    """
    with contextlib.closing(redact_pieces(engine, chunks, block=block, workers=workers,
                                          min_parallel=min_parallel, piece=piece)) as pieces:
        for out, _ in pieces:
            yield out


def redact_pieces(engine: RedactionEngine, chunks: Iterable[bytes], *, block: int,
                  workers: int | None = None, min_parallel: int = PARALLEL_MIN,
                  piece: int = PIECE, compress: Compress | None = None
                  ) -> Generator[Piece, None, None]:
    """:func:`redact_stream`, each output with the frame ``compress`` made of it in a worker.

    The frame is None for output redacted (or finished) in this process, and always without
    ``compress``; the caller compresses those itself if it needs them.
    """
    with contextlib.closing(_redact_pieces(engine, chunks, block=block, workers=workers,
                                           min_parallel=min_parallel, piece=piece,
                                           compress=compress)) as pieces:
        for out, frame in pieces:
            assert isinstance(out, bytes)  # no source, nothing is lent
            yield out, frame


def _redact_pieces(engine: RedactionEngine, chunks: Iterable[bytes], *, block: int,
                   workers: int | None, min_parallel: int, piece: int,
                   compress: Compress | None) -> Generator[Lent, None, None]:
    n_workers = default_workers() if workers is None else max(1, workers)
    if not hasattr(os, "fork"):
        n_workers = 1
    pool: _Pool | None = None
    pending: list[bytes] = []
    size = seen = 0
    carry = b""
    want = block
    try:
        for chunk in chunks:
            flush = chunk is FLUSH
            if not chunk and not flush:
                continue  # a FLUSH with nothing held finds no line to let out (plan: 0)
            pending.append(chunk)
            size += len(chunk)
            if size < want and not flush:
                continue
            pending.insert(0, carry)
            buf = b"".join(pending)
            pending, size = [], 0
            limit, spans = engine.plan(buf, final=False, hold=not flush)
            carry = buf[limit:]
            if limit:
                seen += limit
                pool = yield from _piece(
                    engine, pool, (buf, limit, spans, -1), n_workers=n_workers,
                    start=n_workers > 1 and seen >= min_parallel, compress=compress)
                if pool is not None:
                    want = max(block, piece)
            if flush and pool is not None:  # a live input paused: all it gave goes out now
                pool = yield from _settle(pool, engine, n_workers)
        pending.insert(0, carry)
        buf = b"".join(pending)
        pending = []
        limit, spans = engine.plan(buf, final=True)
        if pool is not None:
            pool = yield from _feed(pool, engine, n_workers, (buf, limit, spans, -1))
            yield from _drain(pool, engine)
            pool = None
        else:
            out = engine.apply(buf, limit, spans)
            if out:
                yield out, None
    finally:
        if pool is not None:
            pool.kill()


def redact_mapped(engine: RedactionEngine, data: mmap.mmap, *, block: int,
                  workers: int | None = None, min_parallel: int = PARALLEL_MIN,
                  piece: int = PIECE, compress: Compress | None = None, lend: bool = False
                  ) -> Generator[Lent, None, None]:
    """:func:`redact_pieces` of a file mapped in memory: each piece is one slice of the
    mapping, where a stream of reads has each read copied by the kernel into new memory and
    joined to the line carried from the piece before (per 200 MB, 75-90 ms of the parent's
    CPU and 23,000 page faults, against 25 ms and 4,600). The output is the stream's.

    The workers, forked with the mapping, read each piece from it: the parent sends where
    the piece starts, not its bytes (it copied 200 MB into their shared memory, 27 ms).
    ``lend``: an output a worker made, with its frame, comes as a view of the memory it was
    made in, not a copy (200 MB of copies, 45 ms of the parent's CPU); the view is
    released when the next piece is asked for, so a caller that needs more than the frame
    and one pass over the output (a hash, a length) must copy it."""
    n_workers = default_workers() if workers is None else max(1, workers)
    if not hasattr(os, "fork"):
        n_workers = 1
    pool: _Pool | None = None
    size = len(data)
    pos = seen = 0
    grow = want = block
    try:
        while pos < size:
            end = min(size, pos + want)
            buf = data[pos:end]
            limit, spans = engine.plan(buf, final=end == size)
            if not limit:  # a value across lines, a key block, a long line: more of it
                want += grow
                continue
            seen += limit
            pool = yield from _piece(
                engine, pool, (buf, limit, spans, pos), n_workers=n_workers,
                start=n_workers > 1 and seen >= min_parallel, compress=compress,
                source=data, lend=lend)
            if pool is not None:
                grow = max(block, piece)
            del buf
            pos += limit
            want = grow
        if pool is not None:
            yield from _drain(pool, engine)
            pool = None
    finally:
        if pool is not None:
            pool.kill()


def _piece(engine: RedactionEngine, pool: _Pool | None, job: Job, *,
           n_workers: int, start: bool, compress: Compress | None,
           source: mmap.mmap | None = None, lend: bool = False
           ) -> Generator[Lent, None, _Pool | None]:
    """A planned piece redacted: by the workers (started now if ``start``), else here. The
    pool, if there is one now."""
    if pool is None and start:
        pool = _Pool(engine, n_workers, compress, source=source, lend=lend)
    if pool is not None:
        return (yield from _feed(pool, engine, n_workers, job))
    out = engine.apply(*job[:3])
    if out:
        yield out, None
    return None


def _feed(pool: _Pool, engine: RedactionEngine, n_workers: int,
          job: Job) -> Generator[Lent, None, _Pool]:
    """Hand a piece to the next worker, first taking the oldest result when every worker
    already holds :data:`DEPTH` pieces: the workers redact their next pieces while the
    consumer takes that one (a lent result is taken before the worker that made it gets
    its next piece, which it writes where the lent one is)."""
    pool = yield from _renew(pool, engine, n_workers)
    out = pool.take() if pool.full() else None
    if out is not None and isinstance(out[0], memoryview):
        yield from _give(out)
        out = None
    pool.send(*job)
    if out is not None:
        yield from _give(out)
    return pool


def _give(out: Lent) -> Generator[Lent, None, None]:
    """Yield a result, unless its output is empty; a lent one is released when the
    consumer asks for the next."""
    view = out[0]
    if not isinstance(view, memoryview):
        if view:
            yield out
        return
    try:
        yield out
    finally:
        view.release()


def _settle(pool: _Pool, engine: RedactionEngine, n_workers: int
            ) -> Generator[Lent, None, _Pool]:
    """Every result still in flight, in order; the workers stay for the pieces to come.
    After a pause of a live input, what came before it goes out now, not when more
    input pushes it out."""
    while pool.in_flight():
        pool = yield from _renew(pool, engine, n_workers)
        if not pool.in_flight():
            break  # redone here by _renew
        yield from _give(pool.take())
    return pool


def _drain(pool: _Pool, engine: RedactionEngine) -> Generator[Lent, None, None]:
    """The results still in flight, in order; then the workers are stopped."""
    pool = yield from _settle(pool, engine, 0)
    pool.kill()


def _renew(pool: _Pool, engine: RedactionEngine, n_workers: int
           ) -> Generator[Lent, None, _Pool]:
    """The pool again, or, if a literal was registered since its pieces were sent (the
    consumer registered it while it held an output), a new one that knows it (none if
    ``n_workers`` is 0), once the pieces in flight are redone here, in order, as the
    in-process stream would have."""
    if pool.literals is registered_literals():
        return pool
    for held in pool.abandon():
        redone = engine.apply(*held[:3])
        if redone:
            yield redone, None
    return (_Pool(engine, n_workers, pool.compress, source=pool.source, lend=pool.lend)
            if n_workers else pool)


class _Worker:
    def __init__(self, pid: int, to_child: BinaryIO, from_child: BinaryIO,
                 slots: list[tuple[mmap.mmap, mmap.mmap]]) -> None:
        self.pid = pid
        self.to_child = to_child
        self.from_child = from_child
        self.slots = slots  # DEPTH (in, out) pairs shared with the worker (see _IN_SLOT)
        self.sent = 0  # pieces sent: the next goes through slots[sent % DEPTH]
        self.known = 0  # how many of the parent's pseudonyms this worker has been told
        self.tables: dict[str, tuple[str, ...]] = {}  # the SQL tables it has been told of


class _Pool:
    """Forked workers fed round robin, :data:`DEPTH` pieces each at most; results are taken
    back in submission order."""

    def __init__(self, engine: RedactionEngine, n: int, compress: Compress | None = None, *,
                 source: mmap.mmap | None = None, lend: bool = False) -> None:
        self.engine = engine
        self.compress = compress  # run by the workers on every piece they finish
        # the mapped file the pieces come from: the workers, forked with it, read them there
        self.source = source
        self.lend = lend  # an output with its frame comes as a view of its shared memory
        engine.build()  # workers inherit the compiled regex and the names known so far
        self.literals = registered_literals()
        self.marker = b"\x00rage-" + os.urandom(8).hex().encode() + b"\x01"
        self.workers: list[_Worker] = []
        # the pieces in flight, oldest first, each kept for a redo: (worker, slot, job)
        self.flight: collections.deque[tuple[_Worker, int, Job]] = collections.deque()
        # how many times the tables changed, and that count when each piece in flight went
        self.tables_changed = 0
        self.sent_at: collections.deque[int] = collections.deque()
        self.next = 0
        self.broken = False
        _spare_the_heap()
        for _ in range(n):
            self._spawn()

    def _spawn(self) -> None:
        r1, w1 = os.pipe()  # parent -> child
        r2, w2 = os.pipe()  # child -> parent
        _widen(w1)
        _widen(w2)
        # MAP_SHARED: both see them
        slots = [(mmap.mmap(-1, _IN_SLOT), mmap.mmap(-1, _OUT_SLOT)) for _ in range(DEPTH)]
        pid = os.fork()
        if pid == 0:  # the child: never returns into the caller's code
            code = 1
            try:
                os.close(w1)
                os.close(r2)
                for w in self.workers:  # or a sibling would never see its pipe close
                    os.close(w.to_child.fileno())
                    os.close(w.from_child.fileno())
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides
                _keep_the_heap()
                _serve(self.engine, self.marker, os.fdopen(r1, "rb"), os.fdopen(w2, "wb"),
                       self.compress, slots=slots, source=self.source)
                code = 0
            finally:
                os._exit(code)
        os.close(r1)
        os.close(w2)
        w = _Worker(pid, os.fdopen(w1, "wb"), os.fdopen(r2, "rb"), slots)
        w.known = len(self.engine._pseudonyms)  # inherited by the fork
        w.tables = dict(self.engine._tables)
        self.workers.append(w)

    def in_flight(self) -> int:
        return len(self.flight)

    def full(self) -> bool:
        """Every worker holds DEPTH pieces: the next send waits for :meth:`take`."""
        return len(self.flight) >= DEPTH * len(self.workers)

    def take(self) -> Lent:
        """The result of the oldest piece in flight (there must be one)."""
        stale = self.sent_at.popleft() < self.tables_changed
        return self._take(*self.flight.popleft(), stale=stale)

    def send(self, buf: bytes, limit: int, spans: Spans, at: int = -1) -> None:
        """Give ``buf[:limit]`` to the next worker, which must hold fewer than DEPTH pieces
        (see :meth:`full`): round robin, so its oldest piece has been taken, and the slots
        that piece used are free again. ``at``: where ``buf`` starts in :attr:`source`, from
        which the worker reads it (-1: it is copied to the worker)."""
        w = self.workers[self.next]
        self.next = (self.next + 1) % len(self.workers)
        k = w.sent % DEPTH
        w.sent += 1
        self.flight.append((w, k, (buf, limit, spans, at)))
        self.sent_at.append(self.tables_changed)
        if self.broken:
            return
        table = self.engine._pseudonyms
        names = b""
        new: list[tuple[str, str]] = []
        if len(table) > w.known:  # numbered since: the piece comes after their first use
            new = list(itertools.islice(table.items(), w.known, None))
            w.known = len(table)
        tables = self.engine._tables
        if new or tables != w.tables:
            names = marshal.dumps((new, tables if tables != w.tables else None))
            w.tables = dict(tables)
        where = (_FROM_SOURCE if at >= 0 and self.source is not None
                 else _SHARED if limit <= _IN_SLOT else _PIPED)
        try:
            if where == _SHARED:
                w.slots[k][0][:limit] = memoryview(buf)[:limit]
            w.to_child.write(_REQ.pack(limit, max(at, 0), len(spans), len(names), where, k))
            w.to_child.write(names)
            for s, e in spans:
                w.to_child.write(_SPAN.pack(s, e))
            if where == _PIPED:
                w.to_child.write(memoryview(buf)[:limit])
            w.to_child.flush()
        except OSError:
            self.broken = True

    def abandon(self) -> list[Job]:
        """Stop the workers now; the pieces they held, in order, for the caller to redo."""
        jobs = [job for _, _, job in self.flight]
        self.kill()
        return jobs

    def kill(self) -> None:
        """Stop every worker now and reap it (results not taken are lost)."""
        for w in self.workers:
            for f in (w.to_child, w.from_child):
                with contextlib.suppress(OSError):  # a pipe the child closed: nothing to flush
                    f.close()
            with contextlib.suppress(ProcessLookupError):
                os.kill(w.pid, signal.SIGKILL)
            os.waitpid(w.pid, 0)
            for slot in itertools.chain.from_iterable(w.slots):
                with contextlib.suppress(BufferError):  # a view still held: freed with it
                    slot.close()
        self.workers = []
        self.flight.clear()
        self.sent_at.clear()

    def _take(self, w: _Worker, k: int, job: Job, *, stale: bool = False) -> Lent:
        """The redacted output of ``w``'s piece ``job`` (which used its slots ``k``),
        numbered and counted as if in-process, and its frame if the worker could make it.
        ``stale``: the piece went before the tables last changed (redone here if it holds
        an INSERT, which may name one of them)."""
        buf, limit, spans, _ = job
        engine = self.engine
        if not self.broken:
            try:
                out, counts, frame, deferred, custom_done, tables = _read_result(
                    w.from_child, w.slots[k][1], lend=self.lend)
            except (OSError, EOFError, ValueError, struct.error):
                self.broken = True
            else:
                if stale and any(buf.find(n, 0, limit) >= 0 for n in INSERT_NEEDLES):
                    return engine.apply(buf, limit, spans), None  # as in-process: with them
                if tables is not None and tables != engine._tables:
                    engine._tables.update(tables)
                    self.tables_changed += 1
                if isinstance(out, memoryview) and not (custom_done and frame):
                    out = out.tobytes()  # finished here (names, the user's patterns) or framed
                resolved = out if isinstance(out, memoryview) else _resolve(
                    engine, out, self.marker, deferred)
                if resolved is not None:
                    for kind, n in counts.items():
                        engine._count(kind, n)
                    if not custom_done:  # names deferred: no frame was made
                        assert isinstance(resolved, bytes)
                        return engine.apply_custom(resolved), None
                    return resolved, frame or None
        return engine.apply(buf, limit, spans), None  # in-process: same output, slower


def _resolve(engine: RedactionEngine, out: bytes, marker: bytes, deferred: int
             ) -> bytes | None:
    """Number the names a worker deferred, in order; None if the markers do not add up."""
    if not deferred:
        return out
    parts = out.split(marker)
    if len(parts) - 1 != deferred:
        return None  # the input held the marker itself: redo the piece in-process
    res = [parts[0]]
    for p in parts[1:]:
        name, sep, rest = p.partition(b"\x00")
        if not sep:
            return None
        res.append(engine._pseudonym(name.decode("utf-8", "surrogateescape")).encode())
        res.append(rest)
    return b"".join(res)


def _spare_the_heap() -> None:
    """Load what :func:`_keep_the_heap` needs before the fork, so no worker imports it."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(ImportError):
            import ctypes  # noqa: F401


def _keep_the_heap() -> None:
    """In a worker (glibc): allocate pieces from a heap kept between them. By default each
    piece-sized buffer (a copy of the piece, its output, its frames) is mapped fresh from
    the system and unmapped after, its pages faulted in every time: ~45,000 page faults per
    200 MB, about 5% of a report's CPU. Best effort: elsewhere nothing changes."""
    ctypes = sys.modules.get("ctypes")
    if ctypes is None:
        return
    with contextlib.suppress(Exception):
        mallopt = ctypes.CDLL(None).mallopt
        mallopt(-3, 2 * _OUT_SLOT)  # M_MMAP_THRESHOLD: pieces come from the heap
        mallopt(-1, 8 * _OUT_SLOT)  # M_TRIM_THRESHOLD: the heap keeps what they free


def _widen(fd: int) -> None:
    import fcntl

    op = getattr(fcntl, "F_SETPIPE_SZ", None)
    if op is not None:
        with contextlib.suppress(OSError):  # over /proc/sys/fs/pipe-max-size: keep the default
            fcntl.fcntl(fd, op, _PIPE_SIZE)


def _read_exact(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise EOFError("worker closed its pipe")
    return data


def _read_result(f: BinaryIO, slot: mmap.mmap, *, lend: bool = False
                 ) -> tuple[bytes | memoryview, dict[str, int], bytes, int, bool, Tables | None]:
    """A worker's result: its output (``lend``: a view of the shared memory it is in, if
    it is there), counts, frame, deferred names, whether the user's patterns ran, and the
    SQL tables it learned."""
    n_out, n_counts, n_frame, deferred, custom_done, shared = _RES.unpack(
        _read_exact(f, _RES.size))
    counts, tables = marshal.loads(_read_exact(f, n_counts))
    if not isinstance(counts, dict) or not isinstance(tables, dict | None):
        raise ValueError("bad counts from worker")
    if shared:
        if n_out + n_frame > len(slot):
            raise ValueError("bad result size from worker")
        out: bytes | memoryview = memoryview(slot)[:n_out] if lend else slot[:n_out]
        return out, counts, slot[n_out:n_out + n_frame], deferred, bool(custom_done), tables
    data = _read_exact(f, n_out)
    return data, counts, _read_exact(f, n_frame), deferred, bool(custom_done), tables


def _serve(engine: RedactionEngine, marker: bytes, inp: BinaryIO, out: BinaryIO,
           compress: Compress | None, *, slots: list[tuple[mmap.mmap, mmap.mmap]],
           source: mmap.mmap | None = None) -> None:
    """A worker's loop: read a piece, redact it, write the result; stop at end of input."""
    engine._defer = marker
    while True:
        head = inp.read(_REQ.size)
        if len(head) < _REQ.size:
            return
        limit, at, n_spans, n_names, where, k = _REQ.unpack(head)
        slot_in, slot_out = slots[k]
        if n_names:
            new, tables = marshal.loads(_read_exact(inp, n_names))
            for name, pseudonym in new:
                engine._pseudonyms[name] = pseudonym
            if tables is not None:
                engine._tables.update(tables)
        spans: Spans = [_SPAN.unpack(_read_exact(inp, _SPAN.size)) for _ in range(n_spans)]
        if where == _FROM_SOURCE and source is not None:
            buf = source[at:at + limit]
        elif where == _SHARED:
            buf = slot_in[:limit]
        else:
            buf = _read_exact(inp, limit)
        engine._counts = {}
        engine._deferred = 0
        tables = dict(engine._tables) if engine._tables else {}
        res = engine.apply(buf, limit, spans, custom=False)
        custom_done = engine._deferred == 0
        frame = b""
        if custom_done:
            res = engine.apply_custom(res)
            if compress is not None and res:
                frame = compress(res)
        # the tables this piece created go back, for the workers of the pieces after it
        counts = marshal.dumps((engine._counts, engine._tables if engine._tables != tables
                                else None))
        n_out, n_frame = len(res), len(frame)
        shared = n_out + n_frame <= _OUT_SLOT
        if shared:
            slot_out[:n_out] = res
            slot_out[n_out:n_out + n_frame] = frame
        out.write(_RES.pack(n_out, len(counts), n_frame, engine._deferred, custom_done, shared))
        out.write(counts)
        if not shared:
            out.write(res)
            out.write(frame)
        out.flush()
