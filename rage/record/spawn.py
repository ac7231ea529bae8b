"""Starting the wrapped command: resolving it like a shell, and wiring its standard streams.

Two modes. **pty**: the user's stdout is a terminal, so the child gets a pseudo-terminal as
its controlling terminal (its own session) on every stream that is a terminal for the user;
the user's terminal goes raw so keys, ^C and ^Z reach the child's line discipline untouched.
**pipe**: stdout and stderr become pipes the wrapper tees; stdin is inherited as is, so EOF
and binary input behave exactly as without rage.

``os.posix_spawn`` (vfork + exec in glibc) is used rather than fork: it is cheaper, and exec
failures come back as ``OSError`` in the parent.
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable, Iterable
    from typing import Any
else:
    import _signal as signal  # signal's enums cost ~3 ms of every recorded command

PTY, PIPE = "pty", "pipe"
F_SETPIPE_SZ = 1031  # Linux; larger pipes mean fewer wake-ups when the child writes a lot
PIPE_SIZE = 1 << 20


class CommandError(Exception):
    """The command cannot be started; ``exit_code`` follows the shell (126 / 127)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def resolve_command(cmd: str, path_env: str | None = None) -> str:
    """Find ``cmd`` like a POSIX shell: on PATH unless it contains a slash.

    Raises :class:`CommandError` with 127 (not found) or 126 (found but not executable).
    """
    if not cmd:
        raise CommandError(f"{cmd!r}: command not found", 127)
    if "/" in cmd:
        return _check_executable(cmd, cmd)
    denied: str | None = None
    path_env = os.environ.get("PATH", os.defpath) if path_env is None else path_env
    for d in path_env.split(os.pathsep):
        candidate = os.path.join(d or ".", cmd)
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if os.access(candidate, os.X_OK):
            return candidate
        denied = denied or candidate
    if denied:
        raise CommandError(f"{cmd}: Permission denied", 126)
    raise CommandError(f"{cmd}: command not found", 127)


def _check_executable(path: str, shown: str) -> str:
    try:
        st = os.stat(path)
    except OSError as e:
        code = 127 if e.errno in (errno.ENOENT, errno.ENOTDIR) else 126
        raise CommandError(f"{shown}: {e.strerror}", code) from None
    if stat.S_ISDIR(st.st_mode):
        raise CommandError(f"{shown}: Is a directory", 126)
    if not os.access(path, os.X_OK):
        raise CommandError(f"{shown}: Permission denied", 126)
    return path


class Child:
    """A started child and the wrapper-side ends of its streams.

    ``streams`` lists ``(source fd, destination fd, capture name)``: what the relay copies.
    ``appended`` lists ``(fd, capture name, start offset)``: regular files the child writes
    to directly, whose new bytes are copied into the record after it exits. ``kinds`` says
    what each of stdout and stderr was for the user (pty, pipe, file, device, closed).
    ``master_fd`` is the pty master (pty mode); ``raw_fd`` the user's terminal put in raw mode.
    (A plain class: dataclasses costs ~10 ms of start-up.)
    """

    __slots__ = ("appended", "kinds", "leader", "master_fd", "mode", "pid", "raw_fd",
                 "saved_termios", "slave_fd", "spawner_maxrss", "status_fd", "streams")

    def __init__(self, pid: int, mode: str) -> None:
        self.pid = pid
        self.mode = mode
        # with job control (pty, stdin a terminal): the session leader the wrapper waits for
        # and the pipe it reports the command's end on (rage.record.session)
        self.leader: int | None = None
        self.status_fd: int | None = None
        self.streams: list[tuple[int, int, str | None]] = []
        self.appended: list[tuple[int, str, int]] = []
        self.kinds: dict[str, str] = {}
        self.master_fd: int | None = None
        self.raw_fd: int | None = None
        self.saved_termios: list[Any] | None = None
        # with job control: our own descriptor of the command's terminal, to take back the
        # keys it never read once it has exited (see rage.record.relay.relay's ``on_exit``)
        self.slave_fd: int | None = None
        # the peak RSS (KiB) of the process the command was exec'd from, which its own
        # ru_maxrss counts in (rage.record.wrapper.memory_fields)
        self.spawner_maxrss: int | None = None


TTY, PIPE_KIND, FILE, DEVICE, CLOSED = "tty", "pipe", "file", "device", "closed"


