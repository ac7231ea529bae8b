"""Ruby's report of an uncaught exception (``error.c``, ``eval_error.c``)::

    app.rb:3:in `load': bad config x1 (RuntimeError)          (Ruby <= 3.3)
    app.rb:3:in 'Object#load': bad config x1 (RuntimeError)   (Ruby >= 3.4)
        from app.rb:7:in `<main>'      (each "from" line starts with a tab)
"""

from __future__ import annotations

from rage.crashes import rules
from rage.crashes.model import FRAMES_MAX, MESSAGE_MAX, Crash, Frame, frames_from
from rage.crashes.text import basename, split_location

_IN = ":in "
_FROM = "\tfrom "


def parse(lines: list[str]) -> Crash | None:
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if _IN in line and line.endswith(")") and " (" in line and not line.startswith("\t"):
            head = _head(line)
            if head is None:
                continue
            frame, message, type_ = head
            callers = frames_from(lines, i + 1, lambda follow: _frame(
                follow[len(_FROM):]) if follow.startswith(_FROM) else None, limit=FRAMES_MAX - 1)
            return Crash("ruby", type_, message[:MESSAGE_MAX], (frame, *callers), i)
    return None


def _head(line: str) -> tuple[Frame, str, str] | None:
    rest, _sep, type_ = line[:-1].rpartition(" (")
    if not type_ or not all(part.isidentifier() for part in type_.split("::")):
        return None
    where, sep, message = rest.partition("': ")
    frame = _frame(where + "'") if sep else None
    return (frame, message, type_) if frame else None


def _frame(body: str) -> Frame | None:
    loc, sep, func = body.partition(_IN)
    if not sep or len(func) < 2 or func[0] not in "`'" or not func.endswith("'"):
        return None
    path, line = split_location(loc)
    if line is None:
        return None
    func = func[1:-1]
    owner, _hash, method = func.rpartition("#") if "#" in func else func.rpartition(".")
    library = rules.library_path(path)
    return Frame(method or func, owner or basename(path).removesuffix(".rb"), not library,
                 path, line)
