"""Sanitizer reports (compiler-rt / gcc's libsanitizer, ``sanitizer_common``):

- AddressSanitizer: ``==123==ERROR: AddressSanitizer: heap-use-after-free on address 0x...``
  then the crashing stack ``    #0 0x55d1c in fn /path/file.c:12`` up to a blank line.
- LeakSanitizer: ``==123==ERROR: LeakSanitizer: detected memory leaks`` then
  ``Direct leak of 40 byte(s) in 1 object(s) allocated from:`` and a stack.
- UBSan: ``file.c:5:12: runtime error: signed integer overflow: ...``, with a stack when
  ``UBSAN_OPTIONS=print_stacktrace=1``.
"""

from __future__ import annotations

import re

from rage.crashes import rules, symbols
from rage.crashes.model import MESSAGE_MAX, Crash, Frame, frames_from
from rage.crashes.text import basename, normalise, split_location

_ERROR = re.compile(r"^==\d{1,10}==ERROR: (?P<tool>\w{1,40}Sanitizer): (?P<what>[\w-]{1,100})"
                    r"(?P<rest>.*)$")
_FRAME = re.compile(r"^ {2,8}#\d{1,5} 0x[0-9a-fA-F]{1,32}(?: in (?P<rest>.*)| (?P<mod>\(.*))$")
_UBSAN = ": runtime error: "


def parse(lines: list[str]) -> Crash | None:
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if line.startswith("==") and "Sanitizer: " in line and (m := _ERROR.match(line)):
            return _sanitizer(lines, i, m)
    # UBSan goes on after a report unless told to halt: the first one is the cause
    for i, line in enumerate(lines):
        if _UBSAN in line:
            crash = _ubsan(lines, i)
            if crash:
                return crash
    return None


def _sanitizer(lines: list[str], i: int, m: re.Match[str]) -> Crash:
    tool, what = m["tool"], m["what"]
    if tool == "LeakSanitizer":
        kind, what = "lsan", "memory-leak"
    else:
        kind = "asan" if tool == "AddressSanitizer" else tool.lower()
    for j in range(i + 1, min(len(lines), i + 40)):
        if _FRAME.match(lines[j]):
            return Crash(kind, what, (what + m["rest"])[:MESSAGE_MAX],
                         frames_from(lines, j, _frame_line), i)
    return Crash(kind, what, (what + m["rest"])[:MESSAGE_MAX], (), i)


def _ubsan(lines: list[str], i: int) -> Crash | None:
    loc, _sep, message = lines[i].partition(_UBSAN)
    path, line = split_location(loc)
    if line is None:
        return None
    frames: tuple[Frame, ...] = ()
    if i + 1 < len(lines) and _FRAME.match(lines[i + 1]):
        frames = frames_from(lines, i + 1, _frame_line)
    if not frames:
        # without print_stacktrace=1 the source file is all UBSan says of where
        frames = (Frame("", basename(path), not rules.library_path(path), path, line),)
    return Crash("ubsan", normalise(message), message[:MESSAGE_MAX], frames, i)


def _frame_line(line: str) -> Frame | None:
    m = _FRAME.match(line)
    return _frame(m["rest"] or "", m["mod"] or "") if m else None


def _frame(rest: str, module: str) -> Frame:
    # "fn(int) /path/file.c:12:3", "malloc (/lib/libasan.so.8+0xd9f6d) (BuildId: ab12)",
    # "_start (/tmp/a.out+0x2320)", or no function at all: "(/tmp/a.out+0x2320)"
    rest = rest.split(" (BuildId: ", 1)[0]
    if not rest:
        return Frame("<unknown>", module.strip("()").split("+", 1)[0], False, "", None)
    if rest.endswith(")") and " (" in rest and "+0x" in rest.rpartition(" (")[2]:
        func, _sep, mod = rest[:-1].rpartition(" (")
        path, line = mod.split("+", 1)[0], None
    elif " " in rest and ":" in rest.rpartition(" ")[2]:
        func, _sep, loc = rest.rpartition(" ")
        path, line = split_location(loc)
    else:
        func, path, line = rest, "", None
    library = rules.library_path(path) or not path
    return Frame(symbols.normalise(func), basename(path), not library, path, line)
