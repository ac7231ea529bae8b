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
    from collections.abc import Iterable
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
    ``master_fd`` is the pty master (pty mode); ``raw_fd`` the user's terminal put in raw mode.
    (A plain class: dataclasses costs ~10 ms of start-up.)
    """

    __slots__ = ("master_fd", "mode", "pid", "raw_fd", "saved_termios", "streams")

    def __init__(self, pid: int, mode: str) -> None:
        self.pid = pid
        self.mode = mode
        self.streams: list[tuple[int, int, str | None]] = []
        self.master_fd: int | None = None
        self.raw_fd: int | None = None
        self.saved_termios: list[Any] | None = None


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def choose_mode() -> str:
    """pty when the user's stdout is a terminal, pipes otherwise."""
    return PTY if _isatty(1) else PIPE


def _pipe() -> tuple[int, int]:
    import fcntl

    r, w = os.pipe()  # both non-inheritable: the child gets only the dup2'd copy
    try:  # noqa: SIM105 - no contextlib on the start-up path (~3 ms)
        fcntl.fcntl(w, F_SETPIPE_SZ, PIPE_SIZE)
    except OSError:
        pass
    return r, w


def spawn(path: str, argv: list[str], mode: str, sigmask: Iterable[int]) -> Child:
    """Start ``path`` with ``argv`` in ``mode``; the child's signal mask is ``sigmask``.

    SIGPIPE and SIGXFSZ go back to their defaults in the child (Python ignores them), as a
    shell would give them. Raises :class:`CommandError` when exec fails.
    """
    sigdef = [signal.SIGPIPE, signal.SIGXFSZ]
    to_close: list[int] = []
    child = Child(pid=0, mode=mode)
    try:
        if mode == PIPE:
            out_r, out_w = _pipe()
            err_r, err_w = _pipe()
            to_close += [out_w, err_w]
            actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
                (os.POSIX_SPAWN_DUP2, out_w, 1),
                (os.POSIX_SPAWN_DUP2, err_w, 2),
            ]
            child.streams = [(out_r, 1, "stdout.log"), (err_r, 2, "stderr.log")]
            child.pid = _posix_spawn(path, argv, actions, sigmask, sigdef, setsid=False)
            return child
        return _spawn_pty(child, path, argv, sigmask=sigmask, sigdef=sigdef, to_close=to_close)
    except BaseException:
        for fd in [s[0] for s in child.streams] + [child.master_fd]:
            if fd is not None:
                _close_quietly(fd)
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
    child: Child, path: str, argv: list[str], *, sigmask: Iterable[int],
    sigdef: list[signal.Signals], to_close: list[int],
) -> Child:
    import fcntl
    import termios

    master, slave = os.openpty()
    child.master_fd = master
    to_close.append(slave)
    stdin_tty = _isatty(0)
    # the child's terminal starts as a copy of the user's: same modes, same size
    try:
        attrs = termios.tcgetattr(0 if stdin_tty else 1)
        if not stdin_tty:
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
    # after setsid, the first open of the slave makes it the child's controlling terminal
    first = 0 if stdin_tty else 1
    actions: list[tuple[int, ...] | tuple[int, int, str, int, int]] = [
        (os.POSIX_SPAWN_OPEN, first, name, os.O_RDWR, 0),
    ]
    if first == 0:
        actions.append((os.POSIX_SPAWN_DUP2, 0, 1))
    if _isatty(2):
        actions.append((os.POSIX_SPAWN_DUP2, first, 2))
    else:
        err_r, err_w = _pipe()
        to_close.append(err_w)
        actions.append((os.POSIX_SPAWN_DUP2, err_w, 2))
        child.streams.append((err_r, 2, "stderr.log"))
    os.set_blocking(master, False)  # input is buffered, never blocks the output side
    child.streams.insert(0, (master, 1, "output.log"))
    if stdin_tty:
        child.streams.append((0, master, None))
    child.pid = _posix_spawn(path, argv, actions, sigmask, sigdef, setsid=True)
    if stdin_tty:
        child.raw_fd = 0
        child.saved_termios = enter_raw(0)
    return child


def _posix_spawn(
    path: str, argv: list[str], actions: list[tuple[int, ...] | tuple[int, int, str, int, int]],
    sigmask: Iterable[int], sigdef: list[signal.Signals], *, setsid: bool,
) -> int:
    try:
        return os.posix_spawn(path, argv, os.environ, file_actions=actions,
                              setsigmask=sigmask, setsigdef=sigdef, setsid=setsid)
    except OSError as e:
        if e.errno == errno.ENOEXEC:
            # a script without a #! line: shells run it with sh, so do we
            return os.posix_spawn("/bin/sh", ["sh", path, *argv[1:]], os.environ,
                                  file_actions=actions, setsigmask=sigmask, setsigdef=sigdef,
                                  setsid=setsid)
        code = 127 if e.errno == errno.ENOENT else 126
        raise CommandError(f"{argv[0]}: {e.strerror}", code) from None


def enter_raw(fd: int) -> list[Any] | None:
    """Put terminal ``fd`` in raw mode; return its previous attributes (None if not a tty)."""
    import termios
    import tty

    try:
        saved: list[Any] = termios.tcgetattr(fd)
        tty.setraw(fd, termios.TCSANOW)
    except termios.error:
        return None
    return saved


def restore_mode(fd: int | None, saved: list[Any] | None) -> None:
    """Give the user's terminal back its saved attributes; never raises."""
    if fd is None or saved is None:
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
