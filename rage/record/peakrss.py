"""This process's own peak memory, for the peak RSS a run records.

A module of its own (imports only ``os``) because both recorders read it: the wrapper as it
spawns a command on pipes, where the session leader's module is not otherwise imported,
and the Python integration at exit.
"""

import os


def own_peak_rss_kib() -> int | None:
    """This process's own peak RSS in KiB: ``VmHWM``, the high-water mark of its memory
    since its exec (Linux), which is what an exec from it (vfork) counts into the new
    program's ``ru_maxrss``. Not ``ru_maxrss``: that also holds what *this* process was
    exec'd from (a large test runner or IDE that started rage through vfork). None where
    unknown."""
    try:  # os.read, not a file object: its fstat, terminal probe and seek, its buffer
        fd = os.open("/proc/self/status", os.O_RDONLY | os.O_CLOEXEC)
        try:
            status = os.read(fd, 1 << 16)
        finally:
            os.close(fd)
    except OSError:
        return None
    # the one line, not the file split into its ~55: in the session leader (a fork) every
    # object made writes a page it shares with the wrapper, which is then copied
    start = status.find(b"\nVmHWM:")
    if start < 0:
        return None
    end = status.find(b"\n", start + 1)
    fields = status[start + 7:end if end > 0 else None].split()
    if len(fields) == 2 and fields[0].isdigit() and fields[1] == b"kB":
        return int(fields[0])
    return None
