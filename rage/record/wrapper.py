"""``rage run``: run a command exactly as the shell would, and record the run.

``rage run [--app NAME] [--attach PATH_OR_GLOB]... [--] CMD [ARGS...]``

This module is on every recorded command's start-up path, so it never imports click,
requests, zstandard or psutil, and on the usual path (no config file, no --attach) not even
dataclasses, json, re, pathlib, typing or enum: it records through :mod:`rage.record.store`, and
shims start it with ``python -I -S`` (:func:`rage.record.shims.run_argv`). Its contract with the
user:

- the command cannot tell: it sees the same kinds of streams (a pseudo-terminal where the
  user has a terminal, its own file, device or closed descriptor where the user has one, one
  stream where stdout and stderr are one; see :mod:`rage.record.spawn`), gets every signal
  sent to the wrapper, and on a terminal ^C, ^Z and background processes behave as without
  rage (:mod:`rage.record.relay`, :mod:`rage.record.supervisor`, :mod:`rage.record.session`);
- the exit status is the command's: 126/127 as in a shell, and when the command dies of a
  signal the wrapper, after recording, dies of the same signal (its own core dumps turned
  off) so the calling shell sees a real signal death: a script stops on ^C, bash prints
  "Segmentation fault";
- recording never gets in the way: if the history cannot be written, at start or midway, the
  command runs on untouched and one line ``rage: warning: not recording this run: ...``
  goes to stderr.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from typing import Any, NoReturn

    from rage.record.capture import CappedFile
    from rage.record.spawn import Child
    from rage.record.store import Recording, RecordingSettings
else:
    # Start-up cost is this module's product feature: _signal is signal without its enums
    # (~3 ms); typing, dataclasses, contextlib and rage.errors (enum) stay unimported too.
    import _signal as signal

USAGE_EXIT = 2  # rage.errors.ExitCode.USAGE, whose IntEnum would import enum

USAGE = """\
Usage: rage run [OPTIONS] [--] CMD [ARGS]...

  Run CMD exactly as the shell would and record the run (argv, times, exit status, output).

Options:
  --app NAME             Record under this app name (default: the basename of CMD).
  --attach PATH_OR_GLOB  Copy matching files modified during the run into it (repeatable).
  --config-file PATH     A config file CMD reads: a report says if it changed since the
                         last run that worked (repeatable).
  --backtrace            If CMD crashes, keep a backtrace made from its core with gdb
                         (the core is then deleted; also: native_backtrace = true).
  --keep-core            With --backtrace: keep the core in the run's directory.
  --exec PATH            Run the file PATH, passing CMD as its argv[0] (what shims do).
  -h, --help             Show this message and exit.
"""

PRUNE_INTERVAL_S = 3600.0  # a full retention pass at least this often (byte and age limits)
# signals whose default action dumps core: the wrapper dies of them with its core dumps off
CORE_SIGNALS = frozenset(
    getattr(signal, n) for n in ("SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE",
                                 "SIGSEGV", "SIGXCPU", "SIGXFSZ", "SIGSYS") if hasattr(signal, n))
CRASH_NAMES = ("SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL", "SIGFPE")


class RunOptions:
    """The wrapper's parsed command line (plain data)."""

    __slots__ = ("app", "argv", "attach", "backtrace", "config_files", "exec_path", "help",
                 "keep_core")

    def __init__(self, argv: tuple[str, ...], app: str | None = None,
                 attach: tuple[str, ...] = (), help: bool = False, *,
                 exec_path: str | None = None, config_files: tuple[str, ...] = (),
                 backtrace: bool = False, keep_core: bool = False) -> None:
        self.argv = argv
        self.backtrace = backtrace
        self.keep_core = keep_core
        self.config_files = config_files
        self.app = app
        self.attach = attach
        self.help = help
        self.exec_path = exec_path  # run this file, with argv[0] as typed (shims use it)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunOptions):
            return NotImplemented
        return (self.argv, self.app, self.attach, self.help, self.exec_path,
                self.config_files, self.backtrace, self.keep_core) == (
            other.argv, other.app, other.attach, other.help, other.exec_path,
            other.config_files, other.backtrace, other.keep_core)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"RunOptions(argv={self.argv!r}, app={self.app!r}, attach={self.attach!r}, "
                f"help={self.help!r})")


