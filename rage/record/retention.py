"""Deleting runs safely under concurrency, and retention by count, bytes and age.

Deletion first renames a run directory to ``.trash-*`` (only one process can win that rename)
and never touches a run whose lock a live recorder holds. Retention deletes oldest first while
any limit is exceeded; a run another pruner already claimed counts as gone, so concurrent
prunes never over-delete.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rage.fsutil import read_own, write_atomic
from rage.record.prune import delete_run, low_water, remove_tree
from rage.record.runid import is_run_id
from rage.record.runlock import lock_is_held
from rage.record.store import prune_due

STALE_AFTER_S = 3600.0


@dataclass(frozen=True)
class PruneResult:
    removed: list[str]
    kept: int
    bytes_kept: int


def run_id_time(run_id: str) -> float | None:
    """The start time encoded in a run id (seconds since the epoch), or None."""
    if not is_run_id(run_id):
        return None
    d = run_id  # no strptime: its import (_strptime, locale, calendar) costs ~2 ms
    return datetime(int(d[0:4]), int(d[4:6]), int(d[6:8]), int(d[9:11]), int(d[11:13]),
                    int(d[13:15]), tzinfo=UTC).timestamp()


def delete_run_dir(run_dir: Path) -> str:
    """Claim ``run_dir`` by renaming it, then remove it (see :func:`prune.delete_run`)."""
    return delete_run(run_dir)


def dir_bytes(path: Path) -> int:
    total = 0
    for dirpath, _dirs, names in os.walk(path):
        for n in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, n)).st_size
    return total


def prune_runs(
    runs_dir: Path,
    dirs: Sequence[Path],
    *,
    max_runs: int,
    max_bytes: int,
    max_age_days: float,
    keep: Iterable[str] = (),
    now: float | None = None,
    hysteresis: bool = False,
    sizes_file: Path | None = None,
) -> PruneResult:
    """Delete the oldest of ``dirs`` (given oldest first) until every limit holds; a limit
    of 0 is no limit. With ``hysteresis``, a count or total over its limit is brought down
    to :func:`low_water` of it.

    Live runs and ``keep`` are never deleted. Cost: an lstat per file of each run not yet in
    ``sizes_file`` (finished runs do not change size, so their totals are kept there).
    """
    keep_set = set(keep)
    now = time.time() if now is None else now
    known = read_sizes(sizes_file) if sizes_file is not None else {}
    sizes: dict[str, int] = {}
    for d in dirs:
        size = known.get(d.name)
        sizes[d.name] = dir_bytes(d) if size is None else size
    count, total = len(dirs), sum(sizes.values())
    runs_target = max_runs if not hysteresis or count <= max_runs else low_water(max_runs)
    bytes_target = max_bytes if not hysteresis or total <= max_bytes else low_water(max_bytes)
    removed: list[str] = []
    for d in dirs:
        started = run_id_time(d.name) or now
        too_old = max_age_days > 0 and now - started > max_age_days * 86400
        over = (max_runs > 0 and count > runs_target) or (max_bytes > 0 and total > bytes_target)
        if not (over or too_old) or d.name in keep_set:
            continue
        outcome = delete_run_dir(d)
        if outcome == "locked":
            continue
        if outcome == "deleted":
            removed.append(d.name)
        count -= 1
        total -= sizes.pop(d.name)
    with contextlib.suppress(OSError):
        sweep_leftovers(runs_dir)
    if sizes_file is not None:
        # a live run still grows: its size is measured again next time
        write_sizes(sizes_file, {k: v for k, v in sizes.items()
                                 if k in known or not lock_is_held(runs_dir / k)})
    return PruneResult(removed, count, total)


def read_sizes(path: Path) -> dict[str, int]:
    """``{run id: bytes}`` from a sizes file rage wrote (anything else reads as empty)."""
    data = read_own(path, 1 << 22)
    out: dict[str, int] = {}
    for line in (data or b"").decode("ascii", "replace").splitlines():
        rid, _, size = line.partition(" ")
        if is_run_id(rid) and size.isdigit():
            out[rid] = int(size)
    return out


def write_sizes(path: Path, sizes: dict[str, int]) -> None:
    with contextlib.suppress(OSError):
        write_atomic(path, "".join(f"{k} {v}\n" for k, v in sizes.items()).encode())


def sweep_leftovers(runs_dir: Path) -> None:
    """Remove what crashed processes left: stale ``.trash-*`` and ``.new-*`` directories."""
    for e in os.scandir(runs_dir):
        stale = e.name.startswith((".trash-", ".new-"))
        if stale and time.time() - e.stat(follow_symlinks=False).st_mtime > STALE_AFTER_S:
            remove_tree(e.path)


def touch_stamp(stamp: Path) -> None:
    """Record that a full retention pass just ran (best effort). Never truncates or follows
    what is there: a symlink planted as the stamp is left alone (and the pass runs again)."""
    try:
        fd = os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                     | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.utime(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def is_due(app_dir: Path, max_runs: int, interval_s: float) -> bool:
    try:
        return prune_due(app_dir, max_runs, interval_s)
    except OSError:
        return False
