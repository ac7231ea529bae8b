"""Text for the terminal: untrusted text made inert, and colour only when it is wanted.

A bundle is untrusted (anyone can craft one), and so is recorded output: an escape sequence
printed raw can retitle the window, write the clipboard, clear the screen or fake a line
such as ``checksums: ok``. Everything that comes from a bundle or a record goes through
:func:`clean` (multi-line text) or :func:`clean_line` (names, one-line fields) first.
"""

from __future__ import annotations

import os
import re

import click

# C0 controls but tab and newline, DEL, C1 controls, lone surrogates (undecodable bytes),
# and the bidirectional overrides that can make text read differently from what it is.
# Compiled at their first use, by text that is not all printable: none of these characters
# is (categories Cc, Cs, Cf), and compiling the two took ~8M instructions (their ranges
# past U+00FF), 2% of a small `rage report`, which prints only plain lines.
_UNSAFE = "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]"
_UNSAFE_LINE = "[\x00-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]"
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    if ch in _NAMED:
        return _NAMED[ch]
    c = ord(ch)
    if 0xDC80 <= c <= 0xDCFF:  # surrogateescape: the undecodable byte itself
        return f"\\x{c - 0xDC00:02x}"
    return f"\\x{c:02x}" if c <= 0xFF else f"\\u{c:04x}"


def clean(text: str) -> str:
    """``text`` with every control character but newline and tab shown as an escape."""
    text = text.replace("\r\n", "\n")
    if text.replace("\n", " ").replace("\t", " ").isprintable():
        return text
    return re.compile(_UNSAFE).sub(_escape, text)  # (re keeps it compiled)


def clean_line(text: object) -> str:
    """``text`` as one inert line: newlines and tabs are escaped too."""
    line = str(text)
    if line.isprintable():
        return line
    return re.compile(_UNSAFE_LINE).sub(_escape, line)


def color_enabled() -> bool:
    """False when the user asked for no colour (``NO_COLOR``) or the terminal cannot show it."""
    if os.environ.get("NO_COLOR"):
        return False
    return os.environ.get("TERM", "") != "dumb"


def style(text: str, **kwargs: object) -> str:
    """:func:`click.style` unless colour is off (click itself drops it when not a terminal)."""
    return click.style(text, **kwargs) if color_enabled() else text  # type: ignore[arg-type]
