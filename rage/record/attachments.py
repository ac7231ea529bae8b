"""``--attach``: copy the log files a program wrote during a run into the run.

Patterns (``~`` and globs, relative ones against the run's cwd) are expanded before the
child starts and again when it ends; a file is attached when it is new or its size, mtime or
inode changed in between. Comparing snapshots rather than mtimes against the start time
avoids clock-granularity races with files written in the run's first milliseconds.
"""

from __future__ import annotations

import os

from rage.fsutil import open_regular, private_dir
from rage.record.capture import CappedFile, Truncation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

Snapshot = dict[str, tuple[int, int, int]]
COPY_CHUNK = 1 << 20


def _expand(patterns: Iterable[str], cwd: str) -> list[str]:
    found: list[str] = []
    for pattern in patterns:
        p = os.path.expanduser(pattern)
        if not os.path.isabs(p):
            p = os.path.join(cwd, p)
        if any(c in p for c in "*?["):  # glob.has_magic, without importing glob (re) first
            import glob

            matches = sorted(glob.glob(p))
        else:
            matches = [p]
        found.extend(m for m in matches if m not in found)
    return found


def snapshot(patterns: Iterable[str], cwd: str) -> Snapshot:
    """The regular files matching ``patterns`` now, with (size, mtime_ns, inode)."""
    snap: Snapshot = {}
    for path in _expand(patterns, cwd):
        try:
            st = os.stat(path)
        except OSError:
            continue
        if os.path.isfile(path):
            snap[path] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return snap


def changed_files(before: Snapshot, patterns: Iterable[str], cwd: str) -> list[str]:
    """Files matching ``patterns`` that appeared or changed since ``before``."""
    after = snapshot(patterns, cwd)
    return [p for p, sig in after.items() if before.get(p) != sig]


def copy_attachments(paths: list[str], run_dir: str | os.PathLike[str],
                     cap: int) -> tuple[list[Truncation], list[str]]:
    """Copy ``paths`` into ``<run_dir>/attachments/`` (0600, each within ``cap``).

    Returns the truncation record of each copy (names relative to the run) and one warning
    per file that could not be read. Errors writing the run propagate as ``OSError``.
    """
    if not paths:
        return [], []
    dest_dir = private_dir(os.path.join(run_dir, "attachments"))
    used: set[str] = set()
    records: list[Truncation] = []
    warnings: list[str] = []
    for path in paths:
        base = os.path.basename(path) or "attachment"
        name, n = base, 1
        while name in used:
            n += 1
            name = f"{n}-{base}"
        try:
            # a log file, through a symlink too, but never a FIFO (which would hang the end
            # of the run) or a device (which never ends)
            src = open_regular(path, follow_symlinks=True)
        except OSError as e:
            warnings.append(f"cannot attach {path}: {e.strerror}")
            continue
        used.add(name)
        with src:
            sink = CappedFile(os.path.join(dest_dir, name), cap)
            try:
                while chunk := src.read(COPY_CHUNK):
                    sink.write(chunk)
            except OSError:
                sink.close()
                raise
            t = sink.close()
        records.append(Truncation(f"attachments/{name}", t.total_bytes, t.dropped_bytes))
    return records, warnings
