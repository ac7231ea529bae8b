"""Copying the child's streams while it runs (signals: :mod:`rage.record.supervisor`).

The main thread runs :func:`relay`, a poll loop that copies each source to its destination
byte for byte and to its capture sink, and passes ^C and ^\\ typed for the command on to the
user's own process group. :func:`hand_off` keeps serving streams a background process of
the command still holds once it has exited.
"""

from __future__ import annotations

import os
import select

from rage.record.spawn import Child, enter_raw
from rage.record.supervisor import CONTINUED, FLUSH

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable
    from typing import Protocol

    class Sink(Protocol):
        def write(self, data: bytes) -> None: ...
else:
    # On every recorded command's start-up path: signal's enums and typing cost ~5 ms
    # together; _signal is what signal wraps.
    import _signal as signal

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
# Keys are held back while rage is in the background of the user's shell (^Z, then `bg`):
# reading them would stop rage (SIGTTIN). A SIGCONT wakes the loop at once, but `fg` of a
# job that is running sends none (bash): this is how often the loop looks meanwhile.
HELD_RECHECK_MS = 100

def _background(fd: int) -> bool:
    """:func:`rage.termjob.background`, imported only for a terminal (keys relayed)."""
    from rage.termjob import background

    return background(fd)


def _suppress_oserror(fn: Callable[[], object]) -> None:
    try:  # noqa: SIM105 - contextlib is not imported on the start-up path (~3 ms)
        fn()
    except OSError:
        pass


