"""The session leader a command runs under on its own pseudo-terminal.

A command on a terminal of its own needs a session of its own. If the command led that
session itself, its process group would be *orphaned* (its parent, the wrapper, is in
another session), and the kernel discards every SIGTSTP sent to an orphaned group: ^Z
would do nothing, vim's and less's own suspend (``kill(0, SIGTSTP)``) would be ignored.
So, as a login shell does, a small process leads the session and runs the command in a
process group of its own, in the foreground of the terminal. That group is not orphaned:
^Z, vim's ^Z and less's cleanup on SIGTSTP behave exactly as on the user's terminal.

The leader is a fork of the wrapper (no exec, ~1 ms) that only waits. When the command
stops it stops itself, which the wrapper sees (``WUNTRACED``) and mirrors on the user's
terminal; when continued it continues the command. When the command ends it writes the
command's wait status and resource usage to a pipe and exits.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any
else:
    import _signal as signal  # signal's enums cost ~3 ms of every recorded command


TYPEAHEAD_MAX = 4096  # a line discipline holds at most this much unread input


class Usage:
    """The command's resource usage, as the leader reported it (``wait4``'s fields we keep),
    and the leader's own peak RSS when it started the command (``spawner_maxrss``, KiB):
    the command's ``ru_maxrss`` counts it in (see :func:`rage.record.wrapper.memory_fields`)."""

    __slots__ = ("ru_maxrss", "ru_stime", "ru_utime", "spawner_maxrss")

    def __init__(self, maxrss: int, utime: float, stime: float,
                 spawner_maxrss: int | None = None) -> None:
        self.ru_maxrss = maxrss
        self.ru_utime = utime
        self.ru_stime = stime
        self.spawner_maxrss = spawner_maxrss


class SpawnFailed(Exception):
    """exec failed in the leader: ``exit_code`` (126/127) and the message."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def start(path: str, argv: list[str], tty_name: str, actions: list[Any], *,
          sigmask: Iterable[int], sigdef: list[int], close: Iterable[int],
          meanwhile: Callable[[], object] | None = None,
          env: Mapping[bytes, bytes] | None = None) -> tuple[int, int, int]:
    """Fork the leader, which starts the command; return (leader pid, command pid, status fd).

    ``actions`` are the command's file actions; ``close`` the wrapper's descriptors the
    leader must not hold (the pty master). ``meanwhile`` is called once the leader is
    forked, before its report is awaited: what the wrapper does there overlaps the leader's
    start of the command (setsid, the terminal, the spawn), which it would otherwise only
    wait for. ``env``: the command's environment, made before the fork (default: this
    process's). Raises :class:`SpawnFailed` if exec failed.
    """
    if env is None:
        from rage.record.spawn import command_environ

        env = command_environ()
    # the leader's os.wait4 and getrusage need resource: imported here, before the fork,
    # its pages are shared; imported in the leader, its every write copies a page of the
    # wrapper's heap (125 faults and ~0.6 ms of the leader's CPU per command, measured)
    import resource  # noqa: F401
    r, w = os.pipe()
    try:
        leader = os.fork()
    except OSError as e:  # out of processes or memory: as a shell would say it
        os.close(r)
        os.close(w)
        raise SpawnFailed(f"{argv[0]}: cannot fork: {e.strerror}", 126) from None
    if leader == 0:  # pragma: no cover - runs in the forked leader, which never returns
        code = 1
        try:
            os.close(r)
            for fd in close:
                os.close(fd)
            _lead(path, argv, tty_name, actions, sigmask=sigmask, sigdef=sigdef, w=w,
                  env=env)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    try:
        if meanwhile is not None:
            meanwhile()
    finally:
        line = _read_line(r)  # whatever happened meanwhile: the leader has said its word
    if line.startswith(b"pid "):
        return leader, int(line[4:]), r
    os.close(r)
    os.waitpid(leader, 0)
    word, _, message = line.decode("utf-8", "surrogateescape").partition(" ")[2].partition(" ")
    raise SpawnFailed(message or "cannot start the command",
                      int(word) if word.isdigit() else 126)


def _read_line(fd: int) -> bytes:
    """One line, read a byte at a time: what follows it stays in the pipe (the next line
    can already be there when the command ends at once)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk:
            break
        data += chunk
    return data.rstrip(b"\n")


