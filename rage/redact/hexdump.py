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

from collections.abc import Callable

from rage.redact.regexcache import compiled

# where a dump's line may start: an offset (4 to 8 hex digits, `0x` before it in tcpdump,
# a colon after it but in hexdump and od), one or two blanks, a byte. Searched after a line
# end (a literal first: `re` skips to each newline, 5 ms per 2 MB of log where `(?:^|\n)`
# took 88) and matched at the start of a text
_LINE_START = rb"[ \t]*(?:0x)?[0-9a-fA-F]{4,8}:? {1,2}[0-9a-fA-F]{2}"
_AFTER_NEWLINE = compiled(b"\n" + _LINE_START)
_AT_START = compiled(_LINE_START)
# for Hyperscan (HS_FLAG_MULTILINE: `^` at each line), a dump's line whose offset ends in
# 0000: its first (and each record's of curl, each packet's of tcpdump), then one every
# 64 KiB of data. The literal makes it nearly free: the same expression without it (any
# offset) made the whole scan 12-38% slower (5 ms more per 20 MB of log, no literal to
# look for). A text that starts within a dump is told by its first line (starts_in_dump).
EXPRESSION = rb"^[ \t]*(?:0x)?[0-9a-fA-F]{0,4}0000:? {1,2}[0-9a-fA-F]{2}"
_HEAD = compiled(rb"[ \t]*(?:0x)?[0-9a-fA-F]{4,8}:? {1,2}(?=[0-9a-fA-F]{2})")
_GROUP = compiled(rb"((?:[0-9a-fA-F]{2}){1,4})( {1,2}|\r?$)")
_GROUPS = compiled(rb"(?:[0-9a-fA-F]{2}){1,4}(?: {1,2}(?:[0-9a-fA-F]{2}){1,4}){0,31}")
_HEX = compiled(rb"(?:[0-9a-fA-F]{2})+")
_MAX_GROUPS = 32  # groups a line shows at most: 32 bytes (xxd -c 32)
_SHOWN = bytes(c if 0x20 <= c < 0x7F else 0x2E for c in range(256))  # `.` for the rest
_GRAPHIC = _SHOWN[:0x20] + b"." + _SHOWN[0x21:]  # tcpdump shows a blank as `.` too
_FRAMES = ((b"", b""), (b"|", b"|"), (b">", b"<"))  # around the characters: xxd, -C, od
_CONTROLS = bytes(0x2E if (c < 0x20 and c not in b"\t\n\r") or c == 0x7F else c
                  for c in range(256))
_LONE_CR = compiled(rb"\r(?!\n)")
_MARKER = compiled(rb"\[REDACTED:[a-z0-9-]+\]")
_DIFF_MAX = 4 * 1024  # bytes between a line's first and last change aligned by difflib at most
_RUN_MAX = 64 * 1024  # bytes of a run decoded and redacted together
_NEAR = 4  # changes closer than this are one (see _diff)

Redact = Callable[[bytes], bytes]


class _Line:
    """A dump line: its bytes, where its hex column is, where its characters start."""

    __slots__ = ("chars", "data", "hex_end", "hex_start")

    def __init__(self, data: bytes, hex_start: int, hex_end: int, chars: int) -> None:
        self.data = data
        self.hex_start, self.hex_end = hex_start, hex_end
        self.chars = chars

    def hex_at(self, line: bytes) -> list[int]:
        """Where each byte's two hex digits are in ``line`` (only for a line to mask)."""
        return [g.start() + i for g in _HEX.finditer(line, self.hex_start, self.hex_end)
                for i in range(0, g.end() - g.start(), 2)]


def present(text: bytes) -> bool:
    """Whether ``text`` may hold a dump's line (the pure-Python scan's test)."""
    return _AT_START.match(text) is not None or _AFTER_NEWLINE.search(text) is not None


def run_start(buf: bytes, lo: int, limit: int) -> int:
    """Where a stream may end a block at ``limit`` (a line's start) without parting a
    dump's lines: ``limit``, unless the line before it is a dump's; then the start of the
    run of dump lines it ends, if that is at ``lo`` or after. A longer run is parted where
    it is (a secret across that cut is decoded in two halves)."""
    end = limit - 1
    if end < lo or buf[end:limit] != b"\n":
        return limit
    start = buf.rfind(b"\n", 0, end) + 1
    if _AT_START.match(buf, start, end) is None or parse(buf[start:end]) is None:
        return limit
    while start > lo:
        before = buf.rfind(b"\n", 0, start - 1) + 1
        if before < lo:
            return limit
        if _AT_START.match(buf, before, start - 1) is None or parse(
                buf[before:start - 1]) is None:
            return start
        start = before
    return start if start >= lo else limit


def starts_in_dump(text: bytes) -> bool:
    """Whether ``text`` starts with what may be a dump's line (a stream's block cut within
    a long dump): the native scan's other test."""
    return _AT_START.match(text) is not None