class _Usage(Exception):
    pass


def parse_args(args: list[str]) -> RunOptions:
    """Parse ``rage run`` options by hand (click would cost ~30 ms of start-up)."""
    app: str | None = None
    exec_path: str | None = None
    attach: list[str] = []
    configs: list[str] = []
    flags: set[str] = set()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a in ("-h", "--help"):
            return RunOptions((), help=True)
        if a in ("--backtrace", "--keep-core"):
            flags.add(a)
            i += 1
            continue
        name, eq, value = a.partition("=")
        if name in ("--app", "--attach", "--exec", "--config-file"):
            if not eq:
                if i + 1 >= len(args):
                    raise _Usage(f"{name} needs a value")
                i += 1
                value = args[i]
            if name == "--app":
                app = value
            elif name == "--exec":
                exec_path = value
            elif name == "--config-file":
                configs.append(value)
            else:
                attach.append(value)
            i += 1
            continue
        if a.startswith("-") and a != "-":
            raise _Usage(f"unknown option {a!r} (put the command after --)")
        break
    argv = tuple(args[i:])
    if not argv:
        raise _Usage("no command given")
    return RunOptions(argv, app, tuple(attach), exec_path=exec_path,
                      config_files=tuple(configs), backtrace="--backtrace" in flags,
                      keep_core="--keep-core" in flags)


def _err(line: str) -> None:
    """One line to stderr, unbuffered (stderr may be shared with the child's output)."""
    try:  # noqa: SIM105 - no contextlib on the start-up path
        os.write(2, (line + "\n").encode("utf-8", "surrogateescape"))
    except OSError:
        pass


def main(args: list[str]) -> int:
    """Entry point of ``rage run``; returns the exit status (or dies of the child's signal)."""
    try:
        opts = parse_args(args)
    except _Usage as e:
        _err(f"rage: run: {e}")
        _err(USAGE.splitlines()[0])
        return USAGE_EXIT
    if opts.help:
        sys.stdout.write(USAGE)
        return 0
    from rage.paths import app_name_from_command, check_app, is_app_name

    if opts.app is not None and not is_app_name(opts.app):
        from rage.errors import UsageError  # only now: its IntEnum imports enum

        try:
            check_app(opts.app)
        except UsageError as e:
            _err(f"rage: run: {e}")
            return USAGE_EXIT
    app = opts.app if opts.app is not None else app_name_from_command(opts.argv[0])
    from rage.record.store import recording_settings

    settings, warning = recording_settings(app)
    if warning:
        _err(f"rage: warning: {warning} (using defaults)")
    from rage.record.spawn import CommandError, resolve_command

    try:
        path = resolve_command(opts.exec_path or opts.argv[0])
    except CommandError as e:
        _err(f"rage: {e}")
        if not settings.disable:
            Wrapper(app, opts, settings).record_unstarted(e)
        return e.exit_code
    if settings.disable:
        return _exec(path, list(opts.argv))
    return Wrapper(app, opts, settings).run(path)


def main_exit(args: list[str]) -> NoReturn:
    """:func:`main`, then :func:`exit_flushed` with its status: the interpreter's teardown
    (freeing every module and object, ~1.5 ms of CPU on every recorded command) skipped.
    Nothing is left to tear down by then: the record is written and closed, the supervisor
    thread has ended and rage registers no exit handlers on this path."""
    exit_flushed(main(args))


