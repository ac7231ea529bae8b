"""Process hooks: uncaught exceptions, exceptions in threads, fatal signals, the exit code.

Every hook chains to what was installed before it, so Python's own behaviour (the traceback
on stderr, the exit status, the death by signal) is unchanged; rage only takes notes. A hook
never lets an error of its own escape into the tool.
"""

from __future__ import annotations

import builtins
import faulthandler
import sys

TYPE_CHECKING = False  # typing, threading and contextlib cost start-up time of every tool
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable
    from types import FrameType, TracebackType
    from typing import IO, Any, NoReturn, Protocol
else:  # building a Protocol class costs start-up time and only the type checker needs it
    Protocol = object


# The code of rage's own wrappers around a tool's entry point (rage.click's main): never
# shown in the tool's traceback, which must read as it does without rage.
HIDDEN_CODE: set[Any] = set()


def without_hidden_frames(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` with the entries of :data:`HIDDEN_CODE` spliced out (tb_next is writable)."""
    while tb is not None and tb.tb_frame.f_code in HIDDEN_CODE:
        tb = tb.tb_next
    head = tb
    while tb is not None:
        nxt = tb.tb_next
        while nxt is not None and nxt.tb_frame.f_code in HIDDEN_CODE:
            nxt = nxt.tb_next
        tb.tb_next = nxt
        tb = nxt
    return head


class CrashSink(Protocol):
    """What the hooks report to (the Recorder)."""

    def on_crash(
        self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None: ...

    def on_interrupt(self) -> None: ...

    def on_broken_pipe(self) -> None: ...

    def on_thread_exception(self, args: threading.ExceptHookArgs) -> None: ...

    def on_exit_call(self, status: object) -> tuple[bool, object]: ...

    def on_exit_caught(self, status: object, previous: tuple[bool, object]) -> None: ...

    def crash_hint(self) -> str | None: ...


def exit_code_of(status: object) -> int:
    """The process exit code ``sys.exit(status)`` produces: None -> 0, int -> itself
    (masked like the OS does), anything else (a message) -> 1."""
    if status is None:
        return 0
    if isinstance(status, int):
        return status & 0xFF
    return 1


_SYS_EXIT = sys.exit
_BUILTIN_SYSTEM_EXIT = builtins.SystemExit
# sys.monitoring tool ids that no convention claims (0-2 and 5: debuggers, coverage,
# profilers, optimizers)
_MONITORING_IDS = (4, 3)
# module-level names that code uses for a `from sys import exit` taken before install
_EXIT_NAMES = ("exit", "sys_exit")


def _main_thread_ident() -> int | None:
    threading = sys.modules.get("threading")
    if threading is not None:
        return threading.main_thread().ident  # type: ignore[no-any-return]
    import _thread

    return _thread.get_ident()  # no threading module yet: install runs in the main thread


def _is_main_thread(main_ident: int | None) -> bool:
    import _thread

    return _thread.get_ident() == main_ident


def _outlived_by_script(frame: FrameType | None) -> bool:
    """Whether ``frame``'s thread is still running the main script: its outermost frame
    is a module's body (the script's, a REPL statement's) or runpy's (``python -m``).

    On 3.11 a ``SystemExit`` notes its code as it is made (see
    :meth:`Hooks._make_system_exit`); where it is freed tells whether it ended the
    process. One that does is freed by the interpreter after the last frame has
    unwound, with no Python frame left; one caught by the tool (``except SystemExit``
    around an argparse error it survives) is freed as its handler ends, under the
    script's frame. Anything else (a thread, an ``atexit`` callback collecting a cycle)
    is left as noted."""
    if frame is None:
        return False
    while frame.f_back is not None:
        frame = frame.f_back
    return frame.f_code.co_name == "<module>" or frame.f_globals.get("__name__") == "runpy"


class Hooks:
    """Installs and removes the hooks for one sink."""

    def __init__(self, sink: CrashSink) -> None:
        self.sink = sink
        self._prev_excepthook: Callable[..., Any] | None = None
        self._prev_thread_hook: Callable[[threading.ExceptHookArgs], Any] | None = None
        self._prev_exit: Callable[..., NoReturn] | None = None
        self._fatal_file: IO[bytes] | None = None
        self._prev_system_exit: type[SystemExit] | None = None
        self._system_exit: type[SystemExit] | None = None
        self._main_ident: int | None = None
        self._rebound: list[tuple[dict[str, Any], str]] = []
        # _thread.exit and exit_thread as they were: C functions raising the builtin class
        self._prev_thread_exits: dict[str, Any] = {}
        self._monitoring_id: int | None = None  # Python 3.12+: see _watch_exit

    # -- sys.excepthook --------------------------------------------------------------------
    def _excepthook(
        self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        # ^C and a closed pipe (`tool | head`) are how a shell user stops a program, not
        # crashes: recorded as interrupted, without the crash hint
        interrupted = issubclass(exc_type, KeyboardInterrupt | BrokenPipeError)
        if HIDDEN_CODE and tb is not None:
            try:  # noqa: SIM105 - no contextlib on the start-up path
                tb = exc.__traceback__ = without_hidden_frames(tb)
            except Exception:
                pass
        try:
            if issubclass(exc_type, KeyboardInterrupt):
                self.sink.on_interrupt()
            elif issubclass(exc_type, BrokenPipeError):
                self.sink.on_broken_pipe()
            else:
                self.sink.on_crash(exc_type, exc, tb)
        except Exception:
            pass
        output = sys.modules.get("rage.integration.output")
        if output is not None and tb is not None:
            try:  # noqa: SIM105 - no contextlib on the start-up path
                tb = exc.__traceback__ = output.without_tee_frames(tb)
            except Exception:
                pass
        prev = self._prev_excepthook or sys.__excepthook__
        prev(exc_type, exc, tb)
        if not interrupted:
            try:
                hint = self.sink.crash_hint()
                if hint:
                    sys.stderr.write(hint + "\n")
                    sys.stderr.flush()
            except Exception:
                pass

    def _thread_hook(self, args: threading.ExceptHookArgs) -> None:
        if issubclass(args.exc_type, SystemExit):
            # Python's hook ignores exactly SystemExit, so the recording subclass (see
            # _make_system_exit) is ignored here rather than printed by it
            return
        try:  # noqa: SIM105 - no contextlib on the start-up path
            self.sink.on_thread_exception(args)
        except Exception:
            pass
        prev = self._prev_thread_hook or sys.modules["threading"].__excepthook__
        prev(args)

    def _exit(self, status: object = None) -> NoReturn:
        prev = self._prev_exit
        assert prev is not None
        cls = self._system_exit
        if prev is _SYS_EXIT and cls is not None:
            # what the builtin raises, made of the class `except SystemExit` now names (the
            # builtin's instance would slip past such a handler): no args for None, a tuple
            # as the args; the instance notes its code, and takes it back if caught
            raise (cls() if status is None else cls(*status) if isinstance(status, tuple)
                   else cls(status))
        # sys.exit raises SystemExit, which never reaches an excepthook and whose code is
        # gone by the time atexit runs: note it here (only the main thread exits the process)
        if _is_main_thread(self._main_ident):
            try:  # noqa: SIM105 - no contextlib on the start-up path
                self.sink.on_exit_call(status)
            except Exception:
                pass
        prev(status)

    def _make_system_exit(self) -> type[SystemExit]:
        """A SystemExit that notes its code when created in the main thread.

        ``raise SystemExit(main())`` bypasses ``sys.exit`` and its code is gone by the time
        ``atexit`` runs, so the name ``SystemExit`` in builtins is bound to this subclass
        while the run is recorded. It ends the process exactly like its base (the
        interpreter matches subclasses) and carries the same name, so ``repr``, pickling and
        ``type(e) is SystemExit`` look the same. ``except SystemExit`` now names the subclass,
        so ``sys.exit`` raises it too (see :meth:`_exit`), as do names bound to the builtin
        ``sys.exit`` before install (rebound); an instance of the base made elsewhere (C
        code, ``_thread.exit``) would pass such a handler by. One that is caught, or never
        raised, takes its code back as it is freed (:func:`_outlived_by_script`).
        """
        hooks = self
        base = builtins.SystemExit
        getframe = sys._getframe
        notes: dict[int, tuple[object, tuple[bool, object]]] = {}

        class SystemExit(base):  # type: ignore[valid-type,misc]
            def __init__(self, *args: object) -> None:
                super().__init__(*args)
                if _is_main_thread(hooks._main_ident):
                    # kept aside, not in the instance: its pickle stays the builtin's
                    try:  # noqa: SIM105 - no contextlib on the start-up path
                        notes[id(self)] = (self.code, hooks.sink.on_exit_call(self.code))
                    except Exception:
                        pass

            def __del__(self) -> None:
                # freed while the main script still runs (see _outlived_by_script): it
                # was caught, or never raised, and is no exit code
                note = notes.pop(id(self), None)
                if note is None:
                    return
                try:
                    if _outlived_by_script(getframe(1)):
                        hooks.sink.on_exit_caught(*note)
                except Exception:  # no frame: the interpreter's own exit frees it
                    pass

        SystemExit.__module__ = "builtins"
        SystemExit.__qualname__ = "SystemExit"
        return SystemExit

    def _watch_exit(self) -> bool:
        """Python 3.12+: note the code of the ``SystemExit`` that ends the process, touching
        neither builtins nor ``sys.exit``: ``sys.monitoring`` calls back as an exception
        leaves a frame (``PY_UNWIND``), and a ``SystemExit`` leaving the main thread's
        outermost frame (the script's module, runpy's for ``-m``, a REPL statement) ends
        the process. One caught on the way is no exit code. Nothing is called back but
        as frames unwind with an exception (one ``isinstance`` each); no line, call or
        return is traced. False (nothing changed) without ``sys.monitoring``, off the main
        thread, or when other tools hold every id rage may take."""
        mon: Any = getattr(sys, "monitoring", None)
        if mon is None or not _is_main_thread(self._main_ident):
            return False
        for tool in _MONITORING_IDS:
            try:
                mon.use_tool_id(tool, "rage")
            except ValueError:  # in use
                continue
            break
        else:
            return False
        sink, main_ident, getframe = self.sink, self._main_ident, sys._getframe

        def unwind(code: object, offset: int, exc: BaseException) -> None:
            # getframe(1): the frame unwinding, still on the stack
            if (isinstance(exc, _BUILTIN_SYSTEM_EXIT) and getframe(1).f_back is None
                    and _is_main_thread(main_ident)):
                try:  # noqa: SIM105 - no contextlib on the start-up path
                    sink.on_exit_call(exc.code)
                except Exception:
                    pass

        mon.register_callback(tool, mon.events.PY_UNWIND, unwind)
        mon.set_events(tool, mon.events.PY_UNWIND)
        self._monitoring_id = tool
        return True

    def _unwatch_exit(self) -> None:
        tool, self._monitoring_id = self._monitoring_id, None
        if tool is not None:
            mon: Any = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
            mon.set_events(tool, 0)
            mon.register_callback(tool, mon.events.PY_UNWIND, None)
            mon.free_tool_id(tool)

    # -- install / uninstall ---------------------------------------------------------------
    def install(self, fatal_log: IO[bytes] | None) -> None:
        """Chain the hooks; enable faulthandler into ``fatal_log`` unless the user already
        enabled it (e.g. ``PYTHONFAULTHANDLER=1``), in which case the dump stays theirs."""
        self._main_ident = _main_thread_ident()
        self._prev_excepthook = sys.excepthook
        sys.excepthook = self._excepthook
        self.install_thread_hook()
        if not self._watch_exit():  # Python 3.11: sys.exit and builtins' SystemExit note it
            self._prev_exit = sys.exit
            sys.exit = self._exit
            self._prev_system_exit = builtins.SystemExit
            self._system_exit = self._make_system_exit()
            builtins.SystemExit = self._system_exit  # type: ignore[misc]
            self._rebind_captured_exits()
            self._wrap_thread_exits()
        if fatal_log is not None and not faulthandler.is_enabled():
            faulthandler.enable(file=fatal_log, all_threads=True)
            self._fatal_file = fatal_log

    def _rebind_captured_exits(self) -> None:
        """``from sys import exit`` in a module imported before install holds the builtin,
        whose exception ``except SystemExit`` (now the subclass) would not catch: point
        such names at the hook too (one dict lookup per module and name)."""
        module_type = type(sys)
        for module in list(sys.modules.values()):
            if type(module) is not module_type:  # lazy modules would load on attribute access
                continue
            namespace = module.__dict__
            for name in _EXIT_NAMES:
                if namespace.get(name) is _SYS_EXIT:
                    namespace[name] = self._exit
                    self._rebound.append((namespace, name))

    def _wrap_thread_exits(self) -> None:
        """``_thread.exit()`` raises the builtin class, in C, which ``except SystemExit``
        (now the subclass) would let through (a thread's handler around it then never
        runs): the module's exits raise the subclass while the run is recorded. C code of
        other extensions that raises ``PyExc_SystemExit`` itself is out of reach (see
        docs/ARCHITECTURE.md)."""
        import _thread

        cls = self._system_exit
        if cls is None:
            return

        def thread_exit() -> NoReturn:
            raise cls()

        for name in ("exit", "exit_thread"):
            prev = getattr(_thread, name, None)
            if prev is not None:
                self._prev_thread_exits[name] = prev
                setattr(_thread, name, thread_exit)

    def install_thread_hook(self) -> None:
        """Chain ``threading.excepthook`` once ``threading`` is imported (a tool that never
        imports it has no threads whose exceptions could be lost)."""
        threading: Any = sys.modules.get("threading")
        if threading is None or self._prev_thread_hook is not None:
            return
        self._prev_thread_hook = threading.excepthook
        threading.excepthook = self._thread_hook

    def uninstall(self) -> None:
        """Restore what was there before, where nobody replaced our hooks since."""
        if sys.excepthook == self._excepthook and self._prev_excepthook is not None:
            sys.excepthook = self._prev_excepthook
        threading: Any = sys.modules.get("threading")
        if (threading is not None and threading.excepthook == self._thread_hook
                and self._prev_thread_hook is not None):
            threading.excepthook = self._prev_thread_hook
        if sys.exit == self._exit and self._prev_exit is not None:
            sys.exit = self._prev_exit
        self._unwatch_exit()
        if builtins.SystemExit is self._system_exit and self._prev_system_exit is not None:
            builtins.SystemExit = self._prev_system_exit  # type: ignore[misc]
        for namespace, name in self._rebound:
            if namespace.get(name) == self._exit:
                namespace[name] = _SYS_EXIT
        self._rebound = []
        import _thread

        for name, prev in self._prev_thread_exits.items():
            setattr(_thread, name, prev)
        self._prev_thread_exits = {}
        self.release_fatal_log()

    def release_fatal_log(self) -> None:
        """Stop faulthandler writing into the run (at the end of the recording)."""
        if self._fatal_file is not None:
            try:
                faulthandler.disable()
                self._fatal_file.close()
            except Exception:
                pass
            self._fatal_file = None
