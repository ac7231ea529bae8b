"""Bounded reading of output text and the normalisation of messages into types."""

from __future__ import annotations

import re

from rage.crashes.model import LINE_MAX, LINES_MAX, MESSAGE_MAX, TEXT_MAX

_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[A-Za-z]")
# values that differ between two runs of one failure; each pattern is a single pass with
# no nested repetition (the input is hostile on the receiver)
_VALUES = (
    (re.compile(r'"[^"\n]{0,300}"'), '"<str>"'),
    (re.compile(r"(?<![\w.])(?:~|\.{1,2})?/[^\s:'\"(),]{1,1000}"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]{1,32}\b"), "<hex>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                r"[0-9a-fA-F]{12}\b"), "<uuid>"),
    (re.compile(r"(?<![\w<])-?\d{1,40}(?:\.\d{1,40})?(?![\w>])"), "<N>"),
)


def lines(text: str) -> list[str]:
    """The last lines of ``text`` (its tail of TEXT_MAX characters), each cut to
    LINE_MAX and stripped of ANSI colour codes and a trailing carriage return."""
    tail = text[-TEXT_MAX:]
    out = tail.split("\n")[-LINES_MAX:]
    return [_ANSI.sub("", ln[:LINE_MAX]).rstrip("\r") for ln in out]


def normalise(message: str) -> str:
    """A message with its values (strings, paths, numbers, addresses) as placeholders."""
    msg = " ".join(message[:MESSAGE_MAX * 4].split())
    for pattern, placeholder in _VALUES:
        msg = pattern.sub(placeholder, msg)
    return msg[:MESSAGE_MAX]


def basename(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def split_location(loc: str) -> tuple[str, int | None]:
    """``/a/b.c:12:5`` -> (``/a/b.c``, 12); a location without a line number as is."""
    parts = loc.rsplit(":", 2)
    while len(parts) > 1 and parts[-1].isdigit():
        if len(parts) == 2 or not parts[-2].isdigit():
            return ":".join(parts[:-1]), int(parts[-1][:9])
        parts = parts[:-1]
    return loc, None
