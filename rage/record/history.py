"""The run store: one directory per recorded invocation.

``<root>/<app>/runs/<run-id>/`` holds ``meta.json`` (written atomically at start and end)
and whatever the recorder captured (``output.log``, ``stdout.log``, ``stderr.log``, ``log.jsonl``,
``traceback.txt``, ``fatal.log``, ``attachments/``). The recorder holds a ``flock`` on the
run's directory while the run is live (on a ``lock`` file in it in runs of earlier versions
and where directories cannot be locked: :mod:`rage.record.runlock`). A run still marked
``running`` whose lock nobody holds is reported as ``lost``: its recorder was killed or the
machine went down.

The store is safe with concurrent recorders: run ids never collide, deletion first renames a
run out of the way (only one process can win that), and a locked run is never deleted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, MutableSequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rage.errors import NotFoundError, UsageError
from rage.fsutil import is_own_dir
from rage.paths import check_app, home_root, is_app_name
from rage.record.meta import fatal_signal, read_meta
from rage.record.retention import (
    PruneResult,
    delete_run_dir,
    is_due,
    prune_runs,
    run_id_time,
    touch_stamp,
)
from rage.record.runid import is_run_id, new_run_id
from rage.record.runlock import lock_is_held
from rage.record.store import (
    CORRUPT,
    CRASH_SIGNALS,
    CRASHED,
    FAILED,
    INTERRUPT_SIGNALS,
    INTERRUPTED,
    LOST,
    OK,
    RUNNING,
    SCHEMA,
    Recording,
    now_iso,
    start_run,
    status_for,
)

# statuses a user looking for "the bad run" wants to see
PROBLEM_STATUSES = frozenset({FAILED, CRASHED, INTERRUPTED, LOST})


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@dataclass(frozen=True)
class Run:
    """A recorded run as read from disk: plain data, safe to render or serialise."""

    id: str
    app: str
    dir: Path
    status: str
    argv: tuple[str, ...] = ()
    cwd: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    duration_s: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    pid: int | None = None
    recorder: str | None = None
    app_version: str | None = None
    problem: str | None = None  # why the record could not be read (status "corrupt")
    meta: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def short_id(self) -> str:
        """The random part of the id; `rage list` shows it and commands accept prefixes of it."""
        return self.id.rsplit("-", 1)[-1]

    @property
    def is_problem(self) -> bool:
        return self.status in PROBLEM_STATUSES

    @property
    def is_report_command(self) -> bool:
        """Runs of `mytool rage` itself, left out of the run chooser."""
        return bool(self.meta.get("report_command"))

    def files(self) -> list[Path]:
        """Every file of the run except the lock, sorted by relative path.

        Anything but a directory counts: something that is not a regular file (a FIFO or a
        symlink the recorded program left) is listed so that its reader refuses it with a
        reason (:func:`rage.fsutil.open_regular`), rather than vanishing unexplained."""
        out = []
        for dirpath, _dirs, names in os.walk(self.dir):
            for n in names:
                if n != "lock" and not n.startswith("."):
                    out.append(Path(dirpath) / n)
        return sorted(out, key=lambda p: str(p.relative_to(self.dir)))

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.meta)
        d.update(
            id=self.id, app=self.app, status=self.status, dir=str(self.dir),
            short_id=self.short_id,
        )
        if self.problem:
            d["problem"] = self.problem
        return d


def _run_from_meta(app: str, run_dir: Path, meta: Mapping[str, Any], status: str) -> Run:
    def opt_int(k: str) -> int | None:
        v = meta.get(k)
        if isinstance(v, bool) or not isinstance(v, int) or not -(2**63) <= v < 2**63:
            return None
        return v

    argv = meta.get("argv")
    dur = meta.get("duration_s")
    if isinstance(dur, bool) or not isinstance(dur, int | float) or not 0 <= dur < 1e12:
        dur = None
    started = meta.get("started_at")
    if isinstance(started, str):
        try:
            parse_iso(started)
        except ValueError:
            started = None
    return Run(
        id=run_dir.name,
        app=app,
        dir=run_dir,
        status=status,
        argv=tuple(str(a) for a in argv) if isinstance(argv, list) else (),
        cwd=str(meta["cwd"]) if isinstance(meta.get("cwd"), str) else None,
        started_at=started if isinstance(started, str) else None,
        ended_at=meta.get("ended_at") if isinstance(meta.get("ended_at"), str) else None,
        duration_s=float(dur) if dur is not None else None,
        exit_code=opt_int("exit_code"),
        signal=opt_int("signal"),
        pid=opt_int("pid"),
        recorder=meta.get("recorder") if isinstance(meta.get("recorder"), str) else None,
        app_version=meta.get("app_version") if isinstance(meta.get("app_version"), str) else None,
        meta=dict(meta),
    )


def load_run(app: str, run_dir: Path) -> Run:
    """Read one run; a missing or broken ``meta.json`` gives a ``corrupt`` run, never raises."""
    try:
        meta = read_meta(run_dir)
    except FileNotFoundError:
        return Run(run_dir.name, app, run_dir, CORRUPT, problem="meta.json is missing")
    except (OSError, ValueError) as e:
        return Run(run_dir.name, app, run_dir, CORRUPT, problem=f"meta.json is unreadable: {e}")
    status = meta.get("status")
    if not isinstance(status, str):
        return Run(run_dir.name, app, run_dir, CORRUPT, problem="meta.json has no status",
                   meta=meta)
    if status == RUNNING and not lock_is_held(run_dir):
        fatal = fatal_signal(run_dir)
        if fatal is not None:
            # the recorder died of a fatal signal after faulthandler wrote its dump
            meta = {**meta, "status": CRASHED, "signal": fatal or None, "exit_code": None}
            return _run_from_meta(app, run_dir, meta, CRASHED)
        status = LOST
        meta = {**meta, "status": LOST}  # readers of run.meta (summary, bundle) agree
    return _run_from_meta(app, run_dir, meta, status)


class ActiveRun(Recording):
    """A run being recorded. Holds the run's lock until :meth:`finish` or :meth:`release`."""

    def __init__(self, app: str, run_dir: Path, meta: dict[str, Any], lock_fd: int | None,
                 t0: float | None = None) -> None:
        super().__init__(app, str(run_dir), meta, lock_fd, t0)
        self.dir = run_dir

    def path(self, name: str) -> Path:
        return self.dir / name

    def finish(
        self,
        *,
        exit_code: int | None,
        signal: int | None = None,
        status: str | None = None,
        **extra: Any,
    ) -> Run:
        """Record the end of the run and release the lock."""
        meta = self.finish_meta(exit_code=exit_code, signal=signal, status=status, **extra)
        return _run_from_meta(self.app, self.dir, meta, meta["status"])