def fd_kind(fd: int) -> tuple[str, tuple[int, int] | None]:
    """What ``fd`` is for the user: a terminal, a pipe or socket (someone reads it as it
    comes: the wrapper relays it), a regular file or another device (the child writes to it
    itself), or closed. With the file's identity, to tell when stdout and stderr share it."""
    try:
        st = os.fstat(fd)
    except OSError:
        return CLOSED, None
    ident = (st.st_dev, st.st_ino)
    if stat.S_ISREG(st.st_mode):
        return FILE, ident
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return (TTY if _isatty(fd) else DEVICE), ident
    return PIPE_KIND, ident


def _start_offset(fd: int) -> int | None:
    """Where the child's writes to the regular file ``fd`` will start (its end if the file
    is open for appending); None if that cannot be known."""
    import fcntl

    try:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND:
            return os.fstat(fd).st_size
        return os.lseek(fd, 0, os.SEEK_CUR)
    except OSError:
        return None


def _reserve_closed_std_fds() -> list[int]:
    """Occupy closed descriptors among 0-2 with /dev/null so no pipe of ours lands there;
    the child gets them closed again (``POSIX_SPAWN_CLOSE``), as without rage."""
    reserved: list[int] = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            reserved.append(fd)
    for _ in reserved:
        os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: one of the closed ones
    return reserved


def _plan_outputs(child: Child, fds: tuple[int, ...], actions: list[Any],
                  to_close: list[int]) -> None:
    """Wire each of ``fds`` (1 and/or 2) that is not on the child's terminal.

    A pipe or socket is relayed through a pipe of ours and captured as it comes; when
    stdout and stderr are the same pipe the child gets one pipe for both, so their
    interleaving is kept. A regular file, /dev/null, /dev/full... and a closed descriptor
    are the child's own, untouched: it sees exactly the errors it would without rage (no
    space left, EBADF, ``cat f >> f``), and a file's new bytes are recorded after it exits.
    """
    names = {1: "stdout", 2: "stderr"}
    kinds = {fd: fd_kind(fd) for fd in fds}
    shared = (len(fds) == 2 and kinds[1][0] == kinds[2][0]
              and kinds[1][1] is not None and kinds[1][1] == kinds[2][1])
    for fd in fds:
        kind, _ident = kinds[fd]
        child.kinds[names[fd]] = kind
        capture = "output.log" if shared else f"{names[fd]}.log"
        if kind == FILE:
            start = _start_offset(fd)
            if start is not None and not (shared and fd == 2):
                child.appended.append((fd, capture, start))
        elif kind == TTY:
            # stderr on the user's terminal, stdout not: a pty of its own, output only, so
            # the child still sees a terminal there (git's progress, colors)
            r, w = _output_pty(fd)
            to_close.append(w)
            actions.append((os.POSIX_SPAWN_DUP2, w, fd))
            child.streams.append((r, fd, capture))
        elif kind == PIPE_KIND:
            if shared and fd == 2:
                actions.append((os.POSIX_SPAWN_DUP2, 1, 2))
                continue
            r, w = _pipe()
            to_close.append(w)
            actions.append((os.POSIX_SPAWN_DUP2, w, fd))
            child.streams.append((r, fd, capture))


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def choose_mode() -> str:
    """pty when the user's stdout is a terminal, pipes otherwise."""
    return PTY if _isatty(1) else PIPE


def job_control(mode: str) -> bool:
    """Whether the command gets a session of its own on its pty, keys relayed from the
    user's terminal in raw mode. Only when stdin is a terminal too: otherwise the pty is
    just where its output goes, and it stays in the user's session, with the user's
    terminal as its ``/dev/tty`` (password prompts read the keys there, echo off). Nor in
    the background of the user's shell (``mytool &``): putting the terminal in raw mode
    would stop rage (SIGTTOU), and so would reading keys it was never asked to read
    (SIGTTIN). There the command keeps the user's terminal as its stdin, as without rage:
    if it reads it, the job stops, and ``fg`` gives it the keys."""
    if mode != PTY or not _isatty(0):
        return False
    from rage.termjob import background  # terminals only: on pipes, one import fewer

    return not background(0)


def _pipe() -> tuple[int, int]:
    import fcntl

    r, w = os.pipe()  # both non-inheritable: the child gets only the dup2'd copy
    try:  # noqa: SIM105 - no contextlib on the start-up path (~3 ms)
        fcntl.fcntl(w, F_SETPIPE_SZ, PIPE_SIZE)
    except OSError:
        pass
    return r, w


