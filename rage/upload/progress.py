"""A one-line progress bar on stderr for big uploads to a terminal; silent otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO

MIN_BYTES = 4 * 1024 * 1024  # smaller uploads finish before a bar is worth drawing
MIN_INTERVAL = 0.1


class TerminalProgress:
    """Callable ``(sent, total)`` that redraws at most every 0.1 s; ``close()`` ends the line."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.last = 0.0
        self.drawn = False

    def __call__(self, sent: int, total: int) -> None:
        now = time.monotonic()
        if sent == 0:
            self.start = now  # a retry starts over
        if total < MIN_BYTES or (now - self.last < MIN_INTERVAL and sent < total):
            return
        self.last = now
        pct = sent * 100 // total if total else 100
        width = 24
        filled = width * pct // 100
        rate = sent / max(now - self.start, 1e-6) / 1e6
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {pct:3d}% "
                          f"{sent / 1e6:.1f}/{total / 1e6:.1f} MB {rate:.1f} MB/s")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def terminal_progress(label: str) -> TerminalProgress | None:
    """A bar when stderr is a terminal, else None (no output in pipes, logs, CI)."""
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    return TerminalProgress(label) if tty else None
