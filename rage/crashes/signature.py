"""The readable signature of a parsed crash: which reports are "the same failure".

- Native stacks (C, C++, Rust, sanitizers) follow Socorro's ``CSignatureTool.generate``:
  start below a sentinel (Rust's panic entry), skip irrelevant frames (abort, raise,
  ``__libc_start_main``, the panic machinery, sanitizer interceptors), keep prefix frames
  (allocators, library frames above the app's) and add the next one, stop at the first
  other frame. Names are normalised (:mod:`rage.crashes.symbols`).
- Managed stacks (Java, Node, Go, .NET, Ruby, Python's faulthandler) follow Sentry's
  in-app grouping: the type and the app's frames (module and function, innermost first,
  recursion collapsed), library frames only when there are no app frames; for a chain of
  causes (Java ``Caused by:``, .NET inner exceptions), every link.
- Never line numbers, paths, addresses or values; a message stands in (values replaced by
  placeholders) only where there are no frames at all (C++ terminate, glibc aborts).
"""

from __future__ import annotations

from rage.crashes import rules
from rage.crashes.model import Crash, Frame
from rage.crashes.text import normalise

NATIVE_FRAMES = 6  # Socorro's signatures are rarely more than a few frames long
MANAGED_FRAMES = 5  # the innermost app frames: deeper callers rarely tell failures apart
CHAIN_FRAMES = 3  # per link of a chain of causes
TEXT_MAX = 1000
NATIVE = frozenset({"rust-panic", "asan", "lsan", "ubsan", "cpp-terminate", "glibc-abort",
                    "glibc-assert"})


def signature_text(crash: Crash) -> str:
    if crash.kind in NATIVE:
        names = native_frames(crash.frames)
        head = f"{crash.kind}: {crash.type}"
        if crash.kind == "cpp-terminate" and crash.message:
            head += f": {normalise(crash.message)}"
    else:
        names = managed_frames(crash.frames, MANAGED_FRAMES if not crash.causes else CHAIN_FRAMES)
        head = f"{crash.kind}: {crash.type}"
    text = head + (f" in {' < '.join(names)}" if names else "")
    if crash.kind == "rust-panic" and crash.thread and not any(f.function for f in crash.frames):
        # without a backtrace the file is all there is of where: which thread panicked
        # (main or a worker) is the only other stable fact
        text += f" (thread '{crash.thread}')"
    for cause in crash.causes:
        inner = managed_frames(cause.frames, CHAIN_FRAMES)
        text += f"; caused by {cause.type}" + (f" in {' < '.join(inner)}" if inner else "")
    return text[:TEXT_MAX]


def native_frames(frames: tuple[Frame, ...]) -> list[str]:
    """Socorro's walk: skip irrelevant, accumulate prefixes, stop at the first other."""
    start = 0
    for i, f in enumerate(frames):
        if rules.sentinel(f.function):
            start = i + 1
    frames = frames[start:]
    last_app = max((i for i, f in enumerate(frames) if f.in_app), default=-1)
    out: list[str] = []
    for i, f in enumerate(frames):
        name = f.function or f.module or "?"
        if rules.skipped(name) or rules.sanitizer_path(f.file):
            continue
        out.append(name)
        # a library frame with the app's code below it only says where the bug surfaced
        if len(out) >= NATIVE_FRAMES or not (rules.prefix(name) or
                                             (not f.in_app and i < last_app)):
            break
    if not out and frames:
        out.append(frames[0].function or frames[0].module or "?")  # all irrelevant: the top
    return out


def managed_frames(frames: tuple[Frame, ...], limit: int) -> list[str]:
    """Sentry's in-app rule: app frames, else library frames; innermost first."""
    chosen = [f for f in frames if f.in_app] or list(frames)
    out: list[str] = []
    for f in chosen:
        name = f"{f.module}.{f.function}" if f.module else f.function
        if out and out[-1] == name:
            continue
        if len(out) >= 3 and out[-2] == name and out[-3] == out[-1]:
            continue  # a-b-a-b recursion reads as a-b
        out.append(name)
        if len(out) >= limit:
            break
    return out
