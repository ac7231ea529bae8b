"""``rage.install()``: record this Python process as a run, in the wrapper's history.

One :class:`Recorder` per process. It creates the run (``RunStore.start(recorder="python")``),
routes every log record into ``log.jsonl``, chains the crash hooks, and writes the end of
the run from an ``atexit`` callback: exit code 0, ``sys.exit(n)``'s code, 1 and ``crashed``
for an uncaught exception, ``interrupted`` for KeyboardInterrupt. A run killed by a fatal
signal keeps ``running`` in meta.json but has a non-empty ``fatal.log``, which the store reads
as ``crashed``.

Recording must never change the tool: if the history cannot be written the tool runs as if
rage were absent, after one warning line on stderr.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rage.config import Settings
    from rage.integration.hooks import Hooks
    from rage.integration.loghandler import LogCapture, RunLogHandler
    from rage.record.history import ActiveRun, Run

# options that are not Settings fields
_EXTRA_OPTIONS = frozenset({"collectors"})

_current: Recorder | None = None
_install_lock = threading.Lock()


def _warn(app: str, message: str) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(f"{app}: rage: {message}\n")
        sys.stderr.flush()


def typed_argv() -> list[str]:
    """``sys.argv`` with argv[0] as the user typed it.

    A console script found on PATH runs as ``/path/bin/mytool`` but was typed ``mytool``;
    ``python -m pkg`` shows the module's file in ``sys.argv[0]`` but was typed ``-m pkg``.
    """
    argv = list(sys.argv) or [""]
    orig = list(getattr(sys, "orig_argv", []))
    if "-m" in orig[:-1]:
        i = orig.index("-m")
        return [os.path.basename(orig[0]) or orig[0], *orig[1 : i + 2], *argv[1:]]
    first = argv[0]
    if os.path.isabs(first):
        base = os.path.basename(first)
        for d in os.environ.get("PATH", "").split(os.pathsep):
            candidate = os.path.join(d, base)
            if d and os.access(candidate, os.X_OK) and os.path.isfile(candidate):
                if os.path.realpath(candidate) == os.path.realpath(first):
                    argv[0] = base
                break
    return argv


def split_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """Split install options into Settings app defaults and extra collector objects.

    Raises TypeError for an option that is neither a Settings field nor ``collectors``.
    ``collectors`` holds Collector objects; strings there are entry-point names, which go to
    the ``collectors`` setting.
    """
    import dataclasses

    from rage.config import Settings

    fields = {f.name for f in dataclasses.fields(Settings)}
    defaults: dict[str, Any] = {}
    collectors: tuple[Any, ...] = ()
    for key, value in options.items():
        if key == "collectors":
            items = tuple(value or ())
            names = tuple(c for c in items if isinstance(c, str))
            collectors = tuple(c for c in items if not isinstance(c, str))
            if names:
                defaults["collectors"] = names
        elif key in fields:
            defaults[key] = value
        else:
            raise TypeError(f"rage.install() got an unexpected option {key!r}")
    return defaults, collectors


def load_app_settings(app: str, app_defaults: Mapping[str, Any]) -> tuple[Settings, str | None]:
    """Settings for ``app``; a broken user config or RAGE_* value gives a warning and the
    app defaults alone. Invalid app defaults are the caller's bug: ValueError."""
    from rage.config import load_settings
    from rage.errors import ConfigError

    try:
        return load_settings(app, app_defaults=app_defaults), None
    except ConfigError as e:
        problem = str(e)
    try:
        return load_settings(app, app_defaults=app_defaults, environ={},
                             path=Path(os.devnull)), problem
    except ConfigError as e:
        raise ValueError(f"rage.install(): {e}") from None


