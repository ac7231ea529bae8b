"""``rage.install()``: record this Python process as a run, in the wrapper's history.

One :class:`Recorder` per process. It creates the run (``recorder: python``), dated from the
process's start, tees ``sys.stdout``/``sys.stderr`` into ``stdout.log``/``stderr.log``,
routes every log record into ``log.jsonl``, chains the crash hooks, and writes the end of the
run from an ``atexit`` callback: exit code 0, ``sys.exit(n)``'s or ``raise SystemExit(n)``'s
code, 1 and ``crashed`` for an uncaught exception, ``interrupted`` for KeyboardInterrupt and
for a closed pipe (``tool | head``: SIGPIPE, as a shell sees a program stopped that way). A
run killed by a fatal signal keeps ``running`` in meta.json but has a non-empty
``fatal.log``, which the store reads as ``crashed``.

A process that is not a user's invocation records into the run it belongs to instead (see
:mod:`rage.integration.handoff`): a child of a recorded run of the same app (a reloader)
into ``<run>/children/<pid>/``, a tool started by ``rage run`` into the wrapper's run.

Start-up is the product here: every recorded tool pays it. The install path imports only
:mod:`rage.record.store` and what it needs; ``logging`` is patched when the tool imports it
(not before), and the configuration loader runs only when a config file or ``RAGE_*``
variable exists (its answer is cached) or an app default changes how runs are recorded.

Recording must never change the tool: if the history cannot be written the tool runs as if
rage were absent, after one warning line on stderr.
"""

from __future__ import annotations

import _thread
import atexit
import os
import sys

from rage.integration.options import RECORDING_NAMES, split_options
from rage.integration.runstate import CHILD, OWN, WRAPPER, RunState, typed_argv

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from rage.config import Settings
    from rage.record.store import RecordingSettings


_current: Recorder | None = None
_install_lock = _thread.allocate_lock()  # threading itself costs start-up time


