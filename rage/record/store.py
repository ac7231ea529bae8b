"""The write side of the run store, kept cheap to import: every recorded command pays it.

:mod:`rage.record.history` is the run store's full API (reading, listing, resolving, retention) and
builds on this module; ``rage run`` uses this module alone on its usual path, which imports
no dataclasses, json, re, pathlib, datetime or enum (together ~25 ms of start-up). The on-disk
protocol lives here once: the run is built under a hidden name, locked, given its
``meta.json``, then renamed into place so a concurrent prune never sees it unlocked.
"""

from __future__ import annotations

import fcntl
import os
import time

from rage._version import __version__
from rage.defaults import (
    DEFAULT_MAX_AGE_DAYS,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_RUNS,
    DEFAULT_OUTPUT_CAP,
)
from rage.fsutil import (
    is_own_dir,
    private_dir,
    read_own,
    read_regular,
    write_atomic,
    write_json_atomic,
    write_json_new,
)
from rage.paths import check_app, config_file_str, home_root_str, is_app_name
from rage.record.runid import is_run_id, new_run_id
from rage.record.versions import tool_version

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Iterable, Mapping
    from typing import Any
else:
    import _signal  # the same numbers as signal's, without its enums (enum: ~3 ms)

SCHEMA = 1

RUNNING, OK, FAILED, CRASHED, INTERRUPTED, LOST, CORRUPT = (
    "running", "ok", "failed", "crashed", "interrupted", "lost", "corrupt",
)

CRASH_SIGNALS = frozenset(
    int(getattr(_signal, n)) for n in ("SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL", "SIGFPE", "SIGSYS")
    if hasattr(_signal, n)
)
INTERRUPT_SIGNALS = frozenset(
    int(getattr(_signal, n)) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGPIPE")
    if hasattr(_signal, n)
)

# RAGE_* variables that are not settings: they never send a recorder to the full config path
_NOT_SETTINGS = frozenset({"RAGE_HOME", "RAGE_CONFIG", "RAGE_DEBUG", "RAGE_UPLOAD_TOKEN",
                           "RAGE_PREBUILD"})
_TRUE = frozenset({"1", "true", "yes", "on"})  # rage.config's spellings of a true boolean


class RecordingSettings:
    """The settings a recorder needs, with the meaning of :class:`rage.config.Settings`."""

    __slots__ = ("attach", "disable", "hint_on_failure", "max_age_days", "max_bytes",
                 "max_runs", "native_backtrace", "output_cap")

    def __init__(self, *, disable: bool = False, output_cap: int = DEFAULT_OUTPUT_CAP,
                 attach: tuple[str, ...] = (), hint_on_failure: bool = False,
                 max_runs: int = DEFAULT_MAX_RUNS, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_age_days: float = DEFAULT_MAX_AGE_DAYS,
                 native_backtrace: bool = False) -> None:
        self.disable = disable
        self.native_backtrace = native_backtrace
        self.output_cap = output_cap
        self.attach = attach
        self.hint_on_failure = hint_on_failure
        self.max_runs = max_runs
        self.max_bytes = max_bytes
        self.max_age_days = max_age_days


def _is_setting_var(name: str) -> bool:
    return (name.startswith("RAGE_") and name not in _NOT_SETTINGS
            and not name.startswith("RAGE_SERVER_"))


