"""Python tracebacks for the bundle page: frames split into the app's own and library code.

A maintainer reads the app's frames first; runs of library frames (site-packages, the
standard library, frozen modules) are folded. Tracebacks are also found inside a log
(``stderr.log`` of a wrapped run), so their lines can be highlighted there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

START = "Traceback (most recent call last):"
# a traceback's `File "x", line 3, in f`, and faulthandler's `File "x", line 3 in f`
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+)(?:,? in (?P<func>.*))?$')
_LIBRARY = re.compile(
    r"(?:^|[/\\])(?:site-packages|dist-packages)[/\\]|[/\\]lib[/\\]python\d[\d.]*[/\\]"
    r"|^<frozen |[/\\]Lib[/\\]")
# characters of a line a pattern sees: a frame names a path (PATH_MAX 4096) and a function;
# the patterns are linear, and the cut bounds them whatever a log's lines hold
LINE_CAP = 8 * 1024
_CHAINED = ("During handling of the above exception", "The above exception was the direct")


@dataclass
class Frame:
    file: str
    line: str
    func: str
    source: list[str] = field(default_factory=list)
    library: bool = False


@dataclass
class Group:
    """Consecutive frames of one kind (library groups are shown folded)."""

    library: bool
    frames: list[Frame]


@dataclass
class Block:
    """One traceback: free text before it, its frame groups, and its final lines."""

    intro: list[str]
    groups: list[Group]
    outro: list[str]


def is_library(path: str) -> bool:
    return bool(_LIBRARY.search(path))


def parse(text: str, max_lines: int = 2000) -> list[Block]:
    """Split ``text`` into traceback blocks (chained exceptions give several)."""
    blocks: list[Block] = []
    cur = Block([], [], [])
    frame: Frame | None = None
    for line in text.splitlines()[-max_lines:]:
        m = _FRAME.match(line[:LINE_CAP])
        if m:
            frame = Frame(m.group("file"), m.group("line"), m.group("func") or "",
                          library=is_library(m.group("file")))
            if cur.groups and cur.groups[-1].library == frame.library:
                cur.groups[-1].frames.append(frame)
            else:
                cur.groups.append(Group(frame.library, [frame]))
            continue
        if frame is not None and line.startswith("    "):
            frame.source.append(line.strip())
            continue
        frame = None
        if line.startswith(START) or line.startswith(_CHAINED):
            if cur.groups or cur.outro:
                blocks.append(cur)
                cur = Block([], [], [])
            cur.intro.append(line)
        elif cur.groups:
            cur.outro.append(line)
        else:
            cur.intro.append(line)
    if cur.intro or cur.groups or cur.outro:
        blocks.append(cur)
    return blocks


def line_spans(lines: list[str]) -> set[int]:
    """Indexes of the lines that belong to a traceback (from its first line to the
    exception line)."""
    marked: set[int] = set()
    inside = False
    for i, line in enumerate(lines):
        plain = line.strip()
        if plain.startswith(START):
            inside = True
        if inside:
            marked.add(i)
            if line and not line[0].isspace() and not plain.startswith(START) \
                    and not plain.startswith(_CHAINED) and plain:
                inside = False  # the exception line ends it
    return marked


def last_in(lines: list[str]) -> str | None:
    """The last traceback found in ``lines`` (the one that ended the run), as text."""
    marked = sorted(line_spans(lines))
    if not marked:
        return None
    starts = [i for i in marked if lines[i].strip().startswith(START)]
    begin = starts[-1]
    # chained tracebacks before it belong to it
    while begin > 0 and (begin - 1) in marked:
        begin -= 1
    end = begin
    while end + 1 < len(lines) and (end + 1) in marked:
        end += 1
    return "\n".join(lines[begin:end + 1])