def _output_pty(user_fd: int) -> tuple[int, int]:
    """A pty standing in for the user's terminal ``user_fd`` on a stream the child only
    writes to: (master, slave), the slave with the terminal's modes and size. The user's
    terminal does its own output processing (\n -> \r\n), so the pty does none."""
    import fcntl
    import termios

    master, slave = os.openpty()
    try:
        attrs = termios.tcgetattr(user_fd)
        attrs[1] &= ~termios.OPOST
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        fcntl.ioctl(slave, termios.TIOCSWINSZ,
                    fcntl.ioctl(user_fd, termios.TIOCGWINSZ, b"\0" * 8))
    except (termios.error, OSError):
        pass
    return master, slave


def spawn(path: str, argv: list[str], mode: str, sigmask: Iterable[int], *,
          job_control: bool = False,
          meanwhile: Callable[[Child], object] | None = None) -> Child:
    """Start ``path`` with ``argv`` in ``mode``; the child's signal mask is ``sigmask``.
    ``job_control`` (pty mode, see :func:`job_control`): the command gets the pty on stdin
    too, in a session of its own, and the user's terminal goes raw.

    ``meanwhile(child)`` is called while the command's session leader starts it (job
    control only: elsewhere nothing is waited for), with the child's streams and kinds
    known but not its pid (0 until then). It runs before any exec failure is known.

    SIGPIPE and SIGXFSZ go back to their defaults in the child (Python ignores them), as a
    shell would give them. Raises :class:`CommandError` when exec fails.
    """
    sigdef = [signal.SIGPIPE, signal.SIGXFSZ]
    to_close: list[int] = []
    child = Child(pid=0, mode=mode)
    reserved = _reserve_closed_std_fds()  # held until the wrapper exits: nothing lands there
    try:
        actions: list[Any] = [(os.POSIX_SPAWN_CLOSE, fd) for fd in reserved]
        for fd in (1, 2):
            if fd in reserved:
                child.kinds["stdout" if fd == 1 else "stderr"] = CLOSED
        if mode == PIPE:
            _plan_outputs(child, tuple(fd for fd in (1, 2) if fd not in reserved), actions,
                          to_close)
            child.pid = _posix_spawn(path, argv, actions, sigmask, sigdef, setsid=False)
            return child
        return _spawn_pty(child, path, argv, actions, sigmask=sigmask, sigdef=sigdef,
                          to_close=to_close, job_control=job_control, meanwhile=meanwhile)
    except BaseException:
        for src in [s[0] for s in child.streams] + [child.master_fd]:
            if src is not None:
                _close_quietly(src)
        raise
    finally:
        for fd in to_close:
            os.close(fd)


def _close_quietly(fd: int) -> None:
    try:  # noqa: SIM105 - no contextlib on the start-up path
        os.close(fd)
    except OSError:
        pass


def _spawn_pty(
    child: Child, path: str, argv: list[str], actions: list[Any], *,
    sigmask: Iterable[int], sigdef: list[signal.Signals], to_close: list[int],
    job_control: bool, meanwhile: Callable[[Child], object] | None = None,
) -> Child:
    import fcntl
    import termios

    master, slave = os.openpty()
    child.master_fd = master
    to_close.append(slave)
    # the child's terminal starts as a copy of the user's: same modes, same size
    users: list[Any] | None = None
    try:
        users = termios.tcgetattr(0 if job_control else 1)
        attrs = [*users[:6], list(users[6])]
        if not job_control:
            # the user's terminal is not raw then and does its own output processing
            # (\n -> \r\n); doing it twice would print \r\r\n
            attrs[1] &= ~termios.OPOST
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
    except termios.error:
        pass
    try:  # noqa: SIM105
        fcntl.ioctl(slave, termios.TIOCSWINSZ, fcntl.ioctl(1, termios.TIOCGWINSZ, b"\0" * 8))
    except OSError:
        pass
    name = os.ttyname(slave)
    first = 0 if job_control else 1
    # never the command's controlling terminal by this open: with job control the session
    # leader opened it first, otherwise the command keeps the user's terminal
    actions.append((os.POSIX_SPAWN_OPEN, first, name, os.O_RDWR | os.O_NOCTTY, 0))
    if first == 0:
        actions.append((os.POSIX_SPAWN_DUP2, 0, 1))
    child.kinds["stdout"] = TTY
    if _isatty(2):
        actions.append((os.POSIX_SPAWN_DUP2, first, 2))
        child.kinds["stderr"] = TTY
    elif "stderr" not in child.kinds:  # not closed
        _plan_outputs(child, (2,), actions, to_close)
    os.set_blocking(master, False)  # input is buffered, never blocks the output side
    child.streams.insert(0, (master, 1, "output.log"))
    if not job_control:
        child.pid = _posix_spawn(path, argv, actions, sigmask, sigdef, setsid=False)
        return child
    child.streams.append((0, master, None))
    from rage.record.session import SpawnFailed, start

    try:
        child.leader, child.pid, child.status_fd = start(
            path, argv, name, actions, sigmask=sigmask, sigdef=list(sigdef), close=(master,),
            env=command_environ(),
            meanwhile=None if meanwhile is None else lambda: meanwhile(child))
    except SpawnFailed as e:
        raise CommandError(str(e), e.exit_code) from None
    # Keys we relay after the command has exited, until the wrapper learns of it, land in
    # the command's terminal after its leader took the unread ones: only a descriptor of
    # ours can take them back. Held until then, so the pty cannot be gone (and its number
    # reused) when we read it. Not inheritable: the command never holds it.
    try:
        child.slave_fd = os.dup(slave)
    except OSError:
        child.slave_fd = None
    child.raw_fd = 0
    child.saved_termios = enter_raw(0, users)
    return child