def _warn(app: str, message: str) -> None:
    try:
        sys.stderr.write(f"{app}: rage: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


def load_app_settings(app: str, app_defaults: Mapping[str, Any]) -> tuple[Settings, str | None]:
    """Settings for ``app``; a broken user config or RAGE_* value gives a warning and the
    app defaults alone. Invalid app defaults are the caller's bug: ValueError."""
    from pathlib import Path

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


class Recorder(RunState):
    """The recording of this process: a :class:`RunState` that starts (tees, hooks,
    logging) and finishes (at exit, through :mod:`rage.integration.ending`)."""

    # -- public ----------------------------------------------------------------------------
    def set_report_command(self, command: str) -> None:
        """The command the crash hint tells users to run (``mytool rage`` with click/argparse)."""
        self.report_command = command

    def mark_report_command(self) -> None:
        """This invocation is the app's own ``rage`` command, not a run of the tool: its own
        run is dropped; a run it joined (``rage run -- mytool rage``) is kept out of
        ``--last``."""
        self._report_command_run = True
        if self.mode == OWN and self.run is not None and not self._finished:
            self._discard()
            return
        if self.run is not None:
            try:  # noqa: SIM105 - no contextlib on the start-up path
                self.run.update(report_command=True)
            except OSError:
                pass

    def _discard(self) -> None:
        """Stop recording and delete this process's run, as if it had never been recorded
        (the output tees stay in place, passing output through, as at the end of a run)."""
        assert self.run is not None and self.dir is not None
        self._finished = True  # the exit has nothing left to record
        try:
            if self._capture is not None:
                self._capture.stop()
            if self._handler is not None:
                self._handler.finish()
            if self._output is not None:
                self._output.finish()
            if self._hooks is not None:
                self._hooks.uninstall()
            from rage.integration.handoff import withdraw
            from rage.record.prune import delete_run

            withdraw(self._live_entry)
            self.run.release()
            delete_run(self.dir)
        except Exception as e:  # never let rage's housekeeping fail the report command
            _warn(self.app, f"could not drop the report command's own run: {e}")
        self.run = self.dir = None

    # -- start -----------------------------------------------------------------------------
    def _start(self) -> None:
        """Tee the output, chain the hooks, patch logging, register the end of the run."""
        assert self.dir is not None and self.settings is not None
        from rage.fsutil import open_private
        from rage.integration.hooks import Hooks

        try:
            self._fatal = open_private(self.file("fatal.log"), "wb")
        except OSError:
            self._fatal = None
        if self.mode != WRAPPER:  # the wrapper captures the output outside the process
            from rage.integration.output import StreamCapture

            self._output = StreamCapture()
            self._output.start(self.file, self.settings.output_cap)
        self._hooks = Hooks(self)
        self._hooks.install(self._fatal)
        atexit.register(self.finish)
        os.register_at_fork(after_in_child=self._after_fork_child)
        from rage.integration.lazyimport import after_import

        after_import("threading", self._hooks.install_thread_hook)
        after_import("logging", self._start_logging)

    def _start_logging(self) -> None:
        if self.dir is None or self._finished or self._handler is not None:
            return
        assert self.settings is not None
        from rage.integration.loghandler import LogCapture, RunLogHandler, load_scrubber

        self._scrub = load_scrubber()
        try:
            self._handler = RunLogHandler(
                self.file("log.jsonl"), self.settings.output_cap, scrub=self._scrub,
                on_error=self._on_write_error,
            )
        except OSError as e:
            self._on_write_error(e)
            return
        self._capture = LogCapture(self._handler)
        self._capture.start()

    def _on_write_error(self, e: OSError) -> None:
        if not self._write_warned:
            self._write_warned = True
            _warn(self.app, f"stopped recording the log: {e.strerror or e}")

    def _after_fork_child(self) -> None:
        # a forked child is not this run: it must neither log into it nor finish it
        if self._capture is not None:
            self._capture.active = False
        if self._output is not None:
            self._output.detach_in_child()
        if self.run is not None:
            self.run.release()

    # -- the end ---------------------------------------------------------------------------
    def finish(self) -> dict[str, Any] | None:
        """Record the end of the run (atexit calls this); idempotent, never raises.
        Returns the final meta.json of the run this process created (None otherwise)."""
        if self.dir is None or self._finished or os.getpid() != self._pid:
            return self.result
        self._finished = True
        try:
            from rage.integration.ending import finish_run

            self.result = finish_run(self)
        except Exception as e:  # never turn the tool's exit into a traceback
            _warn(self.app, f"could not record the end of the run: {e}")
        return self.result

    def close(self) -> None:
        """Finish now (tests and long-lived hosts); the atexit callback then does nothing."""
        self.finish()
        try:  # noqa: SIM105 - no contextlib on the start-up path
            atexit.unregister(self.finish)
        except ValueError:
            pass


def _settings_for(app: str, app_defaults: Mapping[str, Any]
                  ) -> tuple[Settings | RecordingSettings, str | None]:
    if RECORDING_NAMES.intersection(app_defaults):
        return load_app_settings(app, app_defaults)
    from rage.record.store import recording_settings

    return recording_settings(app)


def _begin(rec: Recorder) -> None:
    """Find or create the run this process records into, then start recording."""
    import time

    from rage.integration.handoff import (
        CHILDREN,
        announce,
        earlier_crashes,
        find_wrapper_run,
        parent_run,
        process_start,
    )
    from rage.paths import home_root_str
    from rage.record.store import save_environ, start_run, terminal_columns

    app = rec.app
    rec.root = root = home_root_str()
    started = process_start()
    started_ns, t0 = started if started is not None else (time.time_ns(), time.monotonic())
    rec.started_s = started_ns / 1e9
    parent = parent_run(root, app)
    host: str
    if parent is not None:
        from rage.fsutil import private_dir

        rec.mode = CHILD
        rec.dir = private_dir(os.path.join(parent, CHILDREN, str(os.getpid())))
        host = parent
        from rage.integration.ending import write_child_info

        write_child_info(rec, "running", None, None, {})  # stays if the child is killed
    else:
        wrapper = find_wrapper_run(root, rec.started_s, at_start=True)
        if wrapper is not None:
            rec.mode, rec.dir = WRAPPER, wrapper
            host = wrapper
        else:
            rec.run = start_run(root, app, typed_argv(), recorder="python",
                                app_version=rec.version, started_ns=started_ns, t0=t0,
                                extra=terminal_columns())
            rec.dir = host = rec.run.run_dir
            save_environ(rec.run, dict(os.environ), python=_python(),
                         config_files=rec.config_files)
    if rec.mode == OWN:
        rec.earlier_crashes = earlier_crashes(root, app)
    rec._live_entry = announce(root, app, host)
    rec._start()


def _python() -> tuple[str, list[str]]:
    """This interpreter's version and site directories, for the run's fingerprint."""
    return (sys.version.split()[0],
            [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))])


def install(app: str, version: str | None = None, **options: Any) -> Recorder:
    """Record this process as a run of ``app``; see the module docstring.

    Idempotent: later calls return the first Recorder. Raises TypeError for an unknown
    option and ValueError for an invalid app name or option value (programming errors);
    every problem of the user's environment only produces a warning line.
    """
    with _install_lock:
        return _install(app, version, options)


def _install(app: str, version: str | None, options: Mapping[str, Any]) -> Recorder:
    global _current
    if _current is not None:
        return _current
    options = dict(options)
    config_files = options.pop("config_files", None) or ()
    if isinstance(config_files, str | os.PathLike):
        config_files = (config_files,)
    app_defaults, collectors = split_options(options)
    from rage.paths import is_app_name

    if not is_app_name(app):
        raise ValueError(f"rage.install(): invalid app name {app!r}: use letters, digits,"
                         " '.', '_', '+', '-'")
    settings, problem = _settings_for(app, app_defaults)
    rec = Recorder(app, version, app_defaults=app_defaults, extra_collectors=collectors,
                   settings=settings)
    rec.config_files = tuple(os.fspath(p) for p in config_files)
    if problem:
        _warn(app, problem)
    if not settings.disable:
        try:
            _begin(rec)
        except OSError as e:
            where = f": {e.filename}" if e.filename else ""
            _warn(app, f"not recording this run ({e.strerror or e}{where})")
            if rec.run is not None:
                try:  # noqa: SIM105 - no contextlib on the start-up path
                    rec.run.finish_meta(exit_code=None, status="lost")
                except Exception:
                    pass
            rec.run = rec.dir = None
    _current = rec
    return rec


def current() -> Recorder | None:
    """The Recorder installed in this process, if any."""
    return _current


__all__ = ["Recorder", "current", "install", "split_options", "typed_argv"]
