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
    for line in status.splitlines():
        if line.startswith(b"VmHWM:"):
            fields = line.split()
            if len(fields) == 3 and fields[1].isdigit() and fields[2] == b"kB":
                return int(fields[1])
    return None
