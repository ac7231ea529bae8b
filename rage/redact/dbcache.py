"""Compiled Hyperscan databases kept on disk, so a process does not compile its own.

Compiling the one-pass database (:mod:`rage.redact.native`) takes 25-30 ms, at the start of
every report and ``rage redact``, before any worker can start, and the finder of the
multi-line openers 20-28 ms more; loading them back takes microseconds. A database is
stored under ``<rage home>/.cache/`` (0700), named by a hash of its expressions, their flags
and the Hyperscan version, as a 0600 file written atomically.
It is loaded only if it is a regular file this user owns that no one else can write
(:func:`rage.fsutil.read_own`): a database is code for Hyperscan, so a planted one is never
read. Hyperscan checks the bytes itself (a checksum, its version, the CPU's features) and
refuses a damaged or foreign one, which is then compiled again and replaced.

A database that holds literals registered with :func:`rage.redact.register_literal` is never
stored: those are secrets the caller wants kept out of every file (the engine says which,
see :meth:`rage.redact.engine.RedactionEngine.build`). Names (the user's, the host's, the
home directory) are stored, in the user's own private directory, where the recorded runs
that hold them already are. At most :data:`KEEP` databases are kept, the newest.
"""

from __future__ import annotations

import os
from typing import Any

from rage.digest import sha256
from rage.fsutil import is_own_dir, private_dir, read_own, write_atomic

KEEP = 8
MAX_BYTES = 64 << 20  # far above any database the engine builds (~150 KB)
_PREFIX = "hyperscan-"


def _path(expressions: list[bytes], flags: list[int], version: str) -> str:
    from rage.paths import home_root_str

    h = sha256(version.encode())
    for e, f in zip(expressions, flags, strict=True):
        h.update(b"%d:%d:" % (f, len(e)) + e)
    return os.path.join(home_root_str(), ".cache", f"{_PREFIX}{h.hexdigest()[:40]}.db")


def load(hyperscan: Any, expressions: list[bytes], flags: list[int]) -> Any | None:
    """The database stored for these expressions, or None (absent, not ours, refused)."""
    try:
        path = _path(expressions, flags, hyperscan.__version__)
    except (OSError, ValueError, AttributeError, RuntimeError, KeyError):
        return None
    data = read_own(path, MAX_BYTES)
    if not data:
        return None
    try:
        db = hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
        db.scratch = hyperscan.Scratch(db)  # compile() makes one; loadb() does not
    except Exception:  # damaged, another version or CPU: compiled again by the caller
        return None
    return db


def store(hyperscan: Any, expressions: list[bytes], flags: list[int], db: Any) -> None:
    """Best effort: a report never fails because a cache could not be written."""
    try:
        path = _path(expressions, flags, hyperscan.__version__)
        head = os.path.dirname(path)
        private_dir(head)
        if not is_own_dir(head):  # never into a planted symlink's target
            return
        write_atomic(path, hyperscan.dumpb(db))
        prune(head, _PREFIX, KEEP)
    except Exception:  # any failure only costs the next process a compile
        pass


def prune(head: str, prefix: str, keep: int) -> None:
    """Keep the ``keep`` newest files named ``prefix``... in ``head``."""
    found = []
    with os.scandir(head) as it:
        for entry in it:
            if entry.name.startswith(prefix) and entry.is_file(follow_symlinks=False):
                found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
    for _mtime, path in sorted(found, reverse=True)[keep:]:
        try:  # noqa: SIM105
            os.unlink(path)
        except OSError:
            pass
