"""Process hooks: uncaught exceptions, exceptions in threads, fatal signals, the exit code.

Every hook chains to what was installed before it, so Python's own behaviour (the traceback
on stderr, the exit status, the death by signal) is unchanged; rage only takes notes. A hook
never lets an error of its own escape into the tool.
"""

from __future__ import annotations

import contextlib
import faulthandler
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from typing import Protocol
else:  # building a Protocol class costs start-up time and only the type checker needs it
    Protocol = object


class CrashSink(Protocol):
    """What the hooks report to (the Recorder)."""

    def on_crash(
        self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None: ...

    def on_interrupt(self) -> None: ...

    def on_thread_exception(self, args: threading.ExceptHookArgs) -> None: ...

    def on_exit_call(self, status: object) -> None: ...

    def crash_hint(self) -> str | None: ...


def exit_code_of(status: object) -> int:
    """The process exit code ``sys.exit(status)`` produces: None -> 0, int -> itself
    (masked like the OS does), anything else (a message) -> 1."""
    if status is None:
        return 0
    if isinstance(status, int):
        return status & 0xFF
    return 1


class Hooks:
    """Installs and removes the hooks for one sink."""

    def __init__(self, sink: CrashSink) -> None:
        self.sink = sink
        self._prev_excepthook: Callable[..., Any] | None = None
        self._prev_thread_hook: Callable[[threading.ExceptHookArgs], Any] | None = None
        self._prev_exit: Callable[..., NoReturn] | None = None
        self._fatal_file: IO[bytes] | None = None

    # -- sys.excepthook --------------------------------------------------------------------
    def _excepthook(
        self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        interrupted = issubclass(exc_type, KeyboardInterrupt)
        with contextlib.suppress(Exception):
            if interrupted:
                self.sink.on_interrupt()
            else:
                self.sink.on_crash(exc_type, exc, tb)
        prev = self._prev_excepthook or sys.__excepthook__
        prev(exc_type, exc, tb)
        if not interrupted:
            with contextlib.suppress(Exception):
                hint = self.sink.crash_hint()
                if hint:
                    sys.stderr.write(hint + "\n")
                    sys.stderr.flush()

    def _thread_hook(self, args: threading.ExceptHookArgs) -> None:
        if args.exc_type is not SystemExit:  # Python ignores SystemExit in threads too
            with contextlib.suppress(Exception):
                self.sink.on_thread_exception(args)
        prev = self._prev_thread_hook or threading.__excepthook__
        prev(args)

    def _exit(self, status: object = None) -> NoReturn:
        # sys.exit raises SystemExit, which never reaches an excepthook and whose code is
        # gone by the time atexit runs: note it here (only the main thread exits the process)
        if threading.current_thread() is threading.main_thread():
            with contextlib.suppress(Exception):
                self.sink.on_exit_call(status)
        prev = self._prev_exit
        assert prev is not None
        prev(status)

    # -- install / uninstall ---------------------------------------------------------------
    def install(self, fatal_log: IO[bytes] | None) -> None:
        """Chain the hooks; enable faulthandler into ``fatal_log`` unless the user already
        enabled it (e.g. ``PYTHONFAULTHANDLER=1``), in which case the dump stays theirs."""
        self._prev_excepthook = sys.excepthook
        sys.excepthook = self._excepthook
        self._prev_thread_hook = threading.excepthook
        threading.excepthook = self._thread_hook
        self._prev_exit = sys.exit
        sys.exit = self._exit
        if fatal_log is not None and not faulthandler.is_enabled():
            faulthandler.enable(file=fatal_log, all_threads=True)
            self._fatal_file = fatal_log

    def uninstall(self) -> None:
        """Restore what was there before, where nobody replaced our hooks since."""
        if sys.excepthook == self._excepthook and self._prev_excepthook is not None:
            sys.excepthook = self._prev_excepthook
        if threading.excepthook == self._thread_hook and self._prev_thread_hook is not None:
            threading.excepthook = self._prev_thread_hook
        if sys.exit == self._exit and self._prev_exit is not None:
            sys.exit = self._prev_exit
        self.release_fatal_log()

    def release_fatal_log(self) -> None:
        """Stop faulthandler writing into the run (at the end of the recording)."""
        if self._fatal_file is not None:
            with contextlib.suppress(Exception):
                faulthandler.disable()
            with contextlib.suppress(OSError):
                self._fatal_file.close()
            self._fatal_file = None
