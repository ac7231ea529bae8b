"""What the terminal did to the text, undone before matching: escape sequences, ``\\r``
redraws and backspace overstrike.

JSON-escaped slashes in a URL (``https:\\/\\/host\\/path``) are written plainly too, and the
lines of ``curl --trace-ascii`` that its 64-byte width cut are joined again (see
:func:`unwrap_traces`).

A token printed in colour (``\\e[32mghp_...\\e[0m``), a ``key=value`` cut by ``\\e[01;31m``
from ``grep --color``, or a password typed and erased on a redrawn line would otherwise not
match. The bundle holds the normalised text, the very bytes that were matched: nothing is
re-joined after redaction, so no later step (the summary's plain-text view included) can
put a secret back together.

Per line: escape sequences (CSI, OSC, charset and keypad selections) are removed; then, if
the line holds a ``\\r`` that does not end it or a backspace, it is replayed as a terminal
would draw it (``\\r`` back to column 0, backspace one column left, later characters overwrite
earlier ones) and the final picture is kept, with a blank where the last redraw's text meets
word characters of the line before it (a shorter redraw leaves the old line's end glued to
the new text on screen). A ``\\r`` just before the ``\\n`` (CRLF, a pty's line ends) is kept
as it is.
"""

from __future__ import annotations

import re

from rage.redact.regexcache import compiled

# CSI (colours, erase, cursor moves; with private parameters `?`), OSC (titles, hyperlinks;
# ended by BEL or ST, or cut off at the line end), two-byte escapes (charset selection
# `\e(B`, keypad `\e=`, save/restore cursor `\e7`), then any stray ESC
_ESCAPES = compiled(
    rb"\x1b\[[0-?]*[ -/]*[@-~]?"
    rb"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?"
    rb"|\x1b[()*+\-./][ -~]?"
    rb"|\x1b[ -~]?"
)
# a URL whose slashes JSON escaped (`https:\/\/hooks.slack.com\/services\/...`, as PHP and
# some loggers write them): written plainly, so a webhook's format matches
_ESCAPED_URL = compiled(rb"[A-Za-z][A-Za-z0-9+.\-]{0,30}:\\/\\/[^\s\"'<>]{1,4096}")
# (`\r\r\n` ends a line too: a pty's ONLCR turned a program's own CRLF into it, as apt's
# term.log keeps it)
_DRAWN = compiled(rb"[^\n]*(?:\x08|\r(?!\r*(?:\n|\Z)))[^\n]*")


# a record of `curl --trace-ascii` (`=> Send header, 330 bytes (0x14a)`, `<= Recv data...`),
# then its data a line per 64 bytes or line end, each after its offset: `004f: ...`
TRACE_MARKS = (b"=> Send ", b"<= Recv ")
_TRACE_LINE = compiled(rb"([0-9a-f]{4,8}): ([^\n]*?)(\r?)")
_TRACE_WIDTH = 64


def needs_normalizing(buf: bytes) -> bool:
    """True when ``buf`` holds an escape, a backspace or a ``\\r`` that is not a line end
    (or a record of ``curl --trace-ascii``)."""
    if b"\x1b" in buf or b"\x08" in buf or b":\\/\\/" in buf:
        return True
    if TRACE_MARKS[0] in buf or TRACE_MARKS[1] in buf:
        return True
    n = buf.count(b"\r")
    return bool(n) and n != buf.count(b"\r\n") + buf.endswith(b"\r") and (
        n != buf.count(b"\r\n") + buf.count(b"\r\r"))  # (`\r\r\n`: a line's end too)


def normalize(buf: bytes) -> bytes:
    """The text as the terminal finally showed it (see the module docstring)."""
    if not needs_normalizing(buf):
        return buf
    if b"\x1b" in buf:
        buf = _ESCAPES.sub(b"", buf)
    if b"\x08" in buf or b"\r" in buf:
        buf = _DRAWN.sub(_replay, buf)
    if b":\\/\\/" in buf:
        buf = _ESCAPED_URL.sub(lambda m: m.group(0).replace(b"\\/", b"/"), buf)
    if TRACE_MARKS[0] in buf or TRACE_MARKS[1] in buf:
        buf = unwrap_traces(buf)
    return buf


def unwrap_traces(buf: bytes) -> bytes:
    """``curl --trace-ascii`` prints a record's data 64 bytes a line, each line after its
    offset, and starts a new line at each line end of the data: a header's long token, or a
    form body's parameters, run over several lines (``004f: Authorization: Bearer eyJ...``,
    ``008f: WIiOi...``), where neither the name nor the rest of the value would match. A
    line whose offset is 64 past the line before it, which shows 64 bytes, continues that
    line: it is joined to it, its offset dropped (a line that ended in the data moves the
    next offset by its line end too)."""
    lines = buf.split(b"\n")
    out: list[bytes] = []
    prev: re.Match[bytes] | None = None  # the last trace line, if the line before was one
    for line in lines:
        m = _TRACE_LINE.fullmatch(line)
        if m is not None and prev is not None and len(prev[2]) == _TRACE_WIDTH and (
                int(m[1], 16) == int(prev[1], 16) + _TRACE_WIDTH):
            last = out[-1]
            cut = len(last) - len(prev[3])  # before its `\r`, if it has one
            out[-1] = last[:cut] + m[2] + m[3]
        else:
            out.append(line)
        prev = m
    return b"\n".join(out)


def trace_record_start(buf: bytes, lo: int, limit: int) -> int:
    """Where a stream may end a block at ``limit`` (a line's start) without parting a curl
    trace's record: ``limit``, unless the line before it is a record's ``=> Send``/``<=
    Recv`` line or one of its data lines; then the start of that record, if it is at ``lo``
    or after. A block is unwrapped (:func:`unwrap_traces`) only if it holds a record's
    start, and a line the width cut must meet the line that continues it. A longer record
    is parted where it is."""
    end = limit - 1  # the newline that ends the line before ``limit``
    if end < lo or buf[end:limit] != b"\n":
        return limit
    start = buf.rfind(b"\n", 0, end) + 1
    if not buf.startswith(TRACE_MARKS, start) and _TRACE_LINE.fullmatch(buf, start, end) is None:
        return limit
    while start >= lo:
        if buf.startswith(TRACE_MARKS, start):
            return start
        if start == 0 or _TRACE_LINE.fullmatch(buf, start, end) is None:
            break  # lines with offsets (xxd), but no curl record around them
        end = start - 1
        start = buf.rfind(b"\n", 0, end) + 1
    return limit


def _replay(m: re.Match[bytes]) -> bytes:
    line = m.group(0)
    body = line.rstrip(b"\r")
    crlf = line[len(body):]
    line = body
    text = line.decode("utf-8", "surrogateescape")
    cells: list[str] = []
    col = reach = 0  # reach: how far the last redraw (after the last `\r`) wrote
    redrawn = False
    for ch in text:
        if ch == "\r":
            col = reach = 0
            redrawn = True
        elif ch == "\b":
            col = max(0, col - 1)
        else:
            if col < len(cells):
                cells[col] = ch
            else:
                cells.append(ch)
            col += 1
            reach = max(reach, col)
    # a shorter last redraw leaves the old line's end on screen, glued to the new text
    # (`working...\r` then a 23-character token shows `sm_pat_...Zr2rking...`): a blank
    # where they meet, if both sides are word characters, so the newer is matched as written
    if redrawn and 0 < reach < len(cells) and _word_char(cells[reach - 1]) and _word_char(
            cells[reach]):
        cells.insert(reach, " ")
    out = "".join(cells).encode("utf-8", "surrogateescape")
    return out + crlf


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_-+/="
