"""What a parsed crash report is, and the bounds every parser keeps.

The text comes from a run's output, which on the receiver is a stranger's upload: every
line is cut before any pattern sees it, and every list is bounded, so the cost of parsing
is linear in (and capped by) the text whatever it holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TEXT_MAX = 1024 * 1024  # the tail of the output that is read: a crash report is at its end
LINE_MAX = 8 * 1024  # characters of a line any pattern sees
LINES_MAX = 20_000  # lines read from that tail
FRAMES_MAX = 128  # frames kept per stack (deeper ones are callers of callers)
CHAIN_MAX = 8  # exceptions kept of a Java "Caused by:" chain
MESSAGE_MAX = 300  # characters of a message kept


@dataclass(frozen=True)
class Frame:
    """One stack frame as printed: ``module`` is the crate, package, class or file it
    belongs to; ``file`` and ``line`` are for display only (never in a signature)."""

    function: str
    module: str
    in_app: bool
    file: str = ""
    line: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"function": self.function, "module": self.module, "in_app": self.in_app,
                "file": self.file, "line": self.line}


@dataclass(frozen=True)
class Crash:
    """A crash report: ``kind`` names the runtime's format (rust-panic, go-panic,
    go-fatal, node, java, cpp-terminate, glibc-abort, glibc-assert, asan, lsan, ubsan,
    python-faulthandler, dotnet, ruby);
    ``type`` is what failed (exception class, sanitizer bug type, normalised panic
    message); ``frames`` innermost first; ``causes`` a Java chain's later links."""

    kind: str
    type: str
    message: str
    frames: tuple[Frame, ...] = ()
    start: int = 0  # line index where the report begins: the last report wins
    causes: tuple[Crash, ...] = field(default_factory=tuple)
    thread: str = ""  # the panicking thread's name, where the runtime prints one


def frames_from(lines: list[str], at: int, frame: Callable[[str], Frame | None], *,
                limit: int = FRAMES_MAX) -> tuple[Frame, ...]:
    """The frames of ``lines`` from ``at`` on, while ``frame`` reads one from each line
    (None ends the stack), at most ``limit``: every runtime's stack is a run of such lines."""
    frames: list[Frame] = []
    for line in lines[at:at + limit]:
        f = frame(line)
        if f is None:
            break
        frames.append(f)
    return tuple(frames)
