"""What the tool wrote to ``sys.stdout`` and ``sys.stderr``, kept in the run.

A run that fails without a crash (``Error: Could not import 'nonexistent'.``) has nothing
else to show, so the recorder keeps the head and the tail of each stream in ``stdout.log`` and
``stderr.log``, the names ``rage run`` uses in pipe mode.

The console must not change by a byte, and code that checks the stream's type, calls
``fileno()``/``isatty()`` (colour detection) or writes to ``.buffer`` must keep working, so
the stream is not replaced by a proxy: it becomes a new ``io.TextIOWrapper`` with the old
one's encoding, error handler and buffering, over a ``BufferedWriter`` over :class:`TeeRaw`,
a raw file that writes every byte to the original file descriptor first and then copies what
was written into a :class:`~rage.record.capture.CappedFile`. Output written straight to the
file descriptor (``os.write(1, ...)``, subprocesses, C code) is not seen: only ``rage run``
sits outside the process and can see that.
"""

from __future__ import annotations

import io
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any

    from rage.record.capture import CappedFile


class TeeRaw(io.RawIOBase):
    """A raw writer: bytes go to ``target`` (the original raw file), then to ``sink``."""

    def __init__(self, target: io.RawIOBase, sink: CappedFile, name: object,
                 flush_each: bool) -> None:
        super().__init__()
        self._target = target
        self.sink: CappedFile | None = sink
        self.name = name
        self.failed = False
        self._flush_each = flush_each
        self._last_flush = time.monotonic()

    # The text layer checks `closed` on every write, through the buffer, when the raw file
    # is not exactly FileIO: a plain attribute instead of IOBase's descriptor makes that
    # lookup cheap (-30% CPU for print-heavy output)
    closed = False

    def writable(self) -> bool:
        return True

    def write(self, b: object) -> int | None:
        n = self._target.write(b)  # type: ignore[arg-type]
        sink = self.sink
        if sink is not None and n:
            try:
                sink.write(bytes(memoryview(b)[:n]))  # type: ignore[arg-type]
                # a fatal signal may come next: stderr (where errors go) is on disk at once,
                # stdout after a quiet second, like the log (a syscall per chunk of a large
                # output costs more than the copy itself)
                now = time.monotonic()
                if self._flush_each or now - self._last_flush >= 1.0:
                    sink.flush()
                    self._last_flush = now
            except (OSError, ValueError):
                self.sink = None  # disk full or closed: stop copying, never disturb the tool
                self.failed = True
        return n

    @property
    def mode(self) -> str:  # shows in the stream's repr ("Exception ignored in: <...>")
        return str(getattr(self._target, "mode", "wb"))

    def fileno(self) -> int:
        return self._target.fileno()

    def isatty(self) -> bool:
        return self._target.isatty()

    def close(self) -> None:
        # the original file descriptor belongs to the interpreter (it closes sys.__stdout__)
        if not self.closed:
            super().close()
            self.closed = True


def without_tee_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` without the frames of :meth:`TeeRaw.write`, so an error writing the stream
    (a closed pipe) prints the same traceback as without rage."""
    code = TeeRaw.write.__code__
    head: TracebackType | None = None
    prev: TracebackType | None = None
    while tb is not None:
        nxt = tb.tb_next
        if tb.tb_frame.f_code is not code:
            if prev is None:
                head = tb
            else:
                prev.tb_next = tb
            prev = tb
        tb = nxt
    if prev is not None:
        prev.tb_next = None
    return head


class StreamCapture:
    """Tees ``sys.stdout`` and ``sys.stderr`` into capped files of a run directory."""

    def __init__(self) -> None:
        self.tees: dict[str, tuple[TeeRaw, CappedFile, Any, Any]] = {}

    def start(self, file_for: object, cap: int) -> None:
        """Tee each standard stream that is a plain text file; ``file_for(name)`` gives the
        capture file's path. Streams the host replaced (pytest, IDEs) are left alone."""
        from rage.record.capture import CappedFile

        for attr, name in (("stdout", "stdout.log"), ("stderr", "stderr.log")):
            orig = getattr(sys, attr)
            if type(orig) is not io.TextIOWrapper:
                continue
            buf = getattr(orig, "buffer", None)
            unbuffered = type(buf) is io.FileIO  # python -u, PYTHONUNBUFFERED
            raw = buf if unbuffered else getattr(buf, "raw", None)
            if not (unbuffered or type(buf) is io.BufferedWriter) or type(raw) is not io.FileIO:
                continue
            orig.flush()  # whatever was written before goes out first, in order
            sink = CappedFile(file_for(name), cap)  # type: ignore[operator]
            tee = TeeRaw(raw, sink, raw.name, flush_each=attr == "stderr")
            # the same layers as the interpreter's own stream: a raw file straight under the
            # text layer when unbuffered, a BufferedWriter between them otherwise
            layer: Any = tee
            if not unbuffered:
                # the interpreter's size (open() uses the file's st_blksize): writes larger
                # than the buffer bypass it, which decides what is still pending, and so
                # printed again or lost, when the reader of a pipe goes away
                size = getattr(raw, "_blksize", 0)
                layer = io.BufferedWriter(tee, buffer_size=size if size > 1
                                          else io.DEFAULT_BUFFER_SIZE)
            new = io.TextIOWrapper(
                layer, encoding=orig.encoding, errors=orig.errors, newline=None,
                line_buffering=orig.line_buffering, write_through=orig.write_through,
            )
            setattr(sys, attr, new)
            self.tees[attr] = (tee, sink, new, orig)

    def detach_in_child(self) -> None:
        """After fork: the child's writes are not this run's (the file stays the parent's)."""
        for tee, _sink, _new, _orig in self.tees.values():
            tee.sink = None

    def finish(self) -> list[dict[str, int | str]]:
        """Flush, stop copying, close the capture files; return their truncation records
        (only for files that dropped bytes). The tees stay in place and keep passing output
        through: unflushed bytes (a closed pipe) must meet the interpreter's own final flush
        and its error exactly as they would have without rage."""
        truncation: list[dict[str, int | str]] = []
        for tee, sink, new, _orig in self.tees.values():
            try:  # noqa: SIM105 - no contextlib on the start-up path
                new.flush()
            except (OSError, ValueError):
                pass  # BrokenPipeError and friends: the interpreter reports them itself
            tee.sink = None
            try:
                t = sink.close()
            except OSError:
                continue
            if t.dropped_bytes:
                truncation.append(t.to_dict())
        return truncation

    def flush_stdout(self) -> bool:
        """Flush the tool's stdout now; False if the reader went away (``| head``)."""
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            return False
        except (OSError, ValueError, AttributeError):
            pass
        return True