def command_environ() -> dict[bytes, bytes]:
    """The environment for the command: this process's, as the bytes it holds. Given
    ``os.environ``, posix_spawn decodes each name and value in Python and encodes it back
    (~0.3M instructions for 36 variables); in the forked session leader, every object made
    doing so also writes a page it shares with the wrapper (~0.2 ms of its CPU)."""
    return dict(os.environb)


def _posix_spawn(
    path: str, argv: list[str], actions: list[Any],
    sigmask: Iterable[int], sigdef: list[signal.Signals], *, setsid: bool,
) -> int:
    env = command_environ()
    try:
        return os.posix_spawn(path, argv, env, file_actions=actions,
                              setsigmask=sigmask, setsigdef=sigdef, setsid=setsid)
    except OSError as e:
        if e.errno == errno.ENOEXEC:
            # a script without a #! line: shells run it with sh, so do we
            return os.posix_spawn("/bin/sh", ["sh", path, *argv[1:]], env,
                                  file_actions=actions, setsigmask=sigmask, setsigdef=sigdef,
                                  setsid=setsid)
        code = 127 if e.errno == errno.ENOENT else 126
        raise CommandError(f"{argv[0]}: {e.strerror}", code) from None


def enter_raw(fd: int, saved: list[Any] | None = None) -> list[Any] | None:
    """Put terminal ``fd`` in raw mode (what ``tty.setraw`` does, without importing tty);
    return its previous attributes (None if not a tty). ``saved``: those attributes, when
    the caller has just read them."""
    import termios

    try:
        if saved is None:
            saved = termios.tcgetattr(fd)
        mode = [*saved[:6], list(saved[6])]
        mode[0] &= ~(termios.BRKINT | termios.ICRNL | termios.INPCK | termios.ISTRIP
                     | termios.IXON)
        mode[1] &= ~termios.OPOST
        mode[2] = (mode[2] & ~(termios.CSIZE | termios.PARENB)) | termios.CS8
        mode[3] &= ~(termios.ECHO | termios.ICANON | termios.IEXTEN | termios.ISIG)
        mode[6][termios.VMIN] = 1
        mode[6][termios.VTIME] = 0
        termios.tcsetattr(fd, termios.TCSANOW, mode)
    except termios.error:
        return None
    return saved


def restore_mode(fd: int | None, saved: list[Any] | None) -> None:
    """Give the user's terminal back its saved attributes; never raises. Not from the
    background of the user's shell (after ^Z and ``bg``): the shell has the terminal and
    its modes then (rage never makes it raw there), and setting them would stop rage
    (SIGTTOU)."""
    if fd is None or saved is None:
        return
    from rage.termjob import background

    if background(fd):
        return
    import termios

    try:  # noqa: SIM105
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    except (termios.error, OSError):
        pass


def copy_winsize(src_fd: int, master_fd: int) -> bool:
    """Copy the window size of ``src_fd`` to the pty; True if it changed (the kernel then
    sends SIGWINCH to the child's foreground process group)."""
    import fcntl
    import termios

    try:
        new = fcntl.ioctl(src_fd, termios.TIOCGWINSZ, b"\0" * 8)
        old = fcntl.ioctl(master_fd, termios.TIOCGWINSZ, b"\0" * 8)
        if new == old:
            return False
        fcntl.ioctl(master_fd, termios.TIOCSWINSZ, new)
    except OSError:
        return False
    return True
