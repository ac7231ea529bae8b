"""The run's structured log: every record as one JSON line in ``log.jsonl``.

Records are formatted as ``{"t", "level", "logger", "msg"[, "exc"][, "stack"]}`` with
registered secret literals scrubbed, then written in batches (one ``write`` per ~64 KiB
instead of one per record, which is what makes this cheaper than ``logging.FileHandler``).
The batch is flushed at ERROR and above, so the lines leading up to a failure are on disk
even if the process then dies of a fatal signal that no Python code can intercept; by any
record that comes more than a second after the last write (so after a quiet spell, the
last lines before a hang or a crash are on disk too); when 64 KiB are pending; and on close.

Above the cap the log keeps whole records: the first half of the cap goes to disk as it
comes, the last half is a ring of the newest records written at close after a marker record
saying how much was dropped. The file therefore stays valid JSON lines.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Callable
from json.encoder import encode_basestring as _esc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

FLUSH_BYTES = 64 * 1024
# a record arriving this long after the last write is written at once: a process that
# dies of a signal after a quiet spell keeps its last lines, a busy one writes once a second
FLUSH_INTERVAL_S = 1.0


class LogTruncation:
    """What the log kept: bytes written by the app and bytes dropped from the middle (same
    shape as :class:`rage.record.capture.Truncation`, without its import cost on every start-up)."""

    __slots__ = ("dropped_bytes", "name", "total_bytes")

    def __init__(self, name: str, total_bytes: int, dropped_bytes: int) -> None:
        self.name = name
        self.total_bytes = total_bytes
        self.dropped_bytes = dropped_bytes

    def to_dict(self) -> dict[str, int | str]:
        return {"name": self.name, "total_bytes": self.total_bytes,
                "dropped_bytes": self.dropped_bytes}


def _identity(text: str) -> str:
    return text


def load_scrubber() -> Callable[[str], str]:
    """A scrubber that applies ``rage.redact.scrub_literals`` once the redaction engine is
    loaded, and is the identity until then.

    ``rage.redact_value`` imports ``rage.redact`` to register a literal, so while the module
    is not loaded there is nothing to scrub; importing the whole engine up front would cost
    every recorded tool several milliseconds of start-up for nothing.
    """
    modules = sys.modules

    def scrub(text: str) -> str:
        fn: Callable[[str], str] | None = getattr(modules.get("rage.redact"),
                                                  "scrub_literals", None)
        return text if fn is None else fn(text)

    return scrub


class RunLogHandler(logging.Handler):
    """Writes records as JSON lines to ``path`` (created 0600), keeping head and tail within
    ``cap`` bytes. ``on_error`` is called once, with the exception, if the file cannot be
    written; after that the handler drops records silently so the tool is never disturbed.
    """

    def __init__(
        self,
        path: str | Path,
        cap: int,
        *,
        scrub: Callable[[str], str] | None = None,
        flush_level: int = logging.ERROR,
        on_error: Callable[[OSError], None] | None = None,
    ) -> None:
        super().__init__(logging.NOTSET)
        self.path = path
        self.cap = max(cap, 0)
        self.flush_level = flush_level
        self._scrub = scrub or _identity
        self._on_error = on_error
        self._fd: int | None = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600
        )
        self._buf: list[bytes] = []
        self._buffered = 0
        self._head_left = self.cap - self.cap // 2
        self._tail: deque[bytes] = deque()
        self._tail_bytes = 0
        self._tail_cap = self.cap // 2
        self._total = 0
        self._dropped_bytes = 0
        self._dropped_records = 0
        self._truncation: LogTruncation | None = None
        self._heads: dict[tuple[str, str], str] = {}
        self._last_flush = time.time()

    # -- formatting ------------------------------------------------------------------------
    def format_line(self, record: logging.LogRecord) -> bytes:
        """The JSON line for ``record`` (scrubbed, newline-terminated UTF-8)."""
        # Built by hand from C-escaped strings: several times cheaper than json.dumps of a
        # dict, which is what keeps this handler cheaper per record than FileHandler.
        scrub = self._scrub
        try:
            msg = record.getMessage()
        except Exception as e:  # a bad format string must not lose the record
            msg = f"{record.msg!r} % {record.args!r} (formatting failed: {e})"
        head = self._heads.get((record.levelname, record.name))
        if head is None:
            head = (f',"level":{_esc(record.levelname)},"logger":{_esc(record.name)}'
                    ',"msg":')
            self._heads[(record.levelname, record.name)] = head
        line = f'{{"t":{record.created:.6f}{head}{_esc(scrub(msg))}'
        if record.exc_info and not record.exc_text:
            record.exc_text = _FORMATTER.formatException(record.exc_info)
        if record.exc_text:
            line += f',"exc":{_esc(scrub(record.exc_text))}'
        if record.stack_info:
            line += f',"stack":{_esc(scrub(record.stack_info))}'
        return (line + "}\n").encode("utf-8", "backslashreplace")

    # -- logging.Handler -------------------------------------------------------------------
    def emit(self, record: logging.LogRecord) -> None:
        if self._fd is None:
            return
        line = self.format_line(record)
        n = len(line)
        self._total += n
        if n <= self._head_left:
            self._buf.append(line)
            self._buffered += n
            self._head_left -= n
        else:
            # once a record misses the head, everything after goes to the tail so the
            # file stays in order
            self._head_left = 0
            self._tail.append(line)
            self._tail_bytes += n
            while self._tail_bytes > self._tail_cap and self._tail:
                old = self._tail.popleft()
                self._tail_bytes -= len(old)
                self._dropped_bytes += len(old)
                self._dropped_records += 1
        if (record.levelno >= self.flush_level or self._buffered >= FLUSH_BYTES
                or record.created - self._last_flush >= FLUSH_INTERVAL_S):
            self.flush()

    def _write(self, data: bytes) -> None:
        if self._fd is None or not data:
            return
        try:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError as e:
            self._fail(e)

    def _fail(self, e: OSError) -> None:
        fd, self._fd = self._fd, None
        self._buf.clear()
        self._tail.clear()
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        if self._on_error is not None:
            self._on_error(e)

    def flush(self) -> None:
        """Write buffered head records to disk (the tail ring is written at close)."""
        with self.lock if self.lock else contextlib.nullcontext():
            self._last_flush = time.time()
            if self._buf:
                data = b"".join(self._buf)
                self._buf.clear()
                self._buffered = 0
                self._write(data)

    def handleError(self, record: logging.LogRecord) -> None:
        # Python would print "--- Logging error ---" to stderr: the console must not change
        # because of rage, so a record we cannot format is dropped.
        return

    def finish(self) -> LogTruncation:
        """Flush, write the marker and the tail, close the file; idempotent."""
        with self.lock if self.lock else contextlib.nullcontext():
            if self._truncation is None:
                self.flush()
                if self._dropped_bytes:
                    marker = {
                        "t": round(time.time(), 6),
                        "level": "RAGE",
                        "logger": "rage",
                        "msg": f"[rage: {self._dropped_records} records ({self._dropped_bytes}"
                        " bytes) dropped here: the log above the cap keeps its head and tail]",
                    }
                    self._write((json.dumps(marker) + "\n").encode())
                self._write(b"".join(self._tail))
                self._tail.clear()
                if self._fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(self._fd)
                    self._fd = None
                self._truncation = LogTruncation(os.path.basename(self.path), self._total,
                                                 self._dropped_bytes)
            return self._truncation

    def close(self) -> None:
        self.finish()
        super().close()


_FORMATTER = logging.Formatter()
_CACHE_KEY = "rage.wanted_level"  # a str key never collides with logging's int levels


class LogCapture:
    """Routes every record to ``handler`` while the console keeps its former behaviour.

    To see DEBUG records the root logger must let them through, but lowering its level
    would also show them on every console handler (and stop ``logging.lastResort`` only
    when a handler is added to the root, which would also turn a later
    ``logging.basicConfig()`` into a no-op). So no handler is added anywhere: the root
    level the app asks for is remembered (``root.setLevel`` is intercepted, which also
    covers ``basicConfig`` and ``dictConfig``), the real root level is DEBUG, and
    ``Logger.callHandlers`` hands every record to ``handler`` but lets the app's handlers
    (and lastResort) see only the records the app's own levels would have let through.
    """

    def __init__(self, handler: logging.Handler) -> None:
        self.handler = handler
        self.active = False
        self._root = logging.getLogger()
        self._wanted_root_level = self._root.level
        self._orig_call_handlers: Callable[[logging.Logger, logging.LogRecord], None] | None
        self._orig_call_handlers = None
        self._patched_call_handlers: object = None

    def wanted_level(self, logger: logging.Logger) -> int:
        """The effective level ``logger`` would have without rage."""
        lg: logging.Logger | None = logger
        root = self._root
        while lg is not None:
            if lg is root:
                return self._wanted_root_level
            if lg.level:
                return lg.level
            lg = lg.parent
        return self._wanted_root_level

    def start(self) -> None:
        """Patch logging; call once."""
        capture = self
        root = self._root
        handler = self.handler
        orig = logging.Logger.callHandlers
        self._orig_call_handlers = orig

        def call_handlers(logger: logging.Logger, record: logging.LogRecord) -> None:
            if capture.active:
                handler.handle(record)
                # logging's per-logger level cache is cleared on every setLevel anywhere,
                # which is exactly when the wanted level can change: keep ours in it
                cache = getattr(logger, "_cache", None)
                wanted = cache.get(_CACHE_KEY) if cache is not None else None
                if wanted is None:
                    wanted = capture.wanted_level(logger)
                    if cache is not None:
                        cache[_CACHE_KEY] = wanted
                if record.levelno < wanted:
                    return
            orig(logger, record)

        orig_set_level = logging.Logger.setLevel

        def set_root_level(level: int | str) -> None:
            # remember what the app asked for; keep letting DEBUG (or lower) through
            orig_set_level(root, level)
            capture._wanted_root_level = root.level
            if capture.active:
                orig_set_level(root, min(root.level, logging.DEBUG))

        self._patched_call_handlers = call_handlers
        setattr(logging.Logger, "callHandlers", call_handlers)  # noqa: B010 - mypy: method
        root.setLevel = set_root_level  # type: ignore[method-assign]
        self.active = True
        orig_set_level(root, min(self._wanted_root_level, logging.DEBUG))

    def stop(self) -> None:
        """Undo :meth:`start` (when another library patched on top of us, become a no-op)."""
        if not self.active:
            return
        self.active = False
        root = self._root
        with contextlib.suppress(AttributeError):
            del root.setLevel
        root.setLevel(self._wanted_root_level)
        if logging.Logger.callHandlers is self._patched_call_handlers and self._orig_call_handlers:
            setattr(logging.Logger, "callHandlers", self._orig_call_handlers)  # noqa: B010