def recording_settings(app: str) -> tuple[RecordingSettings, str | None]:
    """The recording settings for ``app`` and a warning if the configuration is broken.

    Without a config file or ``RAGE_*`` setting variables these are the built-in defaults,
    found with one stat. Otherwise :func:`rage.config.load_settings_lenient` decides (TOML
    and dataclasses: ~20 ms), and its answer is cached in ``<root>/<app>/.settings-cache``
    for as long as the config file (path, size, times, inode), the variables and rage's
    version stay the same.
    """
    import sys

    env = tuple(sorted((k, v) for k, v in os.environ.items() if _is_setting_var(k)))
    cfg = config_file_str()
    stamp: tuple[int, ...] | None
    try:
        st = os.stat(cfg)
        stamp = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev)
        if st.st_size == 0 and (st.st_mode & 0o170000 == 0o100000 or cfg == os.devnull):
            # an empty file, or RAGE_CONFIG=/dev/null (which reads as one), says what no
            # file says: no loader, no cache
            stamp = None
    except FileNotFoundError:
        stamp = None
    except OSError:
        stamp = (-1,)  # unreadable: let the config loader say so, every time
    if stamp is None and len(env) == 1 and env[0][0] == "RAGE_DISABLE" and (
            env[0][1].strip().lower() in _TRUE):
        return RecordingSettings(disable=True), None  # what the config loader would say
    missing = None
    if stamp is None and os.environ.get("RAGE_CONFIG") and not os.path.exists(cfg):
        # a typo in RAGE_CONFIG: said on every run (as a broken file is), then no config
        from rage.config import missing_config

        missing = missing_config(cfg)
    if stamp is None and not env:
        return RecordingSettings(), missing
    key = (sys.hexversion, __version__, app, cfg, stamp, env)
    cache = os.path.join(home_root_str(), app, ".settings-cache")
    if stamp != (-1,) and is_app_name(app):
        hit = _read_cache(cache, key)
        if hit is not None:
            return hit
    from rage.config import load_settings_lenient

    if missing:
        from pathlib import Path

        s, warning = load_settings_lenient(app, path=Path(os.devnull))
        warning = "; ".join(w for w in (missing, warning) if w)
    else:
        s, warning = load_settings_lenient(app)
    result = RecordingSettings(
        disable=s.disable, output_cap=s.output_cap, attach=s.attach,
        hint_on_failure=s.hint_on_failure, max_runs=s.max_runs, max_bytes=s.max_bytes,
        max_age_days=s.max_age_days, native_backtrace=s.native_backtrace,
    ), warning
    # a disabled run leaves nothing behind, not even a cache, unless its app has history
    if stamp != (-1,) and is_app_name(app) and (
            not s.disable or os.path.isdir(os.path.dirname(cache))):
        _write_cache(cache, key, *result)
    return result


def _read_cache(path: str, key: tuple[Any, ...]
                ) -> tuple[RecordingSettings, str | None] | None:
    import marshal

    # only a regular file this user owns and wrote (never through a symlink): marshal data
    # is trusted as code is, so a planted cache must never be loaded
    data = read_own(path, 1 << 20)
    if data is None:
        return None
    try:
        cached_key, values, warning = marshal.loads(data)
        if cached_key != key or not isinstance(values, dict):
            return None
        return RecordingSettings(**values), warning
    except (ValueError, EOFError, TypeError):
        return None  # stale, from another version or damaged: recompute


def _write_cache(path: str, key: tuple[Any, ...], settings: RecordingSettings,
                 warning: str | None) -> None:
    """Best effort: a recorder never fails because a cache could not be written."""
    import marshal

    values = {name: getattr(settings, name) for name in RecordingSettings.__slots__}
    try:
        private_dir(os.path.dirname(path))
        if is_own_dir(os.path.dirname(path)):  # never into a planted symlink's target
            write_atomic(path, marshal.dumps((key, values, warning)))
    except (OSError, ValueError):
        pass


def prebuild_after_run(root: str, app: str) -> None:
    """Once a recorded command has ended: what the first report would build, built ahead
    once per home by a detached child (rage.report.prebuild). One stat once it is done,
    no import; ``RAGE_PREBUILD=0`` turns it off. Both recorders call it."""
    from rage.paths import prebuild_needed

    if os.environ.get("RAGE_PREBUILD") != "0" and prebuild_needed(root):
        from rage.report.prebuild import spawn_if_needed

        spawn_if_needed(root, app)


