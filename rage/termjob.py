"""Job control seen from inside a job: is this process in the background of its terminal?

A process of a background job that reads its controlling terminal is stopped by SIGTTIN,
and one that changes the terminal's modes by SIGTTOU: the shell then shows the job as
``Stopped (tty input)`` and it waits there until the user brings it back with ``fg``. rage
reads the terminal or changes its modes only for the user (keys for a recorded command,
answers to its own questions, a pager), so in the background it does neither, unless the
command it runs reads the terminal itself, which stops the job exactly as without rage.

A leaf module (``os`` only): ``rage run`` imports it on every recorded command.
"""

from __future__ import annotations

import os


def background(fd: int) -> bool:
    """True when ``fd`` is this process's controlling terminal and another process group
    is in its foreground: reading ``fd`` or changing its modes would stop this process.
    False for anything else (a foreground job, a terminal that is not ours, no terminal)."""
    try:
        return os.tcgetpgrp(fd) != os.getpgrp()
    except OSError:  # not a terminal, or not this session's: no job control applies
        return False


def foreground_tty(fd: int) -> bool:
    """``fd`` is a terminal this process may read and set the modes of without stopping."""
    try:
        return os.isatty(fd) and not background(fd)
    except OSError:
        return False


def can_ask() -> bool:
    """Questions need a terminal to read the answers from (stdin) and to ask on (stderr),
    with this process in its foreground: in the background of a shell (``rage report &``)
    reading stdin would stop the job until ``fg``, so rage asks nothing, as without a
    terminal."""
    return foreground_tty(0) and foreground_tty(2)


def can_page() -> bool:
    """A pager (less) reads keys from the terminal: only with stdout on a terminal, in its
    foreground; in the background the text is printed as to a pipe."""
    return foreground_tty(1)