def _lead(path: str, argv: list[str], tty_name: str, actions: list[Any], *,
          sigmask: Iterable[int], sigdef: list[int], w: int,
          env: Mapping[bytes, bytes]) -> None:
    """The leader's whole life (in the forked process)."""
    import errno

    os.setsid()
    tty = os.open(tty_name, os.O_RDWR)  # the first open after setsid: our controlling tty
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # tcsetpgrp below, from any group
    sigdef = [*sigdef, signal.SIGTTOU]  # not ignored in the command, though
    try:
        pid = os.posix_spawn(path, argv, env, file_actions=actions,
                             setsigmask=sigmask, setsigdef=sigdef, setpgroup=0)
    except OSError as e:
        if e.errno != errno.ENOEXEC:
            code = 127 if e.errno == errno.ENOENT else 126
            os.write(w, f"error {code} {argv[0]}: {e.strerror}\n".encode(
                "utf-8", "surrogateescape"))
            return
        # a script without a #! line: shells run it with sh, so do we
        pid = os.posix_spawn("/bin/sh", ["sh", path, *argv[1:]], env,
                             file_actions=actions, setsigmask=sigmask, setsigdef=sigdef,
                             setpgroup=0)
    _foreground(tty, pid)
    os.write(w, b"pid %d\n" % pid)
    # the command was exec'd from our memory (vfork): its ru_maxrss counts our peak in.
    # Ours is our ru_maxrss, which is our VmHWM (rage.record.peakrss): a fork that never
    # exec'd carries no peak of a program it was exec'd from. One system call, where
    # reading /proc/self/status cost ~0.12 ms of the leader's CPU (the text, copied pages)
    import resource

    spawner_maxrss: int | None = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    while True:
        _, status, ru = os.wait4(pid, os.WUNTRACED)
        if not os.WIFSTOPPED(status):
            break
        if os.WSTOPSIG(status) in (signal.SIGTTIN, signal.SIGTTOU) and _is_foreground(tty, pid):
            # it touched the terminal in the instant before it was made the foreground
            _continue(pid)
            continue
        os.kill(os.getpid(), signal.SIGSTOP)  # the wrapper sees this and stops the user's job
        _foreground(tty, pid)  # `fg`: resumed, the command owns its terminal again
        _continue(pid)
    # Background processes the command left in its group live on, as they would on the
    # user's terminal: take the foreground back first, so our exit (the session leader's)
    # hangs up only our own, empty, group rather than theirs.
    _foreground(tty, os.getpgrp())
    typeahead = unread_input(tty).hex() or "-"
    os.write(w, f"done {status} {ru.ru_maxrss} {ru.ru_utime!r} {ru.ru_stime!r} {typeahead} "
             f"{-1 if spawner_maxrss is None else spawner_maxrss}\n".encode())


def unread_input(tty: int) -> bytes:
    """Keys typed on the command's terminal that it never read: typed ahead for the
    user's shell, as on a terminal. Read in non-canonical mode, so a partial line counts.
    The leader takes them as the command ends; the wrapper (:mod:`rage.record.wrapper`)
    again, for keys it relayed until it learnt of the end."""
    import termios

    try:
        attrs = termios.tcgetattr(tty)
        attrs[3] &= ~(termios.ICANON | termios.ECHO)
        attrs[6][termios.VMIN] = 0
        attrs[6][termios.VTIME] = 0
        termios.tcsetattr(tty, termios.TCSANOW, attrs)
        data = b""
        while len(data) < TYPEAHEAD_MAX and (chunk := os.read(tty, TYPEAHEAD_MAX)):
            data += chunk
    except (termios.error, OSError):
        return b""
    return data[:TYPEAHEAD_MAX]


def _foreground(tty: int, pgrp: int) -> None:
    try:  # noqa: SIM105 - no contextlib on the start-up path
        os.tcsetpgrp(tty, pgrp)
    except OSError:
        pass


def _is_foreground(tty: int, pgrp: int) -> bool:
    try:
        return os.tcgetpgrp(tty) == pgrp
    except OSError:
        return False


def _continue(pgrp: int) -> None:
    try:  # noqa: SIM105
        os.killpg(pgrp, signal.SIGCONT)
    except OSError:
        pass


def read_result(fd: int) -> tuple[int, Usage, bytes] | None:
    """The command's wait status, usage and unread keys once the leader has exited (None
    if it died before saying: the leader's own status is then all there is). The leader
    is gone, so the pipe holds all it wrote: read at once, not a byte at a time (each
    read would wait for the GIL the main thread holds)."""
    data = b""
    try:
        while chunk := os.read(fd, 1 << 16):
            data += chunk
    except OSError:
        return None
    parts = data.split(b"\n", 1)[0].split()
    if len(parts) != 7 or parts[0] != b"done":
        return None
    typeahead = b"" if parts[5] == b"-" else bytes.fromhex(parts[5].decode())
    spawner = int(parts[6])
    usage = Usage(int(parts[2]), float(parts[3]), float(parts[4]),
                  spawner if spawner >= 0 else None)
    return int(parts[1]), usage, typeahead


def give_back(tty: int, keys: bytes) -> None:
    """Put ``keys`` back in the user's terminal input, as if typed now (TIOCSTI), for the
    shell to read; quietly nothing where the system forbids it (Linux 6.2+ can)."""
    import fcntl
    import termios

    try:
        for i in range(len(keys)):
            fcntl.ioctl(tty, termios.TIOCSTI, keys[i:i + 1])
    except OSError:
        pass