@dataclass(frozen=True)
class Listing:
    runs: list[Run]
    warnings: list[str]
    skipped: list[Run] = field(default_factory=list)  # the damaged records warned about


class RunStore:
    """Create, list, load, resolve, forget and prune runs under one root."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else home_root()

    # -- recording -------------------------------------------------------------------------
    def start(
        self,
        app: str,
        argv: Iterable[str],
        *,
        cwd: str | None = None,
        recorder: str,
        app_version: str | None = None,
        pid: int | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> ActiveRun:
        """Create a run directory, take its lock and write the initial meta.json.

        Raises OSError when the history cannot be written; recorders catch it and carry on.
        """
        rec = start_run(self.root, app, argv, cwd=cwd, recorder=recorder,
                        app_version=app_version, pid=pid, extra=extra)
        return ActiveRun(app, Path(rec.run_dir), rec.meta, rec.take_lock())

    # -- reading ---------------------------------------------------------------------------
    def apps(self) -> list[str]:
        """Apps with a history; stray directories (``mytool copy``) and symlinks are not."""
        try:
            entries = sorted(os.scandir(self.root), key=lambda e: e.name)
        except OSError:
            return []
        return [e.name for e in entries if is_app_name(e.name) and is_own_dir(e.path)
                and is_own_dir(os.path.join(e.path, "runs"))]

    def run_dirs(self, app: str) -> list[Path]:
        """Run directories of ``app``, oldest first (ids sort by start time); none when the
        app's or its runs directory is a symlink or not this user's (never followed)."""
        runs = self.root / check_app(app) / "runs"
        if not (is_own_dir(runs.parent) and is_own_dir(runs)):
            return []
        try:
            names = [e.name for e in os.scandir(runs)
                     if is_run_id(e.name) and e.is_dir(follow_symlinks=False)]
        except OSError:
            return []
        return [self.root / app / "runs" / n for n in sorted(names)]

    def list(
        self,
        app: str | None = None,
        *,
        problems_only: bool = False,
        limit: int | None = None,
        include_report_commands: bool = True,
    ) -> Listing:
        """Runs newest first, with a warning for each record that could not be read."""
        apps = [check_app(app)] if app else self.apps()
        runs: list[Run] = []
        warnings: list[str] = []
        skipped: list[Run] = []
        for a in apps:
            for d in self.run_dirs(a):
                run = load_run(a, d)
                if run.status == CORRUPT:
                    warnings.append(f"skipping broken run {a}/{run.id}: {run.problem}")
                    skipped.append(run)
                    continue
                if problems_only and not run.is_problem:
                    continue
                if not include_report_commands and run.is_report_command:
                    continue
                runs.append(run)
        runs.sort(key=lambda r: (r.started_at or "", r.id), reverse=True)
        if limit is not None:
            runs = runs[:limit]
        return Listing(runs, warnings, skipped)

    def resolve(self, ref: str, app: str | None = None,
                warnings: MutableSequence[str] | None = None) -> Run:
        """Find one run by id, unique prefix (of the id or its random part), ``last`` or
        ``last-failed``. Runs of report commands and this process's live run are skipped by
        ``last``/``last-failed``; so are damaged records, and when one of them is newer than
        the run chosen, a warning saying so is added to ``warnings``."""
        if ref in {"last", "last-failed"}:
            listing = self.list(app, problems_only=ref == "last-failed",
                                include_report_commands=False)
            me = os.getpid()
            for run in listing.runs:
                if run.status == RUNNING and run.pid == me:
                    continue
                if warnings is not None:
                    warnings.extend(f"skipping broken run {s.app}/{s.id}: {s.problem}"
                                    for s in listing.skipped if s.id > run.id)
                return run
            what = "failed run" if ref == "last-failed" else "run"
            scope = f" for app {app!r}" if app else ""
            raise NotFoundError(f"no {what} recorded{scope}")
        if not ref or not re.fullmatch(r"[0-9A-Za-z-]+", ref):
            raise UsageError(f"invalid run reference {ref!r}")
        ref_l = ref.lower()
        matches: list[tuple[str, Path]] = []
        for a in ([check_app(app)] if app else self.apps()):
            for d in self.run_dirs(a):
                rid = d.name
                if rid.lower().startswith(ref_l) or rid.rsplit("-", 1)[-1].startswith(ref_l):
                    matches.append((a, d))
        if not matches:
            raise NotFoundError(f"no run matches {ref!r}" + (f" for app {app!r}" if app else ""))
        if len(matches) > 1:
            exact = [m for m in matches if m[1].name == ref]
            if len(exact) == 1:
                matches = exact
            else:
                names = ", ".join(f"{a}/{d.name}" for a, d in matches[:5])
                raise UsageError(f"run reference {ref!r} is ambiguous: {names}")
        a, d = matches[0]
        run = load_run(a, d)
        return run

    def forget(self, run: Run) -> None:
        if run.status == RUNNING:
            raise UsageError(f"run {run.id} is still running")
        outcome = delete_run_dir(run.dir)
        if outcome == "locked":
            raise UsageError(f"run {run.id} is still running")
        if outcome == "gone":
            raise NotFoundError(f"run {run.id} was already removed")

    def forget_all(self, app: str) -> int:
        return sum(1 for d in self.run_dirs(app) if delete_run_dir(d) == "deleted")

    def prune(
        self,
        app: str,
        *,
        max_runs: int,
        max_bytes: int,
        max_age_days: float,
        keep: Iterable[str] = (),
        now: float | None = None,
        hysteresis: bool = False,
    ) -> PruneResult:
        """Apply retention to ``app`` now (see :mod:`rage.record.retention`)."""
        app_dir = self.root / check_app(app)
        return prune_runs(app_dir / "runs", self.run_dirs(app),
                          max_runs=max_runs, max_bytes=max_bytes,
                          max_age_days=max_age_days, keep=keep, now=now,
                          hysteresis=hysteresis, sizes_file=app_dir / ".run-sizes")

    def maybe_prune(
        self, app: str, *, max_runs: int, max_bytes: int, max_age_days: float,
        keep: Iterable[str] = (), interval_s: float = 3600.0,
    ) -> PruneResult | None:
        """Prune only when cheap checks say it may be needed.

        A full pass runs when the run count exceeds ``max_runs`` or the last full pass is
        older than ``interval_s`` (the byte and age limits are checked then); it brings the
        count (or bytes) 10% below the limit, so the next one is that many runs away. The
        usual cost on the recording path is two stats.
        """
        if not is_due(self.root / app, max_runs, interval_s):
            return None
        result = self.prune(app, max_runs=max_runs, max_bytes=max_bytes,
                            max_age_days=max_age_days, keep=keep, hysteresis=True)
        touch_stamp(self.root / app / ".last-prune")
        return result


__all__ = [
    "CORRUPT", "CRASHED", "CRASH_SIGNALS", "FAILED", "INTERRUPTED",
    "INTERRUPT_SIGNALS", "LOST", "OK", "PROBLEM_STATUSES", "RUNNING", "SCHEMA", "ActiveRun",
    "Listing", "PruneResult", "Run", "RunStore", "load_run", "lock_is_held", "new_run_id",
    "now_iso", "parse_iso", "run_id_time", "status_for",
]
