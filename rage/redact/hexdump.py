"""Hex dumps: the bytes a dump shows, redacted as the text they are.

``curl --trace``, ``xxd``, ``hexdump -C``, ``od -A x -t x1z`` and ``tcpdump -X`` print data
16 (or 32) bytes a line, as hex and again as characters: a token in an ``Authorization``
header runs over several lines, in two columns, and neither column of any line holds a
match. A run of dump lines is decoded to its bytes, those are redacted like any text, and
each byte a redaction removed is masked where the dump shows it: ``**`` in the hex column,
``*`` in the characters. The dump keeps its layout (and the bundle its offsets and every
other byte); the kinds removed are counted as elsewhere.

A line is a dump's only if its characters column is exactly what its hex bytes render
(printable ASCII as itself, every other byte as ``.``; tcpdump shows a blank as ``.`` too),
so text that merely starts with a hex number is never touched.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# where a dump's line may start: an offset (4 to 8 hex digits, `0x` before it in tcpdump,
# a colon after it but in hexdump and od), one or two blanks, a byte. Searched after a line
# end (a literal first: `re` skips to each newline, 5 ms per 2 MB of log where `(?:^|\n)`
# took 88) and matched at the start of a text
_LINE_START = rb"[ \t]*(?:0x)?[0-9a-fA-F]{4,8}:? {1,2}[0-9a-fA-F]{2}"
_AFTER_NEWLINE = re.compile(b"\n" + _LINE_START)
_AT_START = re.compile(_LINE_START)
# the same where a line starts, for Hyperscan (HS_FLAG_MULTILINE: `^` at each line)
EXPRESSION = b"^" + _LINE_START
_HEAD = re.compile(rb"[ \t]*(?:0x)?[0-9a-fA-F]{4,8}:? {1,2}(?=[0-9a-fA-F]{2})")
_GROUP = re.compile(rb"((?:[0-9a-fA-F]{2}){1,4})( {1,2}|\r?$)")
_MAX_GROUPS = 32  # bytes a line shows at most: 32 (xxd -c 32)
_SHOWN = bytes(c if 0x20 <= c < 0x7F else 0x2E for c in range(256))  # `.` for the rest
_GRAPHIC = _SHOWN[:0x20] + b"." + _SHOWN[0x21:]  # tcpdump shows a blank as `.` too
_FRAMES = ((b"", b""), (b"|", b"|"), (b">", b"<"))  # around the characters: xxd, -C, od
_CONTROLS = bytes(0x2E if (c < 0x20 and c not in b"\t\n\r") or c == 0x7F else c
                  for c in range(256))
_LONE_CR = re.compile(rb"\r(?!\n)")
_MARKER = re.compile(rb"\[REDACTED:[a-z0-9-]+\]")
_DIFF_MAX = 16 * 1024  # bytes a run is aligned by difflib at most, when markers cannot
_RUN_MAX = 64 * 1024  # bytes of a run decoded and redacted together

Redact = Callable[[bytes], bytes]


class _Line:
    """A dump line: its bytes, where each byte's hex digits are, where its characters start."""

    __slots__ = ("chars", "data", "hex_at")

    def __init__(self, data: bytes, hex_at: list[int], chars: int) -> None:
        self.data = data
        self.hex_at = hex_at
        self.chars = chars


def present(text: bytes) -> bool:
    """Whether ``text`` may hold a dump's line (the pure-Python scan's test)."""
    return _AT_START.match(text) is not None or _AFTER_NEWLINE.search(text) is not None


def parse(line: bytes) -> _Line | None:
    """``line`` as a dump's line, or None if it is not one."""
    m = _HEAD.match(line)
    if m is None:
        return None
    body = line[:-1] if line.endswith(b"\r") else line
    groups: list[tuple[int, bytes]] = []
    pos = m.end()
    while len(groups) < _MAX_GROUPS and (g := _GROUP.match(body, pos)) is not None:
        groups.append((g.start(1), g[1]))
        pos = g.end()
        if not g[2]:
            break
    # the characters may start like hex (`ab cd`): the longest run of groups whose
    # rendering ends the line, after at least one blank
    for k in range(len(groups), 0, -1):
        start, last = groups[k - 1]
        end = start + len(last)
        data = bytes.fromhex(b"".join(t for _, t in groups[:k]).decode("ascii"))
        tail = body[end:]
        renderings = (data.translate(_SHOWN), data.translate(_GRAPHIC)) if 0x20 in data else (
            data.translate(_SHOWN),)
        for (before, after), shown in ((f, r) for f in _FRAMES for r in renderings):
            column = before + shown + after
            pad = len(tail) - len(column)
            if pad >= 1 and tail.endswith(column) and not tail[:pad].strip(b" "):
                hex_at = [s + i for s, t in groups[:k] for i in range(0, len(t), 2)]
                return _Line(data, hex_at, len(body) - len(after) - len(shown))
    return None