class Recorder:
    """The recording of this process. ``enabled`` is False when recording is off
    (``RAGE_DISABLE``, ``disable = true``) or the history could not be written."""

    def __init__(
        self,
        app: str,
        version: str | None,
        *,
        app_defaults: Mapping[str, Any] | None = None,
        extra_collectors: tuple[Any, ...] = (),
        settings: Settings | None = None,
        run: ActiveRun | None = None,
    ) -> None:
        self.app = app
        self.version = version
        self.app_defaults: dict[str, Any] = dict(app_defaults or {})
        self.extra_collectors = extra_collectors
        self.settings = settings
        self.run = run
        self.report_command = f"rage report --app {app} --last"
        self.result: Run | None = None
        self._pid = os.getpid()
        self._handler: RunLogHandler | None = None
        self._capture: LogCapture | None = None
        self._hooks: Hooks | None = None
        self._fatal: IO[bytes] | None = None
        self._exit_status: object = None
        self._exit_noted = False
        self._crashed = False
        self._interrupted = False
        self._thread_exceptions = 0
        self._finish_lock = threading.Lock()
        self._write_warned = False

    # -- public ----------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self.run is not None

    @property
    def run_dir(self) -> Path | None:
        return self.run.dir if self.run is not None else None

    @property
    def run_id(self) -> str | None:
        return self.run.id if self.run is not None else None

    def set_report_command(self, command: str) -> None:
        """The command the crash hint tells users to run (``mytool rage`` with click/argparse)."""
        self.report_command = command

    def mark_report_command(self) -> None:
        """This invocation is the app's own ``rage`` command: keep it out of ``--last``."""
        if self.run is not None:
            with contextlib.suppress(OSError):
                self.run.update(report_command=True)

    def flush(self) -> None:
        if self._handler is not None:
            self._handler.flush()

    # -- start -----------------------------------------------------------------------------
    def _start(self) -> None:
        """Open the log, patch logging, chain the hooks, register the end of the run."""
        assert self.run is not None and self.settings is not None
        from rage.fsutil import open_private
        from rage.integration.hooks import Hooks
        from rage.integration.loghandler import LogCapture, RunLogHandler, load_scrubber

        run = self.run
        self._scrub = load_scrubber()
        self._handler = RunLogHandler(
            run.path("log.jsonl"), self.settings.output_cap, scrub=self._scrub,
            on_error=self._on_write_error,
        )
        self._capture = LogCapture(self._handler)
        self._capture.start()
        try:
            self._fatal = open_private(run.path("fatal.log"), "wb")
        except OSError:
            self._fatal = None
        self._hooks = Hooks(self)
        self._hooks.install(self._fatal)
        atexit.register(self.finish)
        os.register_at_fork(after_in_child=self._after_fork_child)

    def _on_write_error(self, e: OSError) -> None:
        if not self._write_warned:
            self._write_warned = True
            _warn(self.app, f"stopped recording the log: {e.strerror or e}")

    def _after_fork_child(self) -> None:
        # a forked child is not this run: it must neither log into it nor finish it
        if self._capture is not None:
            self._capture.active = False
        if self.run is not None:
            self.run.release()

    # -- CrashSink -------------------------------------------------------------------------
    def _append_traceback(self, text: str) -> None:
        if self.run is None:
            return
        from rage.fsutil import open_private

        scrub = getattr(self, "_scrub", None)
        data = scrub(text) if scrub else text
        with open_private(self.run.path("traceback.txt"), "ab") as f:
            f.write(data.encode("utf-8", "backslashreplace"))

    def on_crash(
        self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        import traceback

        self._crashed = True
        self.flush()
        self._append_traceback("".join(traceback.format_exception(exc_type, exc, tb)))

    def on_interrupt(self) -> None:
        self._interrupted = True
        self.flush()

    def on_thread_exception(self, args: threading.ExceptHookArgs) -> None:
        import traceback

        self._thread_exceptions += 1
        self.flush()
        name = args.thread.name if args.thread is not None else "<unknown>"
        text = "".join(
            traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback)
        )
        self._append_traceback(f"Exception in thread {name}:\n{text}\n")

    def on_exit_call(self, status: object) -> None:
        self._exit_status = status
        self._exit_noted = True

    def crash_hint(self) -> str | None:
        if self.run is None:
            return None
        return f"{self.app}: this crash was recorded; to report it run: {self.report_command}"

    # -- the end ---------------------------------------------------------------------------
    def finish(self) -> Run | None:
        """Record the end of the run (atexit calls this); idempotent, never raises."""
        with self._finish_lock:
            if self.run is None or self.result is not None or os.getpid() != self._pid:
                return self.result
            try:
                self.result = self._finish()
            except Exception as e:  # never turn the tool's exit into a traceback
                _warn(self.app, f"could not record the end of the run: {e}")
            return self.result

    def _finish(self) -> Run:
        from rage.integration.hooks import exit_code_of
        from rage.record.history import CRASHED, RunStore

        run = self.run
        assert run is not None and self.settings is not None
        extra: dict[str, Any] = {}
        truncation = []
        if not (self._crashed or self._interrupted):
            # an excepthook installed after ours (rich, IPython...) may not chain to it, but
            # Python sets sys.last_value before calling any hook for an uncaught exception
            last = getattr(sys, "last_value", None)
            if isinstance(last, KeyboardInterrupt):
                self._interrupted = True
            elif isinstance(last, Exception):
                self.on_crash(type(last), last, last.__traceback__)
        if self._handler is not None:
            if self._capture is not None:
                self._capture.stop()
            t = self._handler.finish()
            if t.dropped_bytes:
                truncation.append(t.to_dict())
            if t.total_bytes == 0:
                with contextlib.suppress(OSError):
                    os.unlink(run.path("log.jsonl"))
        if self._hooks is not None:
            self._hooks.uninstall()
        fatal = run.path("fatal.log")
        with contextlib.suppress(OSError):
            if fatal.stat().st_size == 0:
                fatal.unlink()
        extra.update(_usage())
        if truncation:
            extra["truncation"] = truncation
        if self._thread_exceptions:
            extra["thread_exceptions"] = self._thread_exceptions
        if self._crashed:
            result = run.finish(exit_code=1, status=CRASHED, **extra)
        elif self._interrupted:
            import signal

            # Python re-raises an uncaught KeyboardInterrupt as a real SIGINT death
            result = run.finish(exit_code=None, signal=int(signal.SIGINT), **extra)
        else:
            code = exit_code_of(self._exit_status) if self._exit_noted else 0
            result = run.finish(exit_code=code, **extra)
            if code and self.settings.hint_on_failure:
                with contextlib.suppress(Exception):
                    sys.stderr.write(f"{self.app}: this run failed (exit {code}); to report it"
                                     f" run: {self.report_command}\n")
                    sys.stderr.flush()
        with contextlib.suppress(Exception):
            s = self.settings
            RunStore(run.dir.parent.parent.parent).maybe_prune(
                self.app, max_runs=s.max_runs, max_bytes=s.max_bytes,
                max_age_days=s.max_age_days, keep=[run.id],
            )
        return result

    def close(self) -> None:
        """Finish now (tests and long-lived hosts); the atexit callback then does nothing."""
        self.finish()
        with contextlib.suppress(ValueError):
            atexit.unregister(self.finish)


