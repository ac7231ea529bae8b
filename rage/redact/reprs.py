"""Containers on one line, as Python's repr and JSON print them: ``('alice', 'x')``,
``["x"]``, ``{'tok': 'x', 'id': 7}``. Parsed just enough to find their elements: strings
(with a Python prefix, ``b'x'``), brackets and separators; what is inside a string never
opens or closes anything.
"""

from __future__ import annotations

import re

from rage.redact.regexcache import compiled

# a string literal, as Python's repr (with its prefix, `b'x'`) and JSON write it
LITERAL = rb"[bBrRuU]{0,2}(?:'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\")"
# a literal, a bracket, a separator, or anything else up to one of them
_TOKEN = compiled(LITERAL + rb"|[()\[\]{},:]|[^()\[\]{},:'\"]+|['\"]")
STRING = compiled(rb"([bBrRuU]{0,2}['\"])(.*)(['\"])\Z", re.S)
CLOSE = {ord("("): ord(")"), ord("["): ord("]"), ord("{"): ord("}")}

# top-level elements as (start, colon or -1, end); direct child containers as (open, end);
# the position after the close
Box = tuple[list[tuple[int, int, int]], list[tuple[int, int]], int]


def parse(s: bytes, pos: int) -> Box | None:
    """The container opening at ``s[pos]`` (``(``, ``[`` or ``{``): its top-level elements
    as (start, colon or -1, end), its direct child containers as (open, end), and the
    position after its close; None if it does not close on this line."""
    if pos >= len(s) or s[pos] not in CLOSE:
        return None
    stack = [s[pos]]
    child = pos
    elements: list[tuple[int, int, int]] = []
    children: list[tuple[int, int]] = []
    start, colon = pos + 1, -1
    for m in _TOKEN.finditer(s, pos + 1):
        t, at = m[0], m.start()
        c = t[0] if len(t) == 1 else -1
        if c in CLOSE:
            if len(stack) == 1:
                child = at
            stack.append(c)
        elif c in (ord(")"), ord("]"), ord("}")):
            if c != CLOSE[stack.pop()]:
                return None
            if not stack:
                if s[start:at].strip():
                    elements.append(_strip(s, start, colon, at))
                return elements, children, at + 1
            if len(stack) == 1:
                children.append((child, at + 1))
        elif len(stack) == 1 and c == ord(","):
            elements.append(_strip(s, start, colon, at))
            start, colon = at + 1, -1
        elif len(stack) == 1 and c == ord(":") and colon < 0:
            colon = at
        elif b"\n" in t:
            return None
    return None


def _strip(s: bytes, a: int, colon: int, b: int) -> tuple[int, int, int]:
    while a < b and s[a] in b" \t":
        a += 1
    while b > a and s[b - 1] in b" \t":
        b -= 1
    return a, colon, b