def exit_flushed(code: int) -> NoReturn:
    """End the process with ``code`` at once, standard streams flushed and the
    interpreter's teardown skipped (`rage run`, shims and `rage report`, once nothing is
    left to tear down). A flush that fails ends with 120, as Python's own exit does."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: the descriptor was closed when we started
                stream.flush()
        except (OSError, ValueError):
            code = code or 120
    os._exit(code)


def _exec(path: str, argv: list[str]) -> int:
    """RAGE_DISABLE: become the command (no recording, no process in between)."""
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    sys.stdout.flush()
    try:
        os.execv(path, argv)
    except OSError as e:
        _err(f"rage: {argv[0]}: {e.strerror}")
        return 127 if e.errno == 2 else 126


class Wrapper:
    """One recorded run of one command."""

    def __init__(self, app: str, opts: RunOptions, settings: RecordingSettings) -> None:
        self.app = app
        self.opts = opts
        self.settings = settings
        self.active: Recording | None = None
        self.captures: dict[str, CappedFile] = {}
        self.warned = False
        self.capture_error: str | None = None
        # why the record could not be built, said once the command has started
        self.early_error: OSError | None = None
        # (pid, executable, start) of a command whose crash gets a native backtrace
        self._crash_info: tuple[int, str, float] | None = None

    def warn_once(self, exc: BaseException) -> None:
        if not self.warned:
            self.warned = True
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            where = getattr(exc, "filename", None)
            _err(f"rage: warning: not recording this run: {reason}"
                 + (f": {where}" if where else ""))

    def not_recording(self, exc: BaseException) -> None:
        """The history cannot be written: say so once, drop the run."""
        self.warn_once(exc)
        self._drop_captures()
        if self.active is not None:
            self.active.release()
            self.active = None

    def capture_failed(self, exc: OSError) -> None:
        """Writing output failed midway (disk full...): warn once, stop capturing; the end of
        the run is still recorded if meta.json can be written."""
        self.warn_once(exc)
        self._drop_captures()
        self.capture_error = f"{exc.strerror or exc}"

    def _drop_captures(self) -> None:
        for cap in self.captures.values():
            try:  # noqa: SIM105
                cap.close()
            except OSError:
                pass
        self.captures = {}

    def run(self, path: str) -> int:
        import time

        # rage.record.capture and rage.record.context (save_environ's) are the record's:
        # imported before the leader's fork, since after it every page an import writes is
        # copied first (the leader shares them until it exits). rage.sensitive is imported
        # only for a variable name not seen before or one that looks secret (see
        # context.masked_environ)
        import rage.record.capture
        import rage.record.context  # noqa: F401
        from rage.record.relay import hand_off, relay
        from rage.record.spawn import CommandError, choose_mode, job_control, restore_mode, spawn
        from rage.record.supervisor import Supervisor, blocked_signals

        cwd = _cwd()
        patterns = self.opts.attach + tuple(self.settings.attach)
        before = None
        if patterns:
            from rage.record.attachments import snapshot

            before = snapshot(patterns, cwd)
        mode = choose_mode()
        jobs = job_control(mode)
        sigs = blocked_signals(jobs)
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
        # the run is dated from the spawn. Its record is built while the command's session
        # leader starts it (job control), else just after; published once its pid is known
        started_ns, t0 = time.time_ns(), time.monotonic()

        def meanwhile(child: Child) -> None:
            self._open_recording(child, path, cwd, started_ns, t0, existing_only=True)

        native = self.opts.backtrace or self.settings.native_backtrace
        if native:  # only the child may dump core (see rage.record.backtrace)
            from rage.record.backtrace import raise_core_limit, restore_core_limit

            core_limit = raise_core_limit()
        try:
            child = spawn(path, list(self.opts.argv), mode, old_mask, job_control=jobs,
                          meanwhile=meanwhile)
        except CommandError as e:
            self._discard_recording()  # the record begun for a running command
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
            _err(f"rage: {e}")
            self.record_unstarted(e)
            return e.exit_code
        finally:
            if native:
                restore_core_limit(core_limit)
        if native:
            self._crash_info = (child.pid, path, started_ns / 1e9)
        if child.leader is None:
            # the command was exec'd from our memory (posix_spawn is vfork + exec): its
            # ru_maxrss counts our peak in
            from rage.record.peakrss import own_peak_rss_kib

            child.spawner_maxrss = own_peak_rss_kib()
            import resource  # noqa: F401 - for os.wait4: now, not as the command ends
        wake_r, wake_w = os.pipe()
        sup = Supervisor(child, sigs, wake_w)
        try:
            if child.leader is not None:
                sup.start()
            if self.active is None and self.early_error is None:
                self._open_recording(child, path, cwd, started_ns, t0)
            self._publish_recording(child.pid)
            if child.leader is None:
                # only now: a command done by then (`true`) needs no thread at all. The
                # signals stay blocked meanwhile, pending with their sender, for the thread
                sup.start()

            def take_back(unsent: bytes) -> None:
                # the command has exited and its keys are no longer relayed: what reached
                # its terminal after its leader took the unread keys, then what we read
                # but never sent, follow those, in the order typed
                keys = sup.typeahead
                if child.slave_fd is not None:
                    from rage.record.session import unread_input

                    keys += unread_input(child.slave_fd)
                    os.close(child.slave_fd)
                    child.slave_fd = None
                sup.typeahead = keys + unsent

            left = relay(child, dict(self.captures), wake_r, lambda: sup.status is not None,
                         self.capture_failed, flushed=sup.flushed.release,
                         on_exit=take_back if child.raw_fd is not None else None)
            sup.join()
            hand_off(left)  # a background process still writes: it keeps its output
        finally:
            if child.slave_fd is not None:
                os.close(child.slave_fd)
            restore_mode(child.raw_fd, child.saved_termios)
            if sup.typeahead and child.raw_fd is not None:
                from rage.record.session import give_back

                give_back(child.raw_fd, sup.typeahead)  # typed ahead for the shell
            os.close(wake_r)
            os.close(wake_w)
            if child.status_fd is not None:
                os.close(child.status_fd)
        status = sup.status if sup.status is not None else 0
        code = os.waitstatus_to_exitcode(status)
        sig = -code if code < 0 else None
        self._finish(code, sig, sup.rusage, patterns=patterns, before=before, cwd=cwd,
                     appended=child.appended, spawner_maxrss=child.spawner_maxrss)
        # retire the supervisor's signals: drop any still pending, then behave normally
        for s in sigs:
            if s != signal.SIGCHLD:
                signal.signal(s, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        if sig is not None:
            _die_of(sig)
            return 128 + sig  # only if the signal could not end this process
        return code

    def _open_recording(self, child: Child, path: str, cwd: str, started_ns: int, t0: float,
                        *, existing_only: bool = False) -> None:
        """Build the run's record, unpublished (see :func:`rage.record.store.open_run`):
        its hidden directory, lock, capture files and environment. Any failure is kept in
        ``early_error`` and said only by :meth:`_publish_recording`, once the command is
        known to have started. ``existing_only``: not on the app's first run (its history
        directories are then created only once the command has started)."""
        from rage.paths import home_root_str
        from rage.record.capture import CappedFile
        from rage.record.store import open_run, save_environ, terminal_columns

        try:
            self.active = open_run(
                home_root_str(), self.app, self.opts.argv, cwd=cwd, recorder="wrapper",
                started_ns=started_ns, t0=t0, existing_only=existing_only,
                extra={"wrapper_pid": os.getpid(), "mode": child.mode, "executable": path,
                       "streams": child.kinds, **terminal_columns()},
            )
            if self.active is None:
                return
            for _src, _dst, name in child.streams:
                if name:
                    # written through: a wrapper killed with SIGKILL must leave in the
                    # record what its user saw. Created by the stream's first bytes, in
                    # the published run (the relay starts once it is): a silent stream
                    # costs no file, a new inode being the dearest part of a record
                    self.captures[name] = CappedFile(
                        os.path.join(self.active.run_dir, name), self.settings.output_cap,
                        write_through=True, lazy=True)
            # the child inherited this environment
            save_environ(self.active, dict(os.environ), executable=path,
                         config_files=self.opts.config_files)
        except OSError as e:
            self.early_error = e

    def _publish_recording(self, pid: int) -> None:
        """Give the record the command's pid and put it in place; or say why not."""
        active, error = self.active, self.early_error
        if active is not None:
            hidden = active.file("")
            try:
                active.publish(pid)
            except OSError as e:
                self.active = None
                self.not_recording(e)
                return
            if error is not None and isinstance(error.filename, str) and (
                    error.filename.startswith(hidden)):
                # the warning names the file where it now is
                error.filename = active.file(error.filename[len(hidden):])
        if error is not None:
            # a capture file or environ.json failed: the run stays, unlocked, its meta.json
            # written, as when these came after it
            self.not_recording(error)

    def _discard_recording(self) -> None:
        """The command could not start: nothing of its record is kept or said."""
        self._drop_captures()
        if self.active is not None:
            self.active.discard()
            self.active = None

    def record_unstarted(self, error: Exception) -> None:
        """Record a command that could not start (127 not found, 126 not executable): it
        is what a user may want to report. Its stderr.log holds the line the user saw;
        meta.json says ``error`` and the exit status a shell gives."""
        from rage.fsutil import open_private
        from rage.paths import home_root_str
        from rage.record.store import save_environ, start_run

        code = getattr(error, "exit_code", 127)
        try:
            active = start_run(home_root_str(), self.app, self.opts.argv, cwd=_cwd(),
                               recorder="wrapper",
                               extra={"wrapper_pid": os.getpid(), "error": str(error)})
        except OSError as e:
            self.warn_once(e)
            return
        try:
            with open_private(active.file("stderr.log")) as f:
                f.write(f"rage: {error}\n".encode("utf-8", "surrogateescape"))
            save_environ(active, dict(os.environ))  # PATH says why it was not found
            active.finish_meta(exit_code=code)
        except OSError as e:
            active.release()
            self.warn_once(e)
            return
        self._retention(active.id)
        self._prebuild()

    def _finish(self, code: int, sig: int | None, rusage: Any, *, patterns: tuple[str, ...],
                before: dict[str, tuple[int, int, int]] | None, cwd: str,
                appended: list[tuple[int, str, int]], spawner_maxrss: int | None) -> None:
        active = self.active
        if active is None:
            return
        try:
            truncation = [c.close().to_dict() for c in self.captures.values()]
            self.captures = {}
            if appended and not self.capture_error:
                from rage.record.capture import copy_appended

                for fd, name, start in appended:
                    t = copy_appended(fd, start, active.file(name),
                                      self.settings.output_cap)
                    if t is not None:
                        truncation.append(t.to_dict())
            extra: dict[str, Any] = {}
            if self.capture_error:
                extra["capture_error"] = self.capture_error
            if before is not None:
                from rage.record.attachments import changed_files, copy_attachments

                files = changed_files(before, patterns, cwd)
                records, warnings = copy_attachments(files, active.run_dir,
                                                     self.settings.output_cap)
                truncation += [t.to_dict() for t in records]
                for w in warnings:
                    _err(f"rage: warning: {w}")
                extra["attachments"] = [t.name for t in records]
            if sig is not None and self._crash_info is not None:
                from rage.record.backtrace import CRASH_SIGNALS, collect

                if sig in CRASH_SIGNALS:
                    pid, exe, since = self._crash_info
                    extra["native_backtrace"] = collect(active.run_dir, pid, exe, cwd, since,
                                                        keep_core=self.opts.keep_core)
            if rusage is not None:
                extra.update(memory_fields(int(rusage.ru_maxrss), spawner_maxrss),
                             cpu_user_s=round(rusage.ru_utime, 6),
                             cpu_sys_s=round(rusage.ru_stime, 6))
            active.finish_meta(exit_code=None if sig else code, signal=sig,
                               truncation=truncation, **extra)
        except OSError as e:
            self.not_recording(e)
            return
        self.active = None
        self._hint(code, sig, active.id)
        self._retention(active.id)
        self._prebuild()

    def _prebuild(self) -> None:
        from rage.paths import home_root_str
        from rage.record.store import prebuild_after_run

        prebuild_after_run(home_root_str(), self.app)

    def _retention(self, run_id: str) -> None:
        """Prune old runs when the cheap check says so; best effort (the next run retries)."""
        from rage.paths import home_root_str
        from rage.record.store import prune_due

        s = self.settings
        app_dir = os.path.join(home_root_str(), self.app)
        try:  # the count limit is kept here, cheaply; bytes and age by an hourly full pass
            if not prune_due(app_dir, s.max_runs, PRUNE_INTERVAL_S):
                return  # two stats: rage.record.prune is not even imported
            from rage.record.prune import retain

            if not retain(app_dir, s.max_runs, PRUNE_INTERVAL_S, keep=run_id):
                return
            from rage.record.history import RunStore

            RunStore().maybe_prune(self.app, max_runs=s.max_runs, max_bytes=s.max_bytes,
                                   max_age_days=s.max_age_days, keep={run_id},
                                   interval_s=PRUNE_INTERVAL_S)
        except OSError:
            pass

    def _hint(self, code: int, sig: int | None, run_id: str) -> None:
        what: str | None = None
        if sig is not None:
            name = _signame(sig)
            if name in CRASH_NAMES:
                what = f"crashed ({name})"
            elif self.settings.hint_on_failure and sig != signal.SIGPIPE:
                # SIGPIPE: the reader stopped reading (`| head`), normal in a pipeline
                what = f"was killed ({name})"
        elif code != 0 and self.settings.hint_on_failure:
            what = f"failed (exit {code})"
        if what:
            # the run's own id: `--last` may name a later run by the time the user reports
            _err(f"rage: {self.app} {what}; to report it: rage report {run_id.rsplit('-', 1)[-1]}")