def prune_due(app_dir: str | os.PathLike[str], max_runs: int, interval_s: float) -> bool:
    """Whether retention needs a full pass: more than ``max_runs`` runs (0: no limit), or the
    last full pass (``<app_dir>/.last-prune``) is older than ``interval_s``. Raises OSError
    when the app has no runs directory.

    Costs two stats whatever the history's size: a directory's link count is 2 plus its
    subdirectories on Linux file systems that keep it (ext4, xfs, tmpfs), an upper bound of
    the run count; only when that bound exceeds ``max_runs`` are the runs counted. Here, not
in :mod:`rage.record.prune`: the wrapper asks it after every command, and imports that
module only when this says there is work."""
    base = os.fspath(app_dir)
    runs = os.path.join(base, "runs")
    links = os.stat(runs).st_nlink  # OSError: nothing to prune
    if max_runs > 0 and (links < 2 or links - 2 > max_runs):
        with os.scandir(runs) as it:
            if sum(1 for e in it if is_run_id(e.name)) > max_runs:
                return True
    return full_pass_due(base, interval_s)


def full_pass_due(app_dir: str, interval_s: float) -> bool:
    """Whether the last full retention pass (``<app_dir>/.last-prune``) is older than
    ``interval_s``, or never ran."""
    try:
        mtime = os.lstat(os.path.join(app_dir, ".last-prune")).st_mtime
    except OSError:
        return True
    return not time.time() - mtime < interval_s


def status_for(exit_code: int | None, signal: int | None) -> str:
    """Classify how a process ended."""
    if signal:
        if signal == getattr(_signal, "SIGPIPE", None):
            return OK  # the reader stopped reading (`| head`): normal in a pipeline
        if signal in CRASH_SIGNALS:
            return CRASHED
        if signal in INTERRUPT_SIGNALS:
            return INTERRUPTED
        return FAILED
    return OK if exit_code == 0 else FAILED


