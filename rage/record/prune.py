"""Retention on the recording path: cheap enough for every recorded command.

Imports nothing the wrapper has not imported already until a run is to be deleted, and the
wrapper imports it only when :func:`rage.record.store.prune_due` says there is work (it
pays for every import on each command). :func:`retain` keeps the count limit with two stats
per run and, once over it, deletes the oldest runs down to 10% below the limit (32 runs
below at most); :mod:`rage.record.retention` builds full passes (bytes, age) on the same
deletion protocol: a run is claimed by renaming it to ``.trash-*`` (one winner under
concurrency) and a run whose lock a live recorder holds is never touched.
"""

from __future__ import annotations

import os

from rage.record.runid import is_run_id
from rage.record.store import full_pass_due

__all__ = ["MAX_BATCH", "delete_run", "low_water", "remove_tree", "retain"]

# At most this many runs are deleted below the limit in one go, so that the one command in
# a cycle that deletes stays quick with large limits (max_runs = 2000: 32, not 200).
MAX_BATCH = 32


def low_water(limit: int) -> int:
    """Where a pass brings a count or byte total that went over ``limit``: 10% below it, so
    the next pass is that many runs away (hysteresis) instead of one."""
    return limit - limit // 10


def retain(app_dir: str | os.PathLike[str], max_runs: int, interval_s: float,
           keep: str | None = None) -> bool:
    """Retention on the recording path, whatever the history's size: when the app has more
    than ``max_runs`` runs (0: no limit), delete the oldest down to :func:`low_water` of it,
    :data:`MAX_BATCH` below the limit at most (never a live run or ``keep``). Returns
    whether a full pass (byte and age limits, see :mod:`rage.record.retention`) is due,
    i.e. the last one is older than ``interval_s``.

    Imports nothing: two stats when under the limit (see
    :func:`rage.record.store.prune_due`), a scandir and
    a few deletions once every ``min(max_runs // 10, MAX_BATCH)`` runs at it. Raises
    OSError when the app has no runs directory."""
    base = os.fspath(app_dir)
    runs = os.path.join(base, "runs")
    links = os.stat(runs).st_nlink
    if max_runs > 0 and (links < 2 or links - 2 > max_runs):
        with os.scandir(runs) as it:
            ids = sorted(e.name for e in it if is_run_id(e.name))
        excess = 0
        if len(ids) > max_runs:  # the limit itself is hard; the margin below it is bounded
            excess = max(len(ids) - max_runs, min(len(ids) - low_water(max_runs), MAX_BATCH))
        for rid in ids:
            if excess <= 0:
                break
            if rid != keep and delete_run(os.path.join(runs, rid)) != "locked":
                excess -= 1  # "gone": another pruner claimed it, just as gone
    return full_pass_due(base, interval_s)


def delete_run(run_dir: str | os.PathLike[str]) -> str:
    """Claim ``run_dir`` by renaming it to ``.trash-*``, then remove it.

    Returns ``"deleted"``, ``"locked"`` (a live recorder holds it) or ``"gone"`` (another
    process claimed it first: for retention it is just as gone).
    """
    from rage.record.runlock import lock_is_held  # only once over the limit: not per command

    if lock_is_held(run_dir):
        return "locked"
    head, name = os.path.split(os.fspath(run_dir))
    trash = os.path.join(head, f".trash-{name}-{os.urandom(3).hex()}")
    try:
        os.rename(run_dir, trash)
    except OSError:
        return "gone"
    remove_tree(trash)
    return "deleted"


def remove_tree(path: str, dir_fd: int | None = None) -> None:
    """Remove ``path`` and what is under it, best effort, by descriptor (a symlink inside is
    removed, never followed); cheaper to import than shutil on the recording path."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError:
        try:  # noqa: SIM105 - no contextlib on the start-up path
            os.unlink(path, dir_fd=dir_fd)
        except OSError:
            pass
        return
    try:
        with os.scandir(fd) as it:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        for name, is_dir in entries:
            if is_dir:
                remove_tree(name, fd)
            else:
                try:  # noqa: SIM105
                    os.unlink(name, dir_fd=fd)
                except OSError:
                    pass
    finally:
        os.close(fd)
    try:  # noqa: SIM105
        os.rmdir(path, dir_fd=dir_fd)
    except OSError:
        pass
