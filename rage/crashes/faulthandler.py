"""Python's faulthandler dumps (``Modules/faulthandler.c``)::

    Fatal Python error: Segmentation fault

    Current thread 0x00007f... (most recent call first):
      File "/home/u/app/native.py", line 12 in crash
      File "<string>", line 1 in <module>

Other threads are listed as ``Thread 0x...``; the current one is the thread that crashed.
"""

from __future__ import annotations

import re

from rage.crashes import rules
from rage.crashes.model import MESSAGE_MAX, Crash, Frame, frames_from
from rage.crashes.text import basename, normalise

_FATAL = "Fatal Python error: "
_FRAME = re.compile(r'^ {2}File "(?P<path>[^"]{1,4096})", line (?P<line>\d{1,9}|\?\?\?) '
                    r"in (?P<func>\S.*)$")


def parse(lines: list[str]) -> Crash | None:
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith(_FATAL):
            message = lines[i][len(_FATAL):]
            for j in range(i + 1, min(len(lines), i + 20)):
                if lines[j].startswith("Current thread ") or lines[j].startswith("Thread 0x"):
                    frames = frames_from(lines, j + 1, _frame)
                    return Crash("python-faulthandler", normalise(message), message[:MESSAGE_MAX],
                                 frames, i)
            return Crash("python-faulthandler", normalise(message), message[:MESSAGE_MAX], (), i)
    return None


def _frame(line: str) -> Frame | None:
    m = _FRAME.match(line)
    if not m:
        return None
    path = m["path"]
    library = rules.library_path(path) or rules.python_library(path)
    module = basename(path).removesuffix(".py")
    line_no = int(m["line"]) if m["line"].isdigit() else None
    return Frame(m["func"].strip(), module, not library, path, line_no)
