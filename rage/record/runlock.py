"""Whether a run is live: its recorder holds the run's ``lock`` file (flock, shared or
exclusive) for as long as it records.

Imports only ``os`` and ``fcntl``: the integration asks this on a tool's start-up and the
wrapper's retention on every recorded command.
"""

from __future__ import annotations

import fcntl
import os


def lock_is_held(run_dir: str | os.PathLike[str]) -> bool:
    """True while a live recorder holds the run's lock."""
    try:
        # never through a planted symlink, never blocking on a FIFO
        fd = os.open(os.path.join(run_dir, "lock"),
                     os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False