def now_iso(now_ns: int | None = None) -> str:
    """UTC time as ``2026-01-02T03:04:05.123456Z`` (no datetime import: ~1 ms)."""
    ns = time.time_ns() if now_ns is None else now_ns
    secs, rest = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{rest // 1000:06d}Z"


class Recording:
    """A run being recorded, by path string. Holds the run's lock until :meth:`finish_meta`
    or :meth:`release`. :class:`rage.record.history.ActiveRun` is the same with ``Path`` and
    ``Run``.
    """

    def __init__(self, app: str, run_dir: str, meta: dict[str, Any], lock_fd: int | None,
                 t0: float | None = None, *, tmp_dir: str | None = None) -> None:
        self.app = app
        self.run_dir = run_dir
        self.id = os.path.basename(run_dir)
        self.meta = meta
        self._lock_fd: int | None = lock_fd
        self._t0 = time.monotonic() if t0 is None else t0
        # until :meth:`publish`: the hidden directory the run is built in (see open_run)
        self._tmp_dir = tmp_dir
        # the secret values of its environment, until :meth:`finish_meta` settles where the
        # run's files hold them (rage.record.hidden)
        self.hidden: Any = None

    def file(self, name: str) -> str:
        """The path of the run's file ``name`` (in its hidden directory until published:
        what is open there stays open across the rename)."""
        return os.path.join(self._tmp_dir or self.run_dir, name)

    def publish(self, pid: int | None = None) -> None:
        """Write the initial meta.json with the run's ``pid`` (None: this process) and
        rename the run into place, locked. On failure the hidden directory is removed, the
        lock released, and the OSError raised."""
        tmp_dir = self._tmp_dir
        if tmp_dir is None:
            return
        self.meta["pid"] = pid if pid is not None else os.getpid()
        try:
            self.write_json("meta.json", self.meta)
            os.rename(tmp_dir, self.run_dir)  # the flock stays with the inode
        except BaseException:
            self.discard()
            raise
        self._tmp_dir = None

    def write_json(self, name: str, obj: Any) -> None:
        """Write the run's file ``name`` as JSON: straight into a new file while the run is
        hidden (no one reads it before :meth:`publish`: a temporary name and a rename
        would only cost), atomically once it is published."""
        if self._tmp_dir is not None:
            write_json_new(os.path.join(self._tmp_dir, name), obj)
        else:
            write_json_atomic(os.path.join(self.run_dir, name), obj)

    def discard(self) -> None:
        """Drop a run that was never published (the command could not start): its hidden
        directory goes, nothing of it is ever seen. A published run is only released."""
        tmp_dir, self._tmp_dir = self._tmp_dir, None
        self.release()
        if tmp_dir is not None:
            import shutil

            shutil.rmtree(tmp_dir, ignore_errors=True)

    def update(self, **fields: Any) -> None:
        """Merge ``fields`` into meta.json (atomically)."""
        self.meta.update(fields)
        write_json_atomic(os.path.join(self.run_dir, "meta.json"), self.meta)

    def finish_meta(self, *, exit_code: int | None, signal: int | None = None,
                    status: str | None = None, **extra: Any) -> dict[str, Any]:
        """Record the end of the run, release the lock, return the final meta."""
        if self.hidden is not None:
            from rage.record.context import settle_hidden

            settle_hidden(self.run_dir, self.hidden)
            self.hidden = None
        joined = read_joined(self.run_dir, exit_code, signal)
        if joined:
            status = status or joined.pop("status", None)
            extra = {**joined, **extra}
        self.update(
            status=status or status_for(exit_code, signal),
            exit_code=exit_code,
            signal=signal,
            ended_at=now_iso(),
            duration_s=round(time.monotonic() - self._t0, 6),
            **extra,
        )
        self.release()
        return self.meta

    def take_lock(self) -> int | None:
        """Hand the lock's descriptor over to the caller, who now owns it."""
        fd, self._lock_fd = self._lock_fd, None
        return fd

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


JOINED_MAX_BYTES = 1024 * 1024  # a few hundred bytes: an app version, a status


def read_joined(run_dir: str, exit_code: int | None, signal: int | None) -> dict[str, Any]:
    """What a Python tool with ``rage.install`` that ran under this wrapper run left in
    ``joined.json`` (app_version, ...; see rage.integration.recorder). Its ``status`` (an
    uncaught exception: crashed; a closed pipe: interrupted) is kept only when it explains
    the exit code the wrapper saw."""
    path = os.path.join(run_dir, "joined.json")
    if not os.path.lexists(path):
        return {}
    import json

    try:
        joined = json.loads(read_regular(path, JOINED_MAX_BYTES))
        os.unlink(path)
    except (OSError, ValueError):
        return {}
    if not isinstance(joined, dict):
        return {}
    if signal is not None or joined.pop("exit_code", None) != exit_code:
        joined.pop("status", None)
    return joined


def terminal_columns() -> dict[str, int]:
    """``{"columns": N}`` for a run's meta: the width of the terminal its output goes to
    (standard output's, else standard error's; under `rage run` the pseudo-terminal that
    stands in for it has its size), where a program that wraps at its console's width wraps
    it. Nothing when neither is a terminal. The report finds a value cut at that width with
    it (:mod:`rage.redact.wraps`)."""
    for fd in (1, 2):
        try:
            return {"columns": os.get_terminal_size(fd).columns}
        except OSError:
            continue
    return {}


def start_run(
    root: str | os.PathLike[str],
    app: str,
    argv: Iterable[str],
    *,
    cwd: str | None = None,
    recorder: str,
    app_version: str | None = None,
    pid: int | None = None,
    extra: Mapping[str, Any] | None = None,
    started_ns: int | None = None,
    t0: float | None = None,
) -> Recording:
    """Create a run directory under ``root``, take its lock and write the initial meta.json.

    ``started_ns`` (``time.time_ns()``) and ``t0`` (``time.monotonic()``) let a recorder
    that started its process first date the run from then. Raises OSError when the history
    cannot be written; recorders catch it and carry on.
    """
    rec = open_run(root, app, argv, cwd=cwd, recorder=recorder, app_version=app_version,
                   extra=extra, started_ns=started_ns, t0=t0)
    assert rec is not None
    rec.publish(pid)
    return rec


def open_run(
    root: str | os.PathLike[str],
    app: str,
    argv: Iterable[str],
    *,
    cwd: str | None = None,
    recorder: str,
    app_version: str | None = None,
    extra: Mapping[str, Any] | None = None,
    started_ns: int | None = None,
    t0: float | None = None,
    existing_only: bool = False,
) -> Recording | None:
    """The first half of :func:`start_run`: the run's hidden directory, created and locked,
    where files can be written before :meth:`Recording.publish` gives it its meta.json
    (with the pid, which a caller may learn only later) and its name. Nothing is visible
    until then; :meth:`Recording.discard` drops it.

    ``existing_only``: create no directory but the run's own; None when the app's history
    directory does not exist yet. Raises OSError when the history cannot be written.
    """
    app_dir = os.path.join(os.fspath(root) if existing_only else private_dir(os.fspath(root)),
                           check_app(app))
    runs = os.path.join(app_dir, "runs")
    for d in (app_dir, runs):  # a symlink planted here is never followed
        if not existing_only:
            try:  # noqa: SIM105 - no contextlib on the start-up path
                os.mkdir(d, 0o700)
            except FileExistsError:
                pass
        if not is_own_dir(d):
            if existing_only and not os.path.lexists(d):
                return None
            import errno

            raise OSError(errno.EPERM, "unsafe history directory (a symlink, or not yours)", d)
    if app_version is None and extra and isinstance(extra.get("executable"), str):
        app_version = tool_version(app_dir, extra["executable"])
    for _attempt in range(5):
        run_id = new_run_id(None if started_ns is None else started_ns / 1e9)
        tmp_dir = os.path.join(runs, f".new-{run_id}")
        run_dir = os.path.join(runs, run_id)
        if os.path.exists(run_dir):
            continue
        try:
            os.mkdir(tmp_dir, 0o700)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 32 random bits colliding five times in one second
        raise OSError("could not allocate a run id")
    if cwd is None:
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = None
    meta: dict[str, Any] = {
        "schema": SCHEMA,
        "id": run_id,
        "app": app,
        "app_version": app_version,
        "argv": list(argv),
        "cwd": cwd,
        "started_at": now_iso(started_ns),
        "ended_at": None,
        "duration_s": None,
        "status": RUNNING,
        "exit_code": None,
        "signal": None,
        "pid": None,  # set by publish
        "rage_version": __version__,
        "recorder": recorder,
    }
    if extra:
        meta.update(extra)
    try:
        lock_fd = lock_run(tmp_dir)
    except BaseException:
        import shutil

        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    return Recording(app, run_dir, meta, lock_fd, t0, tmp_dir=tmp_dir)


def lock_run(run_dir: str) -> int:
    """Take the lock of the new run ``run_dir`` (see :mod:`rage.record.runlock`); return
    its descriptor. The lock is the run's directory itself: a ``lock`` file is one more
    inode to create on every recorded command, which on ext4 costs more than a whole
    meta.json write (and much more without a journal, where it is looked for past the
    recently deleted ones). Only a file system that refuses an exclusive lock on a
    directory open for reading (NFS emulates flock with write locks) gets the file."""
    fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd
    except OSError:
        os.close(fd)
    fd = os.open(os.path.join(run_dir, "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def save_environ(rec: Recording, environ: dict[str, str], *, executable: str | None = None,
                 python: tuple[str | None, Iterable[str]] | None = None,
                 config_files: Iterable[str] = ()) -> None:
    """Keep the environment the run saw as ``environ.json``, secret-named values masked;
    what a report needs to remove those values from the run's files without them
    (:mod:`rage.record.hidden`); and the run's fingerprint (:mod:`rage.record.context`:
    the wrapped ``executable``, the integration's ``python``, the app's ``config_files``),
    which is never worth failing a run for.

    The `environment` collector reports it instead of the reporting process's environment.
    """
    from rage.record import context

    cache = os.path.join(home_root_str(), ".cache")
    masked = context.masked_environ(environ, cache)
    rec.write_json("environ.json", masked)
    rec.hidden = context.start_hidden(rec.file(context.HIDDEN_FILE),
                                      [v for k, v in environ.items() if masked[k] is not v])
    # written with the meta: at its publication (the wrapper) or the run's end
    try:  # noqa: SIM105 - no contextlib on the start-up path
        rec.meta[context.FINGERPRINT] = context.fingerprint(
            cache, masked=masked, environ=environ,
            executable=executable, python=python, config_files=config_files)
    except (OSError, ValueError):
        pass  # a report then says nothing of what changed since this run

