"""Whether a run is live: its recorder holds a flock (shared or exclusive) on the run's
``lock`` file, or on the run's directory when it has no such file, for as long as it
records.

A recorder locks the directory itself (:func:`rage.record.store.lock_run`): no file to
create per run. Runs recorded before, and runs on a file system that refuses a lock on a
directory (NFS), have the ``lock`` file, which is then the one that counts.

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
    except FileNotFoundError:
        try:
            fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return False
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
