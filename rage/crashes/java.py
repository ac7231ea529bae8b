"""Java and JVM exceptions as ``Throwable.printStackTrace`` writes them (frames start with a tab)::

    Exception in thread "main" java.lang.IllegalStateException: bad config x1
        at App.load(App.java:5)
        at App.main(App.java:8)
    Caused by: java.lang.NumberFormatException: For input string: "x1"
        at java.base/java.lang.Integer.parseInt(Integer.java:668)
        ... 2 more

``Suppressed:`` blocks (indented one tab more) are read past."""

from __future__ import annotations

import re

from rage.crashes import rules
from rage.crashes.model import CHAIN_MAX, MESSAGE_MAX, Crash, Frame, frames_from
from rage.crashes.text import split_location

_TYPE = re.compile(r"^[A-Za-z_$][\w$.]{0,300}$")
_LAMBDA_CLASS = re.compile(r"\$\$Lambda(?:\$\d{1,9})?/0x[0-9a-fA-F]{1,32}")
_LAMBDA_METHOD = re.compile(r"(lambda\$[\w$]{0,200}?)\$\d{1,9}$")
_AT = "\tat "


def parse(lines: list[str]) -> Crash | None:
    for i in range(len(lines) - 2, -1, -1):
        line = lines[i]
        if line.startswith("Caused by: ") or not lines[i + 1].startswith(_AT):
            continue
        head = _header(line.removeprefix("Exception in thread ").lstrip())
        if head is None:
            continue
        chain = [_block(lines, i, *head)]
        j = i + 1 + len(chain[0].frames)
        while j < len(lines) and len(chain) < CHAIN_MAX:
            j = _skip(lines, j)
            if j >= len(lines) or not lines[j].startswith("Caused by: "):
                break
            cause = _header(lines[j][len("Caused by: "):])
            if cause is None:
                break
            chain.append(_block(lines, j, *cause))
            j += 1 + len(chain[-1].frames)
        top = chain[0]
        return Crash("java", top.type, top.message, top.frames, top.start, tuple(chain[1:]))
    return None


def _header(line: str) -> tuple[str, str] | None:
    if line.startswith('"'):  # the thread name of "Exception in thread"
        end = line.find('" ', 1)
        if end < 0:
            return None
        line = line[end + 2:]
    type_, _sep, message = line.partition(": ")
    if not _TYPE.match(type_) or "." not in type_:
        return None
    return type_, message[:MESSAGE_MAX]


def _block(lines: list[str], at: int, type_: str, message: str) -> Crash:
    frames = frames_from(lines, at + 1,
                         lambda line: _frame(line[len(_AT):]) if line.startswith(_AT) else None)
    return Crash("java", type_, message, frames, at)


def _skip(lines: list[str], j: int) -> int:
    # "... 2 more", "Suppressed:" blocks and their frames stand between links of a chain
    while j < len(lines) and (lines[j].startswith(("\t...", "\t\t", "\tSuppressed: ")) or
                              lines[j].startswith(_AT)):
        j += 1
    return j


def _frame(body: str) -> Frame:
    if body.endswith("]") and (") ~[" in body or ") [" in body):
        body = body[:body.rfind(")") + 1]  # logback's packaging data: "~[app.jar:1.0]"
    body = _LAMBDA_CLASS.sub("$$Lambda", body)
    call, _sep, loc = body.rstrip(")").partition("(")
    call = call.rpartition("/")[2]  # "java.base/java.lang.Integer.parseInt": no module
    cls, _dot, method = call.rpartition(".")
    method = _LAMBDA_METHOD.sub(r"\1", method)
    path, line = split_location(loc)
    return Frame(method, cls, not rules.library_name("java", cls), path, line)
