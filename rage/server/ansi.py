"""Terminal output for a web page: SGR colours become CSS classes, every other escape goes.

A recorded terminal run is full of escape sequences (``ESC[01;34m``); shown raw they are
noise. Basic and bright foreground colours, bold, dim, italic and underline are kept as
classes (``fg1`` .. ``fg15``, ``b``, ``d``, ``i``, ``u``) defined in the page's stylesheet;
256-colour, true-colour and background colours, cursor movement, OSC titles and
hyperlinks are dropped. Text is escaped here: the result is safe HTML (``Markup``).
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

# CSI ... final byte, OSC ... BEL/ST, two-byte escapes, and stray C0 controls but \t
_ESCAPES = re.compile(
    r"\x1b\[(?P<params>[0-?]*)[ -/]*(?P<final>[@-~])"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[@-Z\\-_]?"
    r"|[\x00-\x08\x0b-\x1f\x7f]")
_ANY_ESCAPE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def strip(text: str) -> str:
    """``text`` without any escape sequence or control character (tabs kept)."""
    return _ESCAPES.sub("", text) if _ANY_ESCAPE.search(text) else text


class Styler:
    """Renders lines one after another, carrying the colour state across them.

    At most ``max_spans`` styled spans are produced in all; after that the rest is plain
    (a hostile log made of escapes must not multiply the page).
    """

    def __init__(self, max_spans: int = 2000) -> None:
        self.fg: int | None = None
        self.attrs: set[str] = set()
        self.spans_left = max_spans

    def _apply(self, params: str) -> None:
        codes = [int(c) if c.isdigit() else 0 for c in params.split(";")] if params else [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                self.fg, self.attrs = None, set()
            elif c in (1, 2, 3, 4):
                self.attrs.add("bdiu"[c - 1])
            elif c == 22:
                self.attrs -= {"b", "d"}
            elif c == 23:
                self.attrs.discard("i")
            elif c == 24:
                self.attrs.discard("u")
            elif 30 <= c <= 37:
                self.fg = c - 30
            elif 90 <= c <= 97:
                self.fg = c - 90 + 8
            elif c == 39:
                self.fg = None
            elif c in (38, 48):  # extended colour: skip its arguments
                i += 2 if i + 1 < len(codes) and codes[i + 1] == 5 else 4
            i += 1

    def _classes(self) -> str:
        parts = sorted(self.attrs)
        if self.fg is not None:
            parts.append(f"fg{self.fg}")
        return " ".join(parts)

    def line(self, text: str) -> Markup:
        """One line as safe HTML."""
        if not _ANY_ESCAPE.search(text):
            return self._segment(text)
        out: list[str] = []
        pos = 0
        for m in _ESCAPES.finditer(text):
            if m.start() > pos:
                out.append(self._segment(text[pos:m.start()]))
            pos = m.end()
            if m.group("final") == "m":
                self._apply(m.group("params") or "")
        if pos < len(text):
            out.append(self._segment(text[pos:]))
        return Markup("".join(out))

    def _segment(self, text: str) -> Markup:
        cls = self._classes()
        if not cls or self.spans_left <= 0:
            return escape(text)
        self.spans_left -= 1
        return Markup('<span class="{}">{}</span>').format(cls, text)
