"""The state of one recording of a Python process, and the notes its hooks take.

A leaf of :mod:`rage.integration`: :mod:`~rage.integration.recorder` starts a recording
(a :class:`RunState` that can start and finish) and :mod:`~rage.integration.ending` writes
its end from this state; neither imports the other for it. On every recorded tool's
start-up path, so it imports nothing beyond ``os`` and ``sys`` at module level.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from types import TracebackType
    from typing import IO, Any

    from rage.config import Settings
    from rage.integration.hooks import Hooks
    from rage.integration.loghandler import LogCapture, RunLogHandler
    from rage.integration.output import StreamCapture
    from rage.record.store import Recording, RecordingSettings

OWN, WRAPPER, CHILD = "own", "wrapper", "child"
JOINED_FILE = "joined.json"  # read by rage.record.store when the wrapper finishes its run


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


def command_of(app: str) -> str:
    """How to start this tool again from the shell it was started in, for hints (``mytool
    rage 1a2b3c4d``): its name when PATH finds it (a console script), the path it ran by
    when that runs as typed (``./mytool``), the interpreter and the script's path for a
    script run by it (``python mytool.py``: ``mytool.py`` alone is no command), ``app``
    otherwise (``python -m``, ``-c``)."""
    argv0 = sys.argv[0] if sys.argv else ""
    if not argv0 or argv0 in {"-c", "-m"} or os.path.basename(argv0) == "__main__.py":
        return app
    typed = typed_argv()[0]
    if typed != argv0:  # found on PATH: typed as its name
        return typed
    if os.sep in argv0 and not argv0.endswith(".py") and os.access(argv0, os.X_OK):
        return _shell_word(argv0)
    python = (getattr(sys, "orig_argv", None) or [""])[0] or sys.executable
    return f"{_shell_word(python)} {_shell_word(argv0)}"


def _shell_word(word: str) -> str:
    if word and all(c.isalnum() or c in "@%+=:,./-_" for c in word):
        return word
    import shlex  # (rarely: its `re` costs start-up time)

    return shlex.quote(word)


class RunState:
    """What a recording of this process knows and notes as it goes (the hooks' sink);
    :class:`rage.integration.recorder.Recorder` adds starting and finishing it.
    ``enabled`` is False when recording is off (``RAGE_DISABLE``, ``disable = true``) or
    the history could not be written."""

    def __init__(
        self,
        app: str,
        version: str | None,
        *,
        app_defaults: Mapping[str, Any] | None = None,
        extra_collectors: tuple[Any, ...] = (),
        settings: Settings | RecordingSettings | None = None,
        run: Recording | None = None,
    ) -> None:
        self.app = app
        self.version = version
        self.app_defaults: dict[str, Any] = dict(app_defaults or {})
        # the files the app reads its configuration from (rage.record.fingerprint)
        self.config_files: tuple[str, ...] = ()
        self.extra_collectors = extra_collectors
        self.settings = settings
        self.run = run  # the run this process created (mode OWN), holding its lock
        self.dir: str | None = run.run_dir if run is not None else None  # where files go
        self.mode = OWN
        self.root = ""
        # what a hint tells users to run, followed by the run's short id
        self.report_command = "rage report"
        self.result: dict[str, Any] | None = None
        self.started_s = 0.0
        self.earlier_crashes: list[tuple[str, str]] = []  # (run id, fatal error) to mention
        self._pid = os.getpid()
        self._live_entry: str | None = None
        self._handler: RunLogHandler | None = None
        self._capture: LogCapture | None = None
        self._output: StreamCapture | None = None
        self._hooks: Hooks | None = None
        self._fatal: IO[bytes] | None = None
        self._scrub: Callable[[str], str] | None = None
        self._exit_status: object = None
        self._exit_noted = False
        self._crashed = False
        self._interrupted = False
        self._broken_pipe = False
        self._broken_pipe_raised = False
        self._report_command_run = False
        self._thread_exceptions = 0
        self._finished = False
        self._write_warned = False

    # -- public ----------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self.dir is not None

    @property
    def run_dir(self) -> Path | None:
        """The directory this process records into (its run, or the run it joined)."""
        if self.dir is None:
            return None
        from pathlib import Path

        return Path(self.dir)

    @property
    def run_id(self) -> str | None:
        if self.dir is None:
            return None
        host = self.dir if self.mode != CHILD else os.path.dirname(os.path.dirname(self.dir))
        return os.path.basename(host)

    def flush(self) -> None:
        if self._handler is not None:
            self._handler.flush()

    def file(self, name: str) -> str:
        assert self.dir is not None
        return os.path.join(self.dir, name)

    # -- CrashSink -------------------------------------------------------------------------
    def _append_traceback(self, text: str) -> None:
        if self.dir is None:
            return
        from rage.fsutil import open_private

        scrub = self._scrub
        if scrub is None:
            from rage.integration.loghandler import load_scrubber

            scrub = self._scrub = load_scrubber()
        with open_private(self.file("traceback.txt"), "ab") as f:
            f.write(scrub(text).encode("utf-8", "backslashreplace"))

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

    def on_broken_pipe(self) -> None:
        self._broken_pipe = self._broken_pipe_raised = True
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

    def on_exit_call(self, status: object) -> tuple[bool, object]:
        """Note ``status`` as the exit code; returns the note it replaces, for
        :meth:`on_exit_caught`."""
        previous = (self._exit_noted, self._exit_status)
        self._exit_status = status
        self._exit_noted = True
        return previous

    def on_exit_caught(self, status: object, previous: tuple[bool, object]) -> None:
        """The ``SystemExit`` that noted ``status`` did not end the process: the note is
        ``previous`` again, unless a later exit replaced it."""
        if self._exit_noted and self._exit_status is status:
            self._exit_noted, self._exit_status = previous

    def crash_hint(self) -> str | None:
        if self.dir is None:
            return None
        return f"{self.app}: this crash was recorded; to report it run: {self.hint_command()}"

    def hint_command(self) -> str:
        """``rage report 1a2b3c4d`` (or ``mytool rage 1a2b3c4d``): names this very run, which
        ``--last`` would not once another run has started."""
        name = os.path.basename(self.dir or "")
        if self.mode == CHILD or "-" not in name:
            return self.report_command
        return f"{self.report_command} {name.rsplit('-', 1)[-1]}"
