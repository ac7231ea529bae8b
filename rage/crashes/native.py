"""What the C and C++ runtimes print before they abort:

- libstdc++ (``libsupc++/vterminate.cc``): ``terminate called after throwing an instance
  of 'std::runtime_error'`` then ``  what():  message``; also ``terminate called without
  an active exception`` and ``terminate called recursively``.
- glibc (``malloc/malloc.c`` ``malloc_printerr``, ``debug/fortify_fail.c``):
  ``*** stack smashing detected ***: terminated``, ``free(): invalid pointer`` ...
  (:data:`rage.crashes.rules.GLIBC_MESSAGES`).
- glibc ``assert`` (``assert/assert.c``): ``prog: file.c:12: func: Assertion `x' failed.``
"""

from __future__ import annotations

import re

from rage.crashes import rules, symbols
from rage.crashes.model import MESSAGE_MAX, Crash, Frame
from rage.crashes.text import basename, normalise

_TERMINATE = "terminate called "
_INSTANCE = re.compile(r"^terminate called after throwing an instance of '(?P<type>[^']{1,1000})'$")
_ASSERTION = ": Assertion `"


def parse(lines: list[str]) -> Crash | None:
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if line.startswith(_TERMINATE):
            return _terminate(lines, i)
        if _ASSERTION in line and line.endswith("' failed.") and (c := _assert(line, i)):
            return c
        if line.startswith(rules.GLIBC_MESSAGES):
            return _glibc(line, i)
    return None


def _assert(line: str, i: int) -> Crash | None:
    # "prog: file.c:12: int f(int): Assertion `n < 3' failed." (prog: is optional; the
    # function is its __PRETTY_FUNCTION__, which may hold ": " only inside its arguments)
    head, _sep, expr = line.partition(_ASSERTION)
    parts = head.split(": ", 2)
    if len(parts) == 3 and not _located(parts[1]) and _located(parts[0]):
        parts = [parts[0], ": ".join(parts[1:])]
    elif len(parts) == 3:
        parts = parts[1:]
    if len(parts) != 2 or not _located(parts[0]):
        return None
    path, _colon, lineno = parts[0].rpartition(":")
    frame = Frame(symbols.normalise(parts[1]), basename(path), True, path, int(lineno[:9]))
    expr = expr.removesuffix("' failed.")[:MESSAGE_MAX]
    return Crash("glibc-assert", f"Assertion `{normalise(expr)}' failed", expr, (frame,), i)


def _located(part: str) -> bool:
    path, colon, lineno = part.rpartition(":")
    return bool(colon and path and lineno.isdigit())


def _terminate(lines: list[str], i: int) -> Crash:
    m = _INSTANCE.match(lines[i])
    what = ""
    if i + 1 < len(lines) and lines[i + 1].startswith("  what():  "):
        what = lines[i + 1][len("  what():  "):]
    if m:
        return Crash("cpp-terminate", m["type"], what[:MESSAGE_MAX], (), i)
    reason = lines[i][len(_TERMINATE):].strip() or "terminate"
    return Crash("cpp-terminate", normalise(reason), what[:MESSAGE_MAX], (), i)


def _glibc(line: str, i: int) -> Crash:
    # "*** stack smashing detected ***: terminated" (older glibc: ": ./prog terminated")
    message = line.split(" ***", 1)[0] + " ***" if line.startswith("***") else line
    return Crash("glibc-abort", normalise(message), line[:MESSAGE_MAX], (), i)
