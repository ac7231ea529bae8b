"""Node.js uncaught exceptions: the throwing line with a caret, a blank line, then
``Error: message`` (any class name) and V8 frames ``    at fn (/path/app.js:3:9)``,
``    at /path/app.js:7:50`` (anonymous), ``    at async fn (...)``, ``    at new C (...)``;
last ``Node.js v20.1.0``. Unhandled rejections print the same."""

from __future__ import annotations

import re

from rage.crashes import rules
from rage.crashes.model import MESSAGE_MAX, Crash, Frame, frames_from
from rage.crashes.text import basename, split_location

# "TypeError: msg", "Error [ERR_MODULE_NOT_FOUND]: msg" (Node's error codes)
_HEADER = re.compile(r"^(?P<type>[A-Za-z_$][\w$.]{0,200}(?: \[[A-Z0-9_]{1,80}\])?)"
                     r"(?:: (?P<msg>.*))?$")
_AT = "    at "


def parse(lines: list[str]) -> Crash | None:
    for i in range(len(lines) - 2, -1, -1):
        if lines[i + 1].startswith(_AT) and (m := _HEADER.match(lines[i])) and \
                not lines[i].startswith("Caused by"):
            message = m["msg"] or ""
            return Crash("node", m["type"], message[:MESSAGE_MAX],
                         frames_from(lines, i + 1, _frame), i)
    return None


def _frame(line: str) -> Frame | None:
    if not line.startswith(_AT):
        return None
    # the last frame ends with " {" when the error's own properties follow
    body = line[len(_AT):].removeprefix("async ").removesuffix(" {")
    if body.endswith(")") and " (" in body:
        func, _sep, loc = body[:-1].rpartition(" (")
    else:
        func, loc = "<anonymous>", body
    func = func.removeprefix("new ")
    path, lineno = split_location(loc)
    if path.startswith("file://"):
        path = path[len("file://"):]
    library = rules.library_name("node", path) or rules.library_path(path)
    return Frame(func, _module(path), not library, path, lineno)


def _module(path: str) -> str:
    # a package's files are named by the package (node_modules/pkg/...), the app's by file
    if "/node_modules/" in path:
        after = path.rsplit("/node_modules/", 1)[1].split("/")
        return "/".join(after[:2]) if after[0].startswith("@") else after[0]
    if path.startswith("node:"):
        return path
    name = basename(path)
    for ext in (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"):
        name = name.removesuffix(ext)
    return name
