"""Owning the wrapper's signals while the command runs: forwarding, reaping, job control.

The wrapper blocks the signals before spawning and a helper thread (:class:`Supervisor`)
takes them with ``sigwaitinfo``, which says who sent each one. That matters where the child
shares the wrapper's process group (pipes, or a pty only for output): a ^C typed at the
terminal (``si_code == SI_KERNEL``) already reached the child, and only signals sent to the
wrapper itself are forwarded. With job control of our own (:mod:`rage.record.session`) it
also mirrors the command's stops on the user's terminal.
"""

from __future__ import annotations

import _thread
import os

from rage.record.spawn import Child, copy_winsize, enter_raw, restore_mode

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable
else:
    # On every recorded command's start-up path: signal's enums and threading cost ~10 ms
    # together; _signal and _thread are what they wrap.
    import _signal as signal

SI_KERNEL = 0x80
SI_USER = 0
FLUSH = b"f"  # on the wake pipe: copy out everything readable now (the command stopped)
CONTINUED = b"c"  # on the wake pipe: we were continued, perhaps in the foreground again
FLUSH_WAIT_S = 1.0

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGWINCH,
             signal.SIGUSR1, signal.SIGUSR2)
PTY_JOB_CONTROL = (signal.SIGTSTP, signal.SIGCONT)


def blocked_signals(job_control: bool) -> set[signal.Signals]:
    """The signals the supervisor takes over. Without job control of our own (pipes, or a
    pty only for output) it stays with the kernel: ^Z stops the whole process group,
    wrapper and child together."""
    sigs = {*FORWARDED, signal.SIGCHLD}
    if job_control:
        sigs.update(PTY_JOB_CONTROL)
    return sigs


def _suppress_oserror(fn: Callable[[], object]) -> None:
    try:  # noqa: SIM105 - contextlib is not imported on the start-up path (~3 ms)
        fn()
    except OSError:
        pass