def _own_description(fd: int) -> int | None:
    """The user's terminal ``fd`` opened again, as an open file description of our own,
    non-blocking (its own flags: the shell's stay as they are). None where it cannot be
    (no /proc, or a terminal we may not open)."""
    try:
        return os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None


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
    on_exit: Callable[[bytes], None] | None = None,
) -> list[tuple[int, int]]:
    """Copy the child's streams until it has exited and its streams are drained.

    ``captures`` maps capture names (``output.log``...) to sinks; a sink that raises
    ``OSError`` is reported once through ``on_capture_error`` and every capture stops, while
    the copying to the user goes on. Returns the pipes still open once the child has exited
    and they went quiet, as ``(source, destination)``: a background process the command
    started holds them (see :func:`hand_off`).

    Once ``done()`` is true the user's keys are no longer read (they belong to the shell
    again) and ``on_exit`` is called, before any further output is copied, with the keys
    read but not yet sent to the command: it takes back, in order, what the command never
    read (:func:`rage.record.session.give_back`).
    """
    r = _Relay(child, captures, wake_fd, on_capture_error)
    r.flushed = flushed
    r.on_exit = on_exit
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
        self.raw_fd = child.raw_fd if child.leader is not None else None
        self.wake_fd = wake_fd
        self.flushed: Callable[[], None] | None = None
        self.on_exit: Callable[[bytes], None] | None = None
        self.on_capture_error = on_capture_error
        self.capturing = True
        self.poller = select.poll()
        self.poller.register(wake_fd, select.POLLIN)
        self.outputs: dict[int, _Stream] = {}
        self.input: _Stream | None = None  # keyboard -> pty master
        self.held = False  # keys not read: we are in the background of the user's shell
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
        # the keys are read from here (see _read_input); polled on the shared descriptor
        self.keys = _own_description(self.input.src) if self.input is not None else None
        self._update_masks()

    def _update_masks(self) -> None:
        masks: dict[int, int] = {fd: select.POLLIN for fd in self.outputs}
        inp = self.input
        if inp is not None:
            inp.paused = len(inp.pending) > INPUT_LIMIT
            if not inp.paused and not self.held:
                masks[inp.src] = masks.get(inp.src, 0) | select.POLLIN
            if inp.pending:
                masks[inp.dst] = masks.get(inp.dst, 0) | select.POLLOUT
        for fd in self._registered - masks.keys():
            self._unregister(fd)
        for fd, mask in masks.items():
            self.poller.register(fd, mask)  # register() updates an existing registration
        self._registered = set(masks)

    def _input_state(self) -> tuple[bool, bool, bool]:
        """What the poll masks depend on: input waiting to be sent, too much of it, keys
        held back in the background."""
        inp = self.input
        return (False, False, False) if inp is None else (
            bool(inp.pending), len(inp.pending) > INPUT_LIMIT, self.held)

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
        keys, self.keys = self.keys, None
        if keys is not None:
            _suppress_oserror(lambda: os.close(keys))
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
                unsent = bytes(self.input.pending) if self.input is not None else b""
                self._close_input()  # keys typed from now on belong to the shell
                if self.on_exit is not None:
                    self.on_exit(unsent)
                continue
            events = poll(DRAIN_QUIET_S * 1000 if exited
                          else HELD_RECHECK_MS if self.held else None)
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
            if self.held and self.raw_fd is not None and not _background(self.raw_fd):
                # in the foreground again (`fg`): the keys are ours, the terminal raw
                self.held = False
                enter_raw(self.raw_fd)
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
        if CONTINUED in data and self.raw_fd is not None and self.input is not None:
            # Continued: in the foreground (`fg` of a stopped job) or the background (`bg`),
            # and from the background the terminal comes back with no SIGCONT at all (bash's
            # `fg` of a running job). So hold the keys until the loop has seen us in the
            # foreground (at once, or every HELD_RECHECK_MS), and only then read them and
            # make the terminal raw. Never wait for a key seen in the background to tell:
            # the shell may read it first.
            self.held = True

    def _copy(self, st: _Stream) -> None:
        if st.burst == 1:
            self._copy_chunk(st)
            return
        # A pty (4 KiB a read): read what is there, up to a burst, put it in the record in
        # one write, then pass each read on as it came. The record comes first (a rage
        # killed with SIGKILL leaves what its user saw), at one write a burst: one each
        # 4 KiB cost 8 % more CPU on a flooding terminal. Each read is written to the
        # user's terminal on its own, like script(1): gathering them into 64 KiB writes was
        # slower, as a write that large fills the terminal (its buffer is 64 KiB) and
        # blocks while the child, its own pty full, stalls; small writes keep both moving.
        chunks: list[bytes] = []
        closed = False
        for _ in range(st.burst):
            try:
                data = os.read(st.src, st.size)
            except BlockingIOError:
                break
            except OSError:  # EIO: the pty's last slave fd closed
                data = b""
            if not data:
                closed = True
                break
            chunks.append(data)
        if chunks:
            self._record(st, chunks[0] if len(chunks) == 1 else b"".join(chunks))
            for data in chunks:
                if not self._pass_on(st, data):
                    return
        if closed:
            self._close_output(st)

    def _copy_chunk(self, st: _Stream) -> bool:
        """Copy one read's worth; False when the source is dry for now or closed."""
        # Once per chunk: kept lean, the interpreter's overhead counts.
        try:
            data = os.read(st.src, st.size)
        except BlockingIOError:
            return False
        except OSError:  # EIO: the pty's last slave fd closed
            data = b""
        if not data:
            self._close_output(st)
            return False
        # The record first: what reaches the user is on disk already if rage is killed
        # (SIGKILL) right after.
        self._record(st, data)
        return self._pass_on(st, data)

    def _record(self, st: _Stream, data: bytes) -> None:
        if self.capturing and st.capture is not None:
            try:
                st.capture.write(data)
            except OSError as e:
                self.capturing = False
                self.on_capture_error(e)

    def _pass_on(self, st: _Stream, data: bytes) -> bool:
        """Write ``data`` to the destination; False if that closed the stream."""
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
        return st.src in self.outputs

    def _read_input(self) -> None:
        inp = self.input
        assert inp is not None
        if self.raw_fd is not None and _background(self.raw_fd):
            # ^Z then `bg`: the keys are the shell's; hold ours back until `fg`
            self.held = True
            return
        # The terminal is shared with the user's shell, which reads it while we are stopped
        # or in the background: keys poll() saw then may be gone by now that it is ours
        # again (`fg` typed while we were stopping: the shell read it, then gave us the
        # foreground). A blocking read would then wait for a key that may never come, deaf
        # to the command's end. So never block: through a non-blocking description of our
        # own, else by looking again first.
        keys = self.keys
        if keys is None:
            if not select.select([inp.src], [], [], 0)[0]:
                return
            keys = inp.src
        try:
            data = os.read(keys, CHUNK)
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
