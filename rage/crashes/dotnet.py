""".NET unhandled exceptions (the runtime's ``Exception.ToString()``)::

    Unhandled exception. System.InvalidOperationException: bad config x1
     ---> System.FormatException: The input string 'x1' was not in a correct format.
       at System.Number.ThrowFormatException[TChar](ReadOnlySpan`1 value)
       at App.Program.Parse(String s) in /src/app/Program.cs:line 3
       --- End of inner exception stack trace ---
       at App.Program.Load(String s) in /src/app/Program.cs:line 7

The inner exception's frames come first; `` ---> `` introduces each inner exception.
"""

from __future__ import annotations

import re

from rage.crashes import rules
from rage.crashes.model import CHAIN_MAX, FRAMES_MAX, MESSAGE_MAX, Crash, Frame

_HEAD = "Unhandled exception. "
_TYPE = re.compile(r"^[A-Za-z_][\w.`+]{0,300}$")
_AT = "   at "
_INNER = " ---> "
_END_INNER = "   --- End of inner exception stack trace ---"


def parse(lines: list[str]) -> Crash | None:
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith(_HEAD) and (head := _header(lines[i][len(_HEAD):])):
            return _read(lines, i, head)
    return None


def _header(text: str) -> tuple[str, str] | None:
    type_, _sep, message = text.partition(": ")
    return (type_, message[:MESSAGE_MAX]) if _TYPE.match(type_) and "." in type_ else None


def _read(lines: list[str], start: int, head: tuple[str, str]) -> Crash:
    chain = [head]
    j = start + 1
    while j < len(lines) and lines[j].startswith(_INNER) and len(chain) < CHAIN_MAX:
        if inner := _header(lines[j][len(_INNER):]):
            chain.append(inner)
        j += 1
    # frame blocks, innermost exception first, separated by "--- End of inner ..."
    blocks: list[list[Frame]] = [[]]
    for line in lines[j:j + FRAMES_MAX * CHAIN_MAX]:
        if line.startswith(_END_INNER):
            blocks.append([])
        elif line.startswith(_AT):
            if len(blocks[-1]) < FRAMES_MAX:
                blocks[-1].append(_frame(line[len(_AT):]))
        elif not line.startswith("   --- "):  # "--- End of stack trace from previous ..."
            break
    blocks.reverse()  # now outermost first, like the chain
    links = [Crash("dotnet", t, m, tuple(blocks[k]) if k < len(blocks) else (), start)
             for k, (t, m) in enumerate(chain)]
    top = links[0]
    return Crash("dotnet", top.type, top.message, top.frames, start, tuple(links[1:]))


def _frame(body: str) -> Frame:
    # "App.Program.Load(String s) in /src/app/Program.cs:line 7"
    call, _sep, loc = body.partition(" in ")
    path, _colon, line = loc.rpartition(":line ")
    call = call[:call.find("(")] if "(" in call else call
    call = call[:call.find("[")] if "[" in call else call  # generic arguments: [TSource]
    cls, _dot, method = call.rpartition(".")
    library = rules.library_name("dotnet", cls) or rules.library_path(path)
    return Frame(method, cls, not library, path,
                 int(line[:9]) if line.isdigit() else None)