def memory_fields(maxrss_kib: int, spawner_maxrss_kib: int | None) -> dict[str, int | None]:
    """The command's peak RSS for meta.json, from its ``ru_maxrss`` (KiB on Linux).

    Linux folds the memory a process is exec'd *from* into its ``ru_maxrss``: the command
    was exec'd from the wrapper's memory (posix_spawn: vfork + exec), or its session
    leader's (a fork of the wrapper), so a command smaller than that (``true``: ~1 MB,
    against ~6-14 MB) would report rage's peak as its own. Above it the figure is the
    command's own, exactly; at or below it the command's peak is only known to be at most
    that: ``peak_rss_bytes`` is then None and ``peak_rss_at_most_bytes`` says the bound.
    ``spawner_maxrss_kib`` is that process's peak as it spawned the command (None:
    unknown, the figure is taken as it is)."""
    peak = maxrss_kib * 1024
    if spawner_maxrss_kib is not None and maxrss_kib <= spawner_maxrss_kib:
        return {"peak_rss_bytes": None, "peak_rss_at_most_bytes": peak}
    return {"peak_rss_bytes": peak}


def _die_of(sig: int) -> None:
    """End this process with the child's signal, so the parent sees the same death (a
    shell prints "Segmentation fault", a script stops on ^C). Core dumps are turned off
    first: the child dumped its own core; the wrapper's would only overwrite it."""
    sys.stdout.flush()
    if sig in CORE_SIGNALS:
        import resource

        try:  # noqa: SIM105
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (OSError, ValueError):
            pass
    try:  # noqa: SIM105 - SIGKILL and SIGSTOP keep their default action anyway
        signal.signal(sig, signal.SIG_DFL)
    except (OSError, ValueError):
        pass
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
    os.kill(os.getpid(), sig)


def _signame(sig: int) -> str:
    import signal as signal_module  # only on failure: its enums have the names

    try:
        return signal_module.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return os.environ.get("PWD", "/")
