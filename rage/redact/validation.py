"""What validation errors quote: the input a field rejected, under the field's name on
another line or in another member.

- pydantic's ``ValidationError`` as it prints: the field's location on a line of its own,
  then ``  Input should be ... [type=..., input_value='x', input_type=str]``. Settings
  loaded from the environment (pydantic-settings) print a rejected ``DB_PASSWORD`` so;
- the same errors as data (``e.errors()``, FastAPI's 422 body): ``{"loc": ["body",
  "password"], "msg": "...", "input": "x"}``, in JSON or as a Python repr, on one line or
  pretty-printed.

The value goes when the location's last name looks secret; what is evidence (a number under
no password's name, a boolean, a placeholder) stays.
"""

from __future__ import annotations

from collections.abc import Callable

from rage.redact.regexcache import compiled
from rage.redact.values import kept
from rage.sensitive import looks_secret_name

Count = Callable[[str], None]
REDACTED = b"[REDACTED:secret-field]"

INPUT_VALUE_NEEDLE = b"input_value="
LOC_NEEDLES = (b'"loc"', b"'loc'")

_INPUT_VALUE = compiled(rb"\[type=[\w.-]{1,64}, input_value=(.*), input_type=\w{1,64}\]")
_LOC_LINE = compiled(rb"[ \t]*([\w.\[\]-]{1,256})[ \t]*\r?")
_REACH = 12  # lines a pretty-printed error object may take from its loc to its input
_LOC = compiled(rb"""(["'])loc\1[ \t]*:[ \t]*[\[(]((?:[^\])'"]|"[^"\n]*"|'[^'\n]*')*)[\])]""")
_NAME_IN_LOC = compiled(rb"""["']([^"'\n]*)["']""")
_INPUT = compiled(rb"""(["'])input\1[ \t]*:[ \t]*"""
                  rb"""(?:"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'|(-?\d[\d.]*))""")


def _secret(name: str, value: bytes) -> bool:
    return looks_secret_name(name) and not kept(value, name)


def input_values(lines: list[bytes], at: list[int], count: Count) -> bool:
    """pydantic's printed errors: ``input_value=`` under a secret field's location line."""
    hit = False
    for i in dict.fromkeys(at):
        m = _INPUT_VALUE.search(lines[i])
        j = i - 1
        while j >= 0 and i - j < 4 and lines[j].startswith(b"  "):  # a message's own lines
            j -= 1
        loc = _LOC_LINE.fullmatch(lines[j]) if m is not None and j >= 0 else None
        if m is None or loc is None:
            continue
        name = loc[1].rsplit(b".", 1)[-1].decode("utf-8", "replace")
        value = m[1]
        quoted = len(value) >= 2 and value[:1] in (b"'", b'"') and value[-1:] == value[:1]
        inner = value[1:-1] if quoted else value
        if not _secret(name, inner) or (not quoted and not inner.lstrip(b"-").isdigit()):
            continue  # a dict or list: its members were redacted by their own keys
        new = value[:1] + REDACTED + value[-1:] if quoted else REDACTED
        lines[i] = lines[i][:m.start(1)] + new + lines[i][m.end(1):]
        count("secret-field")
        hit = True
    return hit


def error_inputs(lines: list[bytes], at: list[int], count: Count) -> bool:
    """Errors as data: the ``input`` member of an object whose ``loc`` ends in a secret
    name, on the loc's line or within :data:`_REACH` lines after it."""
    spans: set[tuple[int, int, int]] = set()  # (line, start, end) of each value
    for i in dict.fromkeys(at):
        text = b"\n".join(lines[i:i + _REACH])
        for m in _LOC.finditer(text):
            names = _NAME_IN_LOC.findall(m[2])
            name = names[-1].decode("utf-8", "replace") if names else ""
            nxt = _LOC.search(text, m.end())
            v = _INPUT.search(text, m.end(), nxt.start() if nxt is not None else len(text))
            if v is None:
                continue
            g = next(g for g in (2, 3, 4) if v[g] is not None)
            if _secret(name, v[g]):
                a = v.start(g) - (text.rfind(b"\n", 0, v.start(g)) + 1)
                spans.add((i + text.count(b"\n", 0, v.start(g)), a, a + len(v[g])))
    for k, a, b in sorted(spans, reverse=True):
        lines[k] = lines[k][:a] + REDACTED + lines[k][b:]
        count("secret-field")
    return bool(spans)
