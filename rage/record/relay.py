"""Copying the child's streams while it runs, and forwarding signals to it.

The main thread runs :func:`relay`, a poll loop that copies each source to its destination
byte for byte and to its capture sink. A helper thread (:class:`Supervisor`) owns every
signal: the wrapper blocks them before spawning and the thread takes them with
``sigwaitinfo``, which says who sent each one. That matters in pipe mode, where the child
shares the wrapper's process group: a ^C typed at the terminal (``si_code == SI_KERNEL``)
already reached the child, and only signals sent to the wrapper itself are forwarded.
"""

from __future__ import annotations

import _thread
import os
import select

from rage.record.spawn import Child, copy_winsize, enter_raw, restore_mode

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable
    from typing import Protocol

    class Sink(Protocol):
        def write(self, data: bytes) -> None: ...
else:
    # On every recorded command's start-up path: signal's enums, threading and typing cost
    # ~10 ms together; _signal and _thread are what they wrap.
    import _signal as signal

SI_KERNEL = 0x80
SI_USER = 0
FLUSH = b"f"  # on the wake pipe: copy out everything readable now (the command stopped)
FLUSH_WAIT_S = 1.0
CHUNK = 1 << 20  # pipe reads: the pipes are this large (spawn.PIPE_SIZE)
# A pty hands out at most its line discipline's 4 KiB buffer per read (a little more when
# the kernel refills it during the read). Asking for 1 MiB made every read mmap and munmap
# a 1 MiB buffer: about a quarter more CPU per byte through the terminal.
PTY_READ = 1 << 16
# Reads in a row from the non-blocking master before polling again: each one that finds
# data saves a poll() and a pass of the loop; the bound keeps keyboard input and a stderr
# pipe served while a child floods the terminal.
PTY_BURST = 16
INPUT_LIMIT = 1 << 16  # unsent keyboard input held before we stop reading more
DRAIN_QUIET_S = 0.05  # after the child exits: stop once its streams are quiet this long

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
        self._done = _thread.allocate_lock()

    def start(self) -> None:
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
        elif code != SI_KERNEL:
            # no job control of ours: the terminal already signalled the whole group
            _kill(child.pid, sig)

    def _reap(self) -> None:
        child = self.child
        leader = child.leader
        flags = os.WNOHANG | (os.WUNTRACED if leader is not None else 0)
        try:
            pid, status, rusage = os.wait4(child.pid if leader is None else leader, flags)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if os.WIFSTOPPED(status):
            self._stop_with_child()
            return
        usage: object = rusage
        if leader is not None and child.status_fd is not None:
            from rage.record.session import read_result

            result = read_result(child.status_fd)
            if result is not None:
                status, usage = result  # the command's, not its leader's
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


def _cooked_again(master: int) -> None:
    """The user's terminal is out of raw mode again and does its own output processing
    (\n -> \r\n): the pty must stop doing it too, or lines would end in \r\r\n."""
    import termios

    try:
        attrs = termios.tcgetattr(master)
        attrs[1] &= ~termios.OPOST
        termios.tcsetattr(master, termios.TCSANOW, attrs)
    except termios.error:
        pass


def _kill(pid: int, sig: int) -> None:
    try:  # noqa: SIM105
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write every byte to a blocking ``fd`` (waiting if someone made it non-blocking)."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        view = view[n:]


class _Stream:
    __slots__ = ("burst", "capture", "dst", "name", "paused", "pending", "size", "src")

    def __init__(self, src: int, dst: int, name: str | None, capture: Sink | None, *,
                 size: int = CHUNK, burst: int = 1) -> None:
        self.src = src
        self.dst = dst
        self.name = name
        self.capture = capture
        self.size = size  # bytes asked for per read
        self.burst = burst  # reads per poll event: more than one only if src is non-blocking
        self.pending = bytearray()  # only for the non-blocking pty master as destination
        self.paused = False


def relay(
    child: Child,
    captures: dict[str, Sink],
    wake_fd: int,
    done: Callable[[], bool],
    on_capture_error: Callable[[OSError], None],
    *,
    flushed: Callable[[], None] | None = None,
) -> list[tuple[int, int]]:
    """Copy the child's streams until it has exited and its streams are drained.

    ``captures`` maps capture names (``output.log``...) to sinks; a sink that raises
    ``OSError`` is reported once through ``on_capture_error`` and every capture stops, while
    the copying to the user goes on. Returns the pipes still open once the child has exited
    and they went quiet, as ``(source, destination)``: a background process the command
    started holds them (see :func:`hand_off`).
    """
    r = _Relay(child, captures, wake_fd, on_capture_error)
    r.flushed = flushed
    return r.run(done)