class Supervisor:
    """Waits for the child, forwards signals, and handles ^Z in pty mode, in a thread of its
    own (started by :meth:`start`, waited for by :meth:`join`; it does not keep the process
    alive).

    When the child has exited, ``status`` and ``rusage`` are set and a byte is written to
    ``wake_fd`` so the relay loop notices.
    """

    def __init__(self, child: Child, sigs: set[signal.Signals], wake_fd: int) -> None:
        self.child = child
        self.sigs = sigs
        self.wake_fd = wake_fd
        self.status: int | None = None
        # held while the relay loop copies what the stopping command wrote (see _flush_relay)
        self.flushed = _thread.allocate_lock()
        self.rusage: object | None = None
        self.typeahead = b""  # keys the command never read (rage.record.session)
        self._done = _thread.allocate_lock()

    def start(self) -> None:
        """Start the thread; without a session leader of ours, not if the command has
        exited already (reaped here: a short command's run needs no thread, ~0.25 ms of
        CPU and two context switches). Signals sent before then stay pending (blocked)
        until the thread takes them; if the command has exited, they were for nobody."""
        if self.child.leader is None:
            self._reap()
            if self.status is not None:
                return
        self._done.acquire()
        try:
            _thread.start_new_thread(self._main, ())
        except BaseException:
            self._done.release()
            raise

    def join(self) -> None:
        """Wait until the thread has finished."""
        with self._done:
            pass

    def _main(self) -> None:
        try:
            self.run()
        finally:
            self._done.release()

    def run(self) -> None:
        try:
            while self.status is None:
                info = signal.sigwaitinfo(self.sigs)
                self._handle(info.si_signo, info.si_code, info.si_pid)
        finally:
            _suppress_oserror(lambda: os.write(self.wake_fd, b"x"))

    def _handle(self, sig: int, code: int, sender: int) -> None:
        child = self.child
        if sig == signal.SIGCHLD:
            self._reap()
        elif child.leader is not None:
            if sender == os.getpid() and code == SI_USER:
                return  # ^C or ^\ passed on to our own process group: the child has it
            if sig == signal.SIGWINCH and child.master_fd is not None:
                if not copy_winsize(1, child.master_fd):
                    _kill(child.pid, sig)
            elif sig == signal.SIGCONT:
                self._resumed()
            elif sig == signal.SIGTSTP:
                # stop the command as its terminal would; its leader, then we, follow
                _suppress_oserror(lambda: os.killpg(child.pid, signal.SIGTSTP))
            else:
                _kill(child.pid, sig)
        else:
            if sig == signal.SIGWINCH:
                # an output-only pty (stdin piped, or stderr on the user's terminal while
                # stdout is not) follows the terminal's size
                for src, dst, _name in child.streams:
                    if os.isatty(src):
                        copy_winsize(dst, src)
            if code != SI_KERNEL:
                # no job control of ours: the terminal already signalled the whole group
                _kill(child.pid, sig)

    def _reap(self) -> None:
        child = self.child
        leader = child.leader
        usage: object | None = None
        try:
            if leader is None:
                pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            else:
                # the command's usage comes from its leader; the leader's own is not the
                # command's (and os.wait4 would import resource: ~0.3 ms as the run ends)
                pid, status = os.waitpid(leader, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if os.WIFSTOPPED(status):
            self._stop_with_child()
            return
        if leader is not None and child.status_fd is not None:
            from rage.record.session import read_result

            result = read_result(child.status_fd)
            if result is not None:
                status, usage, self.typeahead = result  # the command's, not its leader's
                child.spawner_maxrss = getattr(usage, "spawner_maxrss", None)
        self.rusage = usage
        self.status = status

    def _stop_with_child(self) -> None:
        """The command stopped (^Z on its terminal, its own suspend): give the user's
        terminal back and stop the user's job, as ^Z on that terminal would have: the whole
        foreground process group (a script running rage stops too), with SIGTSTP (``$?``
        148). If nothing can stop us (no job control above: an orphaned group), the command
        is resumed at once rather than left stopped with the terminal frozen."""
        child = self.child
        self._flush_relay()
        restore_mode(child.raw_fd, child.saved_termios)
        try:
            group = os.getpgrp()
            fg = os.tcgetpgrp(child.raw_fd) if child.raw_fd is not None else -1
            if fg == group:
                os.killpg(group, signal.SIGTSTP)
            else:
                os.kill(os.getpid(), signal.SIGTSTP)
        except OSError:
            self._resumed()
            return
        # SIGTSTP is blocked everywhere; let it in here, where it stops the process
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTSTP})
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTSTP})
        if signal.SIGCONT not in signal.sigpending():
            self._resumed()  # we did not stop: never leave the command and terminal frozen
        # else: continued; the pending SIGCONT is handled by _resumed

    def _flush_relay(self) -> None:
        """Have the relay loop copy out what the command wrote before it stopped (less
        leaves its alternate screen on ^Z) before the user's shell prints "Stopped"; the
        loop answers by releasing ``flushed``. Bounded: a stuck terminal cannot hold us."""
        if not self.flushed.acquire(blocking=False):
            return
        try:
            os.write(self.wake_fd, FLUSH)
        except OSError:
            self.flushed.release()
            return
        if self.flushed.acquire(timeout=FLUSH_WAIT_S):
            self.flushed.release()

    def _resumed(self) -> None:
        child = self.child
        if child.raw_fd is not None:
            try:
                # only in the foreground: a background job touching the terminal would stop
                if os.tcgetpgrp(child.raw_fd) == os.getpgrp():
                    enter_raw(child.raw_fd)
            except OSError:
                pass
        if child.master_fd is not None:
            copy_winsize(1, child.master_fd)
        if child.leader is not None:
            _kill(child.leader, signal.SIGCONT)  # it continues the command
        # the relay holds the keys back while we are in the background: `fg` gives them
        _suppress_oserror(lambda: os.write(self.wake_fd, CONTINUED))


def _kill(pid: int, sig: int) -> None:
    try:  # noqa: SIM105
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