def mask_dumps(text: bytes, redact: Redact) -> bytes:
    """``text`` with what ``redact`` removes from each dump's bytes masked where the dump
    shows them. The same length as ``text``: positions found in it stay valid."""
    lines = text.split(b"\n")
    out = lines[:]
    run: list[tuple[int, _Line]] = []
    size = 0
    changed = False
    for i in range(len(lines) + 1):
        parsed = parse(lines[i]) if i < len(lines) else None
        if parsed is not None and size + len(parsed.data) <= _RUN_MAX:
            run.append((i, parsed))
            size += len(parsed.data)
            continue
        if run:
            changed |= _mask_run(run, out, redact)
            run, size = [], 0
        if parsed is not None:  # a run's size reached: this line starts the next
            run.append((i, parsed))
            size = len(parsed.data)
    return b"\n".join(out) if changed else text


def _mask_run(run: list[tuple[int, _Line]], out: list[bytes], redact: Redact) -> bool:
    # the bytes are data, not a terminal's output: no escape or backspace is replayed
    # (the same length: a control byte becomes `.`, as the dump shows it)
    data = _LONE_CR.sub(b".", b"".join(p.data for _, p in run).translate(_CONTROLS))
    red = redact(data)
    if red == data:
        return False
    masked = _removed(data, red)
    if not masked:
        return False
    first = 0  # the run's byte index of each line's first byte
    for i, p in run:
        n = len(p.data)
        hit = [j for j in range(n) if masked[first + j]]
        if hit:
            line = bytearray(out[i])
            for j in hit:
                h = p.hex_at[j]
                line[h:h + 2] = b"**"
                line[p.chars + j] = 0x2A  # `*`
            out[i] = bytes(line)
        first += n
    return True


def _removed(data: bytes, red: bytes) -> bytearray:
    """A flag per byte of ``data``: 1 where redaction removed it (``red`` is what it made)."""
    flags = bytearray(len(data))
    pieces = _MARKER.split(red)
    spans = _align(data, pieces) if len(pieces) > 1 else None
    if spans is None:
        spans = _diff(data, red)
    for a, b in spans:
        flags[a:b] = b"\x01" * (b - a)
    return flags


def _align(data: bytes, pieces: list[bytes]) -> list[tuple[int, int]] | None:
    """Where the markers between ``pieces`` stand in ``data`` (each replaced at least one
    byte); None if the text between them is not ``data``'s (a name was pseudonymised)."""
    if not data.startswith(pieces[0]):
        return None
    spans = []
    pos = len(pieces[0])
    for k, piece in enumerate(pieces[1:], 1):
        if k == len(pieces) - 1:
            at = len(data) - len(piece)
            if not data.endswith(piece) or at <= pos:
                return None
        else:
            at = data.find(piece, pos + 1)
            if at < 0:
                return None
        spans.append((pos, at))
        pos = at + len(piece)
    return spans


def _diff(data: bytes, red: bytes) -> list[tuple[int, int]]:
    """The bytes of ``data`` that ``red`` does not keep: by difflib for a small run, else
    everything between their common start and end."""
    head = 0
    while head < min(len(data), len(red)) and data[head] == red[head]:
        head += 1
    tail = 0
    while (tail < min(len(data), len(red)) - head
           and data[len(data) - 1 - tail] == red[len(red) - 1 - tail]):
        tail += 1
    mid = data[head:len(data) - tail]
    if len(mid) > _DIFF_MAX:
        return [(head, len(data) - tail)]
    from difflib import SequenceMatcher

    ops = SequenceMatcher(None, mid, red[head:len(red) - tail], autojunk=False).get_opcodes()
    return [(head + a, head + b) for op, a, b, _, _ in ops if op in ("replace", "delete")]