def parse(line: bytes) -> _Line | None:
    """``line`` as a dump's line, or None if it is not one."""
    m = _HEAD.match(line)
    if m is None:
        return None
    body = line[:-1] if line.endswith(b"\r") else line
    start = m.end()
    g = _GROUPS.match(body, start)
    if g is not None:  # mostly the longest run of groups is the hex column: one try
        found = _column(body, start, g.end())
        if found is not None:
            return found
    # the characters may start like hex (`ab cd`): the longest run of groups whose
    # rendering ends the line, after at least one blank
    ends: list[int] = []
    pos = start
    while len(ends) < _MAX_GROUPS and (h := _GROUP.match(body, pos)) is not None:
        ends.append(h.end(1))
        pos = h.end()
        if not h[2]:
            break
    for end in reversed(ends[:-1] if g is not None and ends and ends[-1] == g.end() else ends):
        found = _column(body, start, end)
        if found is not None:
            return found
    return None


def _column(body: bytes, start: int, end: int) -> _Line | None:
    """The dump line whose hex column is ``body[start:end]``, if what follows it is their
    characters, after at least one blank."""
    data = bytes.fromhex(body[start:end].decode("ascii"))  # blanks between bytes are allowed
    if not 0 < len(data) <= _MAX_GROUPS * 4:
        return None
    tail = body[end:]
    renderings = (data.translate(_SHOWN), data.translate(_GRAPHIC)) if 0x20 in data else (
        data.translate(_SHOWN),)
    for (before, after), shown in ((f, r) for f in _FRAMES for r in renderings):
        column = before + shown + after
        pad = len(tail) - len(column)
        if pad >= 1 and tail.endswith(column) and not tail[:pad].strip(b" "):
            return _Line(data, start, end, len(body) - len(after) - len(shown))
    return None


def mask_dumps(text: bytes, redact: Redact) -> tuple[bytes, list[tuple[int, int]]]:
    """``text`` with what ``redact`` removes from each dump's bytes masked where the dump
    shows them, and where its dump lines are (start, end), in order. The same length as
    ``text``: positions found in it stay valid. The dump lines need no other redaction
    (their characters are their bytes, redacted here), and get none: a masked value would
    otherwise be taken as a value again (`password=**|`)."""
    lines = text.split(b"\n")
    out = lines[:]
    run: list[tuple[int, _Line]] = []
    spans: list[tuple[int, int]] = []
    size = 0
    changed = False
    pos = 0
    for i in range(len(lines) + 1):
        parsed = parse(lines[i]) if i < len(lines) else None
        if parsed is not None:
            spans.append((pos, pos + len(lines[i])))
        if i < len(lines):
            pos += len(lines[i]) + 1
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
    return (b"\n".join(out) if changed else text), spans


def outside(starts: list[int], spans: list[tuple[int, int]]) -> list[int]:
    """The ``starts`` (ascending) that are in none of the ``spans`` (ascending)."""
    kept = []
    k = 0
    for s in starts:
        while k < len(spans) and spans[k][1] < s:
            k += 1
        if k < len(spans) and spans[k][0] <= s <= spans[k][1]:
            continue
        kept.append(s)
    return kept


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
            hex_at = p.hex_at(out[i])
            for j in hit:
                h = hex_at[j]
                line[h:h + 2] = b"**"
                line[p.chars + j] = 0x2A  # `*`
            out[i] = bytes(line)
        first += n
    return True


def _removed(data: bytes, red: bytes) -> bytearray:
    """A flag per byte of ``data``: 1 where redaction removed it (``red`` is what it made).
    Line by line (redaction keeps the lines: a marker holds no newline), each changed line
    aligned by its markers, or by difflib where a name was pseudonymised."""
    from rage.redact.known import marker_spans  # only once a dump held a secret

    flags = bytearray(len(data))
    old_lines, new_lines = data.split(b"\n"), red.split(b"\n")
    if len(old_lines) != len(new_lines):  # a value across lines went whole
        spans = _diff(data, red)
    else:
        spans = []
        pos = 0
        for old, new in zip(old_lines, new_lines, strict=True):
            if old != new:
                pieces = _MARKER.split(new)
                found = marker_spans(old, pieces) if len(pieces) > 1 else None
                spans += [(pos + a, pos + b) for a, b in found or _diff(old, new)]
            pos += len(old) + 1
    for a, b in spans:
        flags[a:b] = b"\x01" * (b - a)
    return flags


def _diff(data: bytes, red: bytes) -> list[tuple[int, int]]:
    """The bytes of ``data`` that ``red`` does not keep: by difflib for a short text, its
    changes a few bytes apart taken together (a pseudonym shares a letter with the name it
    replaced, which is no reason to show it); else everything between their common start
    and end."""
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
    spans: list[tuple[int, int]] = []
    for op, a, b, _, _ in ops:
        if op == "equal":
            continue
        if spans and head + a - spans[-1][1] < _NEAR:
            spans[-1] = (spans[-1][0], head + b)
        else:
            spans.append((head + a, head + b))
    return [(a, b) for a, b in spans if b > a]