def _usage() -> dict[str, Any]:
    try:
        import resource

        ru = resource.getrusage(resource.RUSAGE_SELF)
    except (ImportError, OSError):
        return {}
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB elsewhere
    return {
        "cpu_user_s": round(ru.ru_utime, 6),
        "cpu_sys_s": round(ru.ru_stime, 6),
        "peak_rss_bytes": int(ru.ru_maxrss) * scale,
    }


def install(app: str, version: str | None = None, **options: Any) -> Recorder:
    """Record this process as a run of ``app``; see the module docstring.

    Idempotent: later calls return the first Recorder. Raises TypeError for an unknown
    option and ValueError for an invalid app name or option value (programming errors);
    every problem of the user's environment only produces a warning line.
    """
    global _current
    with _install_lock:
        if _current is not None:
            return _current
        app_defaults, collectors = split_options(options)
        from rage.errors import UsageError
        from rage.paths import check_app

        try:
            check_app(app)
        except UsageError as e:
            raise ValueError(f"rage.install(): {e}") from None
        settings, problem = load_app_settings(app, app_defaults)
        rec = Recorder(app, version, app_defaults=app_defaults, extra_collectors=collectors,
                       settings=settings)
        if problem:
            _warn(app, problem)
        if not settings.disable:
            from rage.record.history import RunStore

            try:
                rec.run = RunStore().start(app, typed_argv(), recorder="python",
                                           app_version=version)
            except OSError as e:
                where = f": {e.filename}" if e.filename else ""
                _warn(app, f"not recording this run ({e.strerror or e}{where})")
            else:
                try:
                    from rage.record.store import save_environ

                    save_environ(rec.run, dict(os.environ))
                    rec._start()
                except OSError as e:
                    _warn(app, f"not recording this run ({e.strerror or e})")
                    with contextlib.suppress(Exception):
                        rec.run.finish(exit_code=None, status="lost")
                    rec.run = None
        _current = rec
        return rec


def current() -> Recorder | None:
    """The Recorder installed in this process, if any."""
    return _current
