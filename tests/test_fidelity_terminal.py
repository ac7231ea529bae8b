"""Fidelity on a terminal: each case runs in a real session on a pseudo-terminal we drive
(its controlling terminal, so ^C and ^Z are the kernel's), once with a plain `r() { "$@"; }`
and once with `r` going through `rage run`, typing the same keys; what the user sees (the
lines that matter), exit statuses and signal deaths must agree. Real programs: bash, sleep,
python3, vim, less."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shlex
import shutil
import signal
import struct
import sys
import termios
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from tests.conftest import rage_cmd

PLAIN = 'r() { "$@"; }'
WRAPPED = f'r() {{ {shlex.join(rage_cmd("run", "--"))} "$@"; }}'
BOTH = pytest.mark.parametrize("wrapper", [PLAIN, WRAPPED], ids=["plain", "rage"])
PROMPT = b"PROMPT$ "


class Session:
    """A process leading a session on a pty we hold the master of: the user's terminal."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.pid, self.master = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        self.screen = bytearray()
        self.status: int | None = None

    def pump(self, timeout: float) -> bool:
        if select.select([self.master], [], [], timeout)[0]:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return False
            self.screen.extend(data)
            return bool(data)
        return True

    def read_until(self, needle: bytes, timeout: float = 60, start: int = 0) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.screen[start:]:
            left = deadline - time.monotonic()
            assert left > 0, (f"timed out waiting for {needle!r}; saw {bytes(self.screen)!r}; "
                              f"processes:\n{self.processes()}")
            assert self.pump(left), f"terminal closed before {needle!r}; saw {self.screen!r}"

    def wait_for(self, pred: Callable[[], bool], what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not pred():
            assert time.monotonic() < deadline, (
                f"timed out: {what}; saw {self.screen!r}; processes:\n{self.processes()}")
            self.pump(0.02)

    def processes(self) -> str:
        """The processes below the session, for a failure's message: who is stopped, who
        is a zombie nobody reaped, and their signal masks."""
        lines = []
        for pid, (comm, state) in sorted(descendants(self.pid).items()):
            fields = {}
            with suppress(OSError), open(f"/proc/{pid}/status") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key in ("PPid", "NSpgid", "NSsid", "SigPnd", "ShdPnd", "SigBlk",
                               "SigIgn", "SigCgt"):
                        fields[key] = value.strip()
            lines.append(f"  {pid} {comm} {state} {fields}")
            lines.extend(f"    thread {tid}: {where}" for tid, where in _threads(pid))
        return "\n".join(lines)

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def wait(self, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
                break
            assert time.monotonic() < deadline, f"session did not end; saw {self.screen!r}"
            self.pump(0.02)
        while self.pump(0.05) and select.select([self.master], [], [], 0)[0]:
            pass
        return self.status

    def raw(self) -> bool:
        """Whether the user's terminal is in raw mode (rage relaying keys to its pty)."""
        return not termios.tcgetattr(self.master)[3] & termios.ICANON

    def close(self) -> None:
        if self.status is None:
            with suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            with suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
        os.close(self.master)


@contextmanager
def session(argv: list[str], tmp_path: Path) -> Iterator[Session]:
    env = {**os.environ, "PS1": "PROMPT$ ", "TERM": "xterm", "HISTFILE": "/dev/null"}
    s = Session(argv, env, tmp_path)
    try:
        yield s
    finally:
        s.close()


def _threads(pid: int) -> list[tuple[str, str]]:
    """Each thread of ``pid`` and where it waits: its kernel wait channel and system call
    (number and first arguments), to tell a poll from a read or a futex in a hang."""
    found = []
    with suppress(OSError):
        for tid in sorted(os.listdir(f"/proc/{pid}/task")):
            where = []
            for name in ("wchan", "syscall"):
                with suppress(OSError), open(f"/proc/{pid}/task/{tid}/{name}") as f:
                    where.append(" ".join(f.read().split()[:4]))
            found.append((tid, " / ".join(where)))
    return found


def descendants(pid: int) -> dict[int, tuple[str, str]]:
    """pid -> (command name, state) of every process below ``pid``."""
    procs: dict[int, tuple[int, str, str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    text = f.read()
            except OSError:
                continue
            comm = text[text.index("(") + 1:text.rindex(")")]
            fields = text[text.rindex(")") + 2:].split()
            procs[int(entry)] = (int(fields[1]), comm, fields[0])
    found: dict[int, tuple[str, str]] = {}
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for p, (ppid, comm, state) in procs.items():
            if ppid == parent and p not in found:
                found[p] = (comm, state)
                frontier.append(p)
    return found


def running(s: Session, name: str, wrapper: str) -> Callable[[], bool]:
    """The program ``name`` (a prefix of its command name) runs below the session (and,
    under rage, keys go raw to it)."""
    def pred() -> bool:
        up = any(comm.startswith(name) and state in "RS"
                 for comm, state in descendants(s.pid).values())
        return up and (wrapper == PLAIN or s.raw())
    return pred


def stopped(s: Session, name: str) -> Callable[[], bool]:
    return lambda: any(c == name and st == "T" for c, st in descendants(s.pid).values())


def gone(s: Session, name: str) -> Callable[[], bool]:
    """``name`` has exited, and so has rage if it ran it (keys typed then go to the shell)."""
    return lambda: not any(c.startswith((name, "python")) for c, _ in
                           descendants(s.pid).values())


def interactive(wrapper: str, tmp_path: Path) -> list[str]:
    rc = tmp_path / "rc"
    rc.write_text(f"PS1='PROMPT$ '\nbind 'set enable-bracketed-paste off'\n{wrapper}\n")
    return ["bash", "--noprofile", "--rcfile", str(rc), "-i"]


@BOTH
def test_ctrl_c_stops_a_shell_loop(wrapper: str, tmp_path: Path) -> None:
    """`for ...; do r sleep 30; echo $i; done` on a terminal: ^C ends the whole script."""
    script = f"{wrapper}\nfor i in 1 2 3; do r sleep 30; echo i=$i; done; echo end"
    with session(["bash", "-c", script], tmp_path) as s:
        s.wait_for(running(s, "sleep", wrapper), "sleep to run")
        s.type(b"\x03")
        status = s.wait()
    assert b"i=1" not in s.screen and b"end" not in s.screen
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT


@BOTH
def test_ctrl_c_reaches_a_python_parent(wrapper: str, tmp_path: Path) -> None:
    code = ("import subprocess, sys\n"
            "try:\n    subprocess.run(sys.argv[1:])\n"
            "except KeyboardInterrupt:\n    print('KeyboardInterrupt in the parent')\n")
    argv = rage_cmd("run", "--", "sleep", "30") if wrapper == WRAPPED else ["sleep", "30"]
    with session([sys.executable, "-c", code, *argv], tmp_path) as s:
        s.wait_for(running(s, "sleep", wrapper), "sleep to run")
        s.type(b"\x03")
        assert s.wait() == 0
    assert b"KeyboardInterrupt in the parent" in s.screen


@BOTH
def test_a_handled_ctrl_c_lets_the_script_go_on(wrapper: str, tmp_path: Path) -> None:
    """A program that catches ^C and exits normally: the calling script carries on."""
    child = (f"{shlex.quote(sys.executable)} -c 'import time\ntry:\n"
             " print(\"rea\" \"dy\", flush=True); time.sleep(30)\n"
             "except KeyboardInterrupt: print(\"caught\")'")
    script = f"{wrapper}\nr {child}; echo after-$?"
    with session(["bash", "-c", script], tmp_path) as s:
        s.wait_for(running(s, "python", wrapper), "python to run")
        s.read_until(b"ready")  # in its try block
        s.type(b"\x03")
        assert s.wait() == 0
    assert b"caught" in s.screen and b"after-0" in s.screen


def _echo_status(s: Session, mark: str) -> None:
    s.type(f"echo {mark}-$?\n".encode())


@BOTH
def test_ctrl_z_stops_the_job_with_148_and_fg_resumes(wrapper: str, tmp_path: Path) -> None:
    with session(interactive(wrapper, tmp_path), tmp_path) as s:
        s.read_until(PROMPT)
        s.type(b"r sleep 30\n")
        s.wait_for(running(s, "sleep", wrapper), "sleep to run")
        s.type(b"\x1a")
        s.read_until(b"Stopped")
        s.wait_for(stopped(s, "sleep"), "sleep stopped")
        at = len(s.screen)
        _echo_status(s, "status")
        s.read_until(b"status-148", start=at)
        s.type(b"fg\n")
        s.wait_for(running(s, "sleep", wrapper), "sleep to run again")
        s.type(b"\x03")
        # (keys typed before rage has seen its command end reach the shell only through
        # TIOCSTI, which a system may forbid: wait)
        s.wait_for(gone(s, "sleep"), "sleep and rage to end")
        at = len(s.screen)
        _echo_status(s, "after")
        s.read_until(b"after-130", start=at)
        s.type(b"exit\n")
        s.wait()


@BOTH
def test_ctrl_z_in_a_script_stops_the_whole_job(wrapper: str, tmp_path: Path) -> None:
    """The parent script has no job control: ^Z stops it with the command (the terminal's
    foreground group), and `fg` resumes both; nothing is left frozen."""
    with session(interactive(wrapper, tmp_path), tmp_path) as s:
        s.read_until(PROMPT)
        s.type(b"bash -c \"$(declare -f r); r sleep 2; echo done-\\$?\"\n")
        s.wait_for(running(s, "sleep", wrapper), "sleep to run")
        s.type(b"\x1a")
        s.read_until(b"Stopped")
        s.wait_for(lambda: all(st == "T" for c, st in descendants(s.pid).values()
                               if c in ("bash", "sleep")), "the whole job stopped")
        s.type(b"fg\n")
        s.read_until(b"done-0")
        s.type(b"exit\n")
        s.wait()


@BOTH
def test_ctrl_z_without_job_control_above_never_freezes(wrapper: str, tmp_path: Path) -> None:
    """A session whose leader is a plain script (an orphaned group: nobody could resume
    it): ^Z does nothing, as on a terminal, and the command finishes."""
    script = f"{wrapper}\nr sleep 1.5; echo done-$?"
    with session(["bash", "-c", script], tmp_path) as s:
        s.wait_for(running(s, "sleep", wrapper), "sleep to run")
        s.type(b"\x1a")
        assert s.wait(timeout=20) == 0
    assert b"done-0" in s.screen


@BOTH
def test_ctrl_z_on_a_job_of_an_inner_shell(wrapper: str, tmp_path: Path) -> None:
    """Inside `r bash -i`, ^Z stops the inner shell's job only; that shell goes on."""
    with session(interactive(wrapper, tmp_path), tmp_path) as s:
        s.read_until(PROMPT)
        s.type(b"r bash --norc --noprofile -i\n")
        s.read_until(PROMPT, start=len(PROMPT))
        s.type(b"sleep 30\n")
        s.wait_for(running(s, "sleep", wrapper), "sleep to run")
        s.type(b"\x1a")
        s.read_until(b"Stopped")
        at = len(s.screen)
        s.type(b"echo inner-$((40+2))\n")
        s.read_until(b"inner-42", start=at)
        s.type(b"kill -KILL %1\n")
        # bash (5.2) can miss the SIGCHLD of a stopped job it killed and leave it a zombie,
        # still "Stopped", until it next waits for a child (seen with and without rage):
        # an external command of its own makes it wait, and reap
        s.type(b"env true\n")
        # reaped, not just dead: else `exit` may still find "There are stopped jobs"
        s.wait_for(lambda: all(c != "sleep" for c, _ in descendants(s.pid).values()),
                   "the inner job killed and reaped")
        s.type(b"exit\n")
        s.wait_for(lambda: not any(c == "bash" for c, _ in descendants(s.pid).values()),
                   "the inner shell to exit")
        at = len(s.screen)
        _echo_status(s, "outer")
        s.read_until(b"outer-0", start=at)
        s.type(b"exit\n")
        s.wait()


VIM = shutil.which("vim") or shutil.which("vim.tiny")


@pytest.mark.skipif(not VIM, reason="vim is not installed (apt-get install vim-tiny)")
@BOTH
def test_vim_suspends_on_ctrl_z(wrapper: str, tmp_path: Path) -> None:
    assert VIM
    (tmp_path / "f.txt").write_text("hello\n")
    with session(interactive(wrapper, tmp_path), tmp_path) as s:
        s.read_until(PROMPT)
        s.type(f"r {VIM} -u NONE -N -n f.txt\n".encode())
        s.read_until(b"hello")
        s.wait_for(running(s, "vim", wrapper), "vim to run")
        s.type(b"\x1a")
        s.read_until(b"Stopped")
        s.wait_for(stopped(s, "vim"), "vim stopped")
        at = len(s.screen)
        _echo_status(s, "status")
        s.read_until(b"status-148", start=at)
        s.type(b"fg\n")
        s.wait_for(running(s, "vim", wrapper), "vim to run again")
        time.sleep(0.3)
        s.type(b":q!\r")
        s.wait_for(gone(s, "vim"), "vim to exit")
        at = len(s.screen)
        _echo_status(s, "after")
        s.read_until(b"after-0", start=at)
        s.type(b"exit\n")
        s.wait()


@pytest.mark.skipif(not shutil.which("less"), reason="less is not installed")
@BOTH
def test_less_restores_the_screen_on_ctrl_z(wrapper: str, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("".join(f"line {i}\n" for i in range(200)))
    with session(interactive(wrapper, tmp_path), tmp_path) as s:
        s.read_until(PROMPT)
        s.type(b"r less f.txt\n")
        s.read_until(b"line 10")
        s.wait_for(running(s, "less", wrapper), "less to run")
        time.sleep(0.3)  # less settles into reading keys
        at = len(s.screen)
        s.type(b"\x1a")
        s.read_until(b"Stopped", start=at)
        suspended = bytes(s.screen[at:])
        # less leaves the alternate screen (xterm's rmcup) before it stops
        assert b"\x1b[?1049l" in suspended.split(b"Stopped")[0]
        s.type(b"fg\n")
        s.wait_for(running(s, "less", wrapper), "less to run again")
        time.sleep(0.3)
        s.type(b"q")
        s.wait_for(gone(s, "less"), "less to exit")
        at = len(s.screen)
        _echo_status(s, "after")
        s.read_until(b"after-0", start=at)
        s.type(b"exit\n")
        s.wait()


@BOTH
def test_password_prompt_on_dev_tty_with_stdin_piped(wrapper: str, tmp_path: Path) -> None:
    """stdin piped, stdout a terminal: a prompt on /dev/tty gets the typed keys, which are
    not echoed, and the program sees the pipe on stdin."""
    code = ("import getpass, sys\n"
            "pw = getpass.getpass('Enter-' + 'secret: ')\n"
            "print('got', repr(pw), repr(sys.stdin.read()), sys.stdout.isatty())\n")
    with session(interactive(wrapper, tmp_path), tmp_path) as s:
        s.read_until(PROMPT)
        s.type(f"echo piped | r {shlex.quote(sys.executable)} -c {shlex.quote(code)}\n"
               .encode())
        s.read_until(b"Enter-secret: ")
        at = len(s.screen)
        time.sleep(0.2)
        s.type(b"hunter2\r")
        s.read_until(b"got 'hunter2' 'piped\\n' True", start=at)
        assert b"hunter2" not in s.screen[at:].split(b"got")[0]
        s.type(b"exit\n")
        s.wait()


def test_signal_death_on_a_terminal_is_reported_by_the_shell(tmp_path: Path) -> None:
    """A crash under rage on a terminal: the shell prints "Segmentation fault" itself."""
    crash = f"{shlex.quote(sys.executable)} -c 'import ctypes; ctypes.string_at(0)'"
    screens = []
    for wrapper in (PLAIN, WRAPPED):
        with session(["bash", "-c", f"ulimit -c 0; {wrapper}\nr {crash}; echo rc=$?"],
                     tmp_path) as s:
            s.wait()
        screens.append(re.sub(rb"rage: .*\r\n", b"", bytes(s.screen)))
    for screen in screens:
        assert b"Segmentation fault" in screen and b"rc=139" in screen


@BOTH
def test_background_child_lives_on_and_keeps_its_terminal(wrapper: str, tmp_path: Path) -> None:
    """A process the command leaves in the background outlives it and still writes to the
    terminal after the command (and rage) returned."""
    script = (f"{wrapper}\nr sh -c '(sleep 0.5; echo late) & echo now'; echo rc=$?;"
              " sleep 2; echo end")
    with session(["bash", "-c", script], tmp_path) as s:
        assert s.wait() == 0
    screen = bytes(s.screen)
    assert re.search(rb"now\r\nrc=0\r\n.*late\r\n.*end", screen, re.S), screen


@BOTH
def test_stderr_stays_a_terminal_when_stdout_goes_to_a_file(wrapper: str,
                                                           tmp_path: Path) -> None:
    """`cmd > file` on a terminal: stderr is still a terminal for the program (progress
    bars, colors), its size too; what it wrote there reaches the screen."""
    code = ("import os, sys; print(os.isatty(0), os.isatty(1), os.isatty(2),"
            " tuple(os.get_terminal_size(2))); sys.stderr.write('on-the-screen\\n')")
    script = f"{wrapper}\nr {shlex.quote(sys.executable)} -c {shlex.quote(code)} > out; cat out"
    with session(["bash", "-c", script], tmp_path) as s:
        assert s.wait() == 0
    assert b"on-the-screen\r\nTrue False True (80, 24)\r\n" in s.screen


@BOTH
def test_resize_reaches_a_program_with_stdin_piped(wrapper: str, tmp_path: Path) -> None:
    # the handler only notes the signal: printing from it raced the main code's own print
    # ("reentrant call inside BufferedWriter", once stdout is buffered: PYTHONUNBUFFERED
    # unset, as in a user's shell)
    code = ("import os, signal, sys, time\n"
            "got = []\nsignal.signal(signal.SIGWINCH, lambda *_: got.append(1))\n"
            "print('re' + 'ady', flush=True)\n"
            "end = time.monotonic() + 30\n"
            "while not got and time.monotonic() < end:\n time.sleep(0.02)\n"
            "time.sleep(0.3)\n"
            "print('size', tuple(os.get_terminal_size(1)), flush=True)\n"
            "sys.exit(0 if got else 1)\n")
    script = f"{wrapper}\necho x | r {shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    with session(["bash", "-c", script], tmp_path) as s:
        s.read_until(b"ready")
        fcntl.ioctl(s.master, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        status = s.wait()
        assert status == 0, s.screen.decode(errors="replace")[-2000:]  # (what it printed)
    assert b"size (100, 30)" in s.screen


@BOTH
def test_keys_typed_ahead_go_to_the_shell(wrapper: str, tmp_path: Path) -> None:
    """Typing the next command while one runs (and never reads them): the shell gets it."""
    with session(interactive(wrapper, tmp_path), tmp_path) as s:
        s.read_until(PROMPT)
        s.type(b"r sleep 2\n")
        s.wait_for(running(s, "sleep", wrapper), "sleep to run")
        s.type(b"echo typed-$((6*7))\n")
        s.read_until(b"typed-42")
        s.type(b"exit\n")
        s.wait()