def hand_off(left: list[tuple[int, int]]) -> None:
    """Keep relaying pipes a background process of the command still writes to, from a
    process of its own, so the wrapper can return the command's status now.

    Without rage such a process writes straight to the user's pipe or terminal and lives
    on; with the wrapper in between, closing our ends would cost it its output and kill it
    (SIGPIPE, or a hangup of its pty).
    The forked relay copies until each pipe's last writer is gone (or the reader is: then
    our end closes and the writer meets EPIPE, as it would without rage), and is not
    recorded. It ignores ^C and hangups like the background process it serves.
    """
    if not left:
        return
    try:
        pid = os.fork()
    except OSError:
        pid = -1
    if pid != 0:
        for src, _dst in left:
            _suppress_oserror(lambda src=src: os.close(src))  # type: ignore[misc]
        return
    try:
        for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTSTP):
            signal.signal(sig, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        _suppress_oserror(lambda: os.close(0))  # never read the user's input
        poller = select.poll()
        dst_of = dict(left)
        for src in dst_of:
            os.set_blocking(src, True)
            poller.register(src, select.POLLIN)
            if os.isatty(src):
                _cooked_again(src)
        while dst_of:
            for fd, _ev in poller.poll():
                data = b""
                try:  # noqa: SIM105
                    data = os.read(fd, CHUNK)
                except OSError:
                    pass
                try:
                    if data:
                        write_all(dst_of[fd], data)
                        continue
                except OSError:
                    pass
                poller.unregister(fd)
                os.close(fd)
                del dst_of[fd]
    finally:
        os._exit(0)


class _Relay:
    def __init__(self, child: Child, captures: dict[str, Sink], wake_fd: int,
                 on_capture_error: Callable[[OSError], None]) -> None:
        self.master = child.master_fd
        self.child_pid = child.pid
        self.child_pid = child.pid
        self.raw_fd = child.raw_fd if child.leader is not None else None
        self.wake_fd = wake_fd
        self.flushed: Callable[[], None] | None = None
        self.on_capture_error = on_capture_error
        self.capturing = True
        self.poller = select.poll()
        self.poller.register(wake_fd, select.POLLIN)
        self.outputs: dict[int, _Stream] = {}
        self.input: _Stream | None = None  # keyboard -> pty master
        self._registered: set[int] = set()
        for src, dst, name in child.streams:
            if src == self.master:
                st = _Stream(src, dst, name, captures.get(name) if name else None,
                             size=PTY_READ, burst=PTY_BURST)
            else:
                st = _Stream(src, dst, name, captures.get(name) if name else None)
            if dst == self.master:
                self.input = st
            else:
                self.outputs[src] = st
        self._update_masks()

    def _update_masks(self) -> None:
        masks: dict[int, int] = {fd: select.POLLIN for fd in self.outputs}
        inp = self.input
        if inp is not None:
            inp.paused = len(inp.pending) > INPUT_LIMIT
            if not inp.paused:
                masks[inp.src] = masks.get(inp.src, 0) | select.POLLIN
            if inp.pending:
                masks[inp.dst] = masks.get(inp.dst, 0) | select.POLLOUT
        for fd in self._registered - masks.keys():
            self._unregister(fd)
        for fd, mask in masks.items():
            self.poller.register(fd, mask)  # register() updates an existing registration
        self._registered = set(masks)

    def _input_state(self) -> tuple[bool, bool]:
        """What the poll masks depend on: input waiting to be sent, too much of it."""
        inp = self.input
        return (False, False) if inp is None else (bool(inp.pending),
                                                   len(inp.pending) > INPUT_LIMIT)

    def _unregister(self, fd: int) -> None:
        try:  # noqa: SIM105
            self.poller.unregister(fd)
        except KeyError:
            pass

    def _close_output(self, st: _Stream) -> None:
        self.outputs.pop(st.src, None)
        self._unregister(st.src)
        if st.src == self.master:
            self._close_input()
        _suppress_oserror(lambda: os.close(st.src))

    def _close_input(self) -> None:
        inp, self.input = self.input, None
        if inp is not None:
            self._unregister(inp.src)  # the user's stdin: never close it
            if inp.dst in self.outputs:
                self.poller.register(inp.dst, select.POLLIN)

    def run(self, done: Callable[[], bool]) -> list[tuple[int, int]]:
        exited = False
        input_state = self._input_state()
        outputs, poll, pollin = self.outputs, self.poller.poll, select.POLLIN
        while outputs or not exited:
            if not exited and done():
                exited = True
                self._close_input()  # keys typed from now on belong to the shell
                continue
            events = poll(DRAIN_QUIET_S * 1000 if exited else None)
            if not events and exited:
                break
            for fd, ev in events:
                st = outputs.get(fd)
                if st is not None and ev == pollin:
                    # the usual event, output to copy: input needs nothing on this fd
                    # (only POLLOUT concerns the master as input destination)
                    self._copy(st)
                    continue
                if fd == self.wake_fd:
                    self._woken()
                    continue
                if ev & select.POLLNVAL:
                    self._unregister(fd)
                    continue
                inp = self.input
                if inp is not None and fd == inp.dst and ev & select.POLLOUT:
                    self._flush_input()
                if inp is not None and self.input is inp and fd == inp.src:
                    self._read_input()
                st = outputs.get(fd)
                if st is not None and ev & (select.POLLIN | select.POLLHUP | select.POLLERR):
                    self._copy(st)
            if self.input is not None and self._input_state() != input_state:
                self._update_masks()
                input_state = self._input_state()
        left = []
        self._close_input()
        for st in list(self.outputs.values()):
            left.append((st.src, st.dst))
            self.outputs.pop(st.src, None)
        return left

    def _woken(self) -> None:
        try:
            data = os.read(self.wake_fd, 64)
        except OSError:
            return
        if FLUSH in data:
            for st in list(self.outputs.values()):
                while st.src in self.outputs and select.select([st.src], [], [], 0)[0]:
                    self._copy(st)
            if self.flushed is not None:
                self.flushed()

    def _copy(self, st: _Stream) -> None:
        for _ in range(st.burst):
            if not self._copy_chunk(st):
                break

    def _copy_chunk(self, st: _Stream) -> bool:
        """Copy one read's worth; False when the source is dry for now or closed."""
        # Once per chunk (4 KiB from a pty): kept lean, the interpreter's overhead counts.
        # Each chunk is written as soon as it is read, like script(1). Gathering a pty's
        # chunks into 64 KiB writes was slower: a write that large fills the user's
        # terminal (its buffer is 64 KiB) and blocks, while the child, its own pty full,
        # stalls; pipelined small writes keep both moving.
        try:
            data = os.read(st.src, st.size)
        except BlockingIOError:
            return False
        except OSError:  # EIO: the pty's last slave fd closed
            data = b""
        if not data:
            self._close_output(st)
            return False
        try:
            try:
                n = os.write(st.dst, data)
            except BlockingIOError:
                n = 0
            if n < len(data):
                write_all(st.dst, memoryview(data)[n:])
        except OSError:
            # the reader went away: close our end so the child meets EPIPE/SIGPIPE or a
            # hangup, as it would have without rage in between
            self._close_output(st)
        if self.capturing and st.capture is not None:
            try:
                st.capture.write(data)
            except OSError as e:
                self.capturing = False
                self.on_capture_error(e)
        return st.src in self.outputs

    def _read_input(self) -> None:
        inp = self.input
        assert inp is not None
        try:
            data = os.read(inp.src, CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._close_input()
            return
        if self.raw_fd is not None:
            self._signal_keys(data)
        inp.pending += data
        self._flush_input()

    def _signal_keys(self, data: bytes) -> None:
        """^C and ^\\ typed for the command: signal the user's side too.

        The user's terminal is raw, so the key reaches only the command's terminal, which
        signals the command. On the user's terminal the key would also have signalled every
        process in its foreground group: a shell script looping over ``rage run`` (it stops
        when its command dies of ^C), a Python parent (KeyboardInterrupt). So the signal goes
        to our own group too, if it is the terminal's foreground (the supervisor ignores the
        copy we get ourselves). Not when the command's terminal has ISIG off (an editor: the
        key is just a byte) or a job of the command's own holds it (``bash -i`` inside).
        """
        import termios

        master, raw = self.master, self.raw_fd
        assert master is not None and raw is not None
        try:
            attrs = termios.tcgetattr(master)
            if not attrs[3] & termios.ISIG or os.tcgetpgrp(master) != self.child_pid:
                return
            group = os.getpgrp()
            if os.tcgetpgrp(raw) != group:
                return
        except (termios.error, OSError):
            return
        for index, sig in ((termios.VINTR, signal.SIGINT), (termios.VQUIT, signal.SIGQUIT)):
            key = attrs[6][index]
            if isinstance(key, bytes) and key != b"\0" and key in data:
                _suppress_oserror(lambda sig=sig: os.killpg(group, sig))  # type: ignore[misc]

    def _flush_input(self) -> None:
        """Send buffered keyboard input to the non-blocking pty master; never blocks."""
        inp = self.input
        assert inp is not None
        if not inp.pending:
            return
        try:
            n = os.write(inp.dst, inp.pending)
        except BlockingIOError:
            return
        except OSError:
            self._close_input()
            return
        del inp.pending[:n]
