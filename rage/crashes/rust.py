"""Rust panics: ``thread 'main' panicked at src/main.rs:4:5:`` and the message on the next
line (Rust >= 1.73; ``(1234)`` after the thread name since 1.8x), or the older
``thread 'main' panicked at 'message', src/main.rs:4:5``; then, with RUST_BACKTRACE=1 or
full, ``stack backtrace:`` and numbered frames ``  3: crate::module::function`` (full:
``  3:   0x55d1... - crate::module::function::h0123456789abcdef``), each followed by
``             at path:line:col`` when debug info is there."""

from __future__ import annotations

import re
from dataclasses import replace

from rage.crashes import rules, symbols
from rage.crashes.model import FRAMES_MAX, MESSAGE_MAX, Crash, Frame
from rage.crashes.text import basename, normalise, split_location

_PANICKED = re.compile(r"^thread '(?P<thread>[^']{0,200})'(?: \(\d{1,20}\))? "
                       r"panicked at (?P<rest>.+)$")
_FRAME = re.compile(r"^ {0,8}\d{1,5}: {1,8}(?:0x[0-9a-fA-F]{1,32} - )?(?P<func>\S.*)$")
_AT = re.compile(r"^ {8,40}at (?P<loc>\S.*)$")


_JOINED = "called `Result::unwrap()` on an `Err` value: Any { .. }"


def parse(lines: list[str]) -> Crash | None:
    panics = [i for i in range(len(lines) - 1, -1, -1)
              if lines[i].startswith("thread '") and " panicked at " in lines[i]][:2]
    if not panics:
        return None
    last = _at(lines, panics[0])
    if last and len(panics) > 1 and last.message.startswith(_JOINED):
        # `handle.join().unwrap()` re-panics with Any { .. }: the thread's panic is the cause
        return _at(lines, panics[1]) or last
    return last


def _at(lines: list[str], start: int) -> Crash | None:
    if not (m := _PANICKED.match(lines[start])):
        return None
    rest = m["rest"]
    if rest.startswith("'"):  # before 1.73: panicked at 'message', src/main.rs:4:5
        message, _sep, location = rest[1:].rpartition("', ")
        after = start + 1
    else:
        location = rest.removesuffix(":")
        message = lines[start + 1] if start + 1 < len(lines) else ""
        after = start + 2
    path, _line = split_location(location.strip())
    frames: list[Frame] = []
    for i in range(after, min(len(lines), after + 8)):
        if lines[i].startswith("stack backtrace:"):
            frames = _frames(lines, i + 1)
            break
    if not frames:
        # no backtrace: where it panicked is the only frame there is
        frames = [Frame("", basename(path), not rules.library_path(path), path, _line)]
    return Crash("rust-panic", normalise(message) or "panic", message[:MESSAGE_MAX],
                 tuple(frames), start, thread=normalise(m["thread"]))


def _frames(lines: list[str], at: int) -> list[Frame]:
    frames: list[Frame] = []
    i = at
    while i < len(lines) and len(frames) < FRAMES_MAX:
        m = _FRAME.match(lines[i])
        if not m:
            break
        func = symbols.normalise(m["func"])
        path, line = "", None
        while i + 1 < len(lines) and (a := _AT.match(lines[i + 1])):
            path, line = split_location(a["loc"])  # inlined frames: the last is the caller
            i += 1
        library = rules.library_name("rust", func) or rules.library_path(path)
        frames.append(Frame(func, func.rpartition("::")[0] or basename(path), not library,
                            path, line))
        i += 1
    return frames


def attribute(crash: Crash, app: str) -> Crash:
    """Frames without a source path (release builds have none for the app and its
    dependencies) are told apart by crate: when the app's crate (its name, ``-`` as
    ``_``) is on the stack, other crates without a path are its dependencies."""
    crate = app.replace("-", "_") + "::"
    if not any(f.function.startswith(crate) for f in crash.frames):
        return crash
    frames = tuple(
        replace(f, in_app=f.function.startswith(crate)) if not f.file and f.in_app else f
        for f in crash.frames)
    return replace(crash, frames=frames)
