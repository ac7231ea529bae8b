"""`rage run` on a terminal: the wrapper runs on a real pty we open, and gives its child
another one."""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from tests.conftest import rage_cmd, run_rage


def set_size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Terminal:
    """The user's side: a pty master we type into and read the screen from."""

    def __init__(self, proc: subprocess.Popen[bytes], master: int, slave: int,
                 before: list[Any] | None = None) -> None:
        self.proc = proc
        self.master = master
        self.slave = slave
        # the terminal's modes before rage started (it makes them raw): read before the spawn
        self.before = termios.tcgetattr(slave) if before is None else before
        self.seen = b""

    def read_until(self, needle: bytes, timeout: float = 20) -> bytes:
        deadline = time.monotonic() + timeout
        while needle not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"timed out waiting for {needle!r}; saw {self.seen!r}"
            r, _, _ = select.select([self.master], [], [], left)
            if r:
                try:
                    data = os.read(self.master, 65536)
                except OSError:
                    data = b""
                assert data, f"terminal closed before {needle!r}; saw {self.seen!r}"
                self.seen += data
        return self.seen

    def finish(self, timeout: float = 20) -> int:
        """Wait for the wrapper, reading the screen until it exits; return its status."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            assert time.monotonic() < deadline, f"wrapper did not exit; saw {self.seen!r}"
            r, _, _ = select.select([self.master], [], [], 0.05)
            if r:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:
                    break
        # whatever is left in the pty buffer
        while select.select([self.master], [], [], 0.05)[0]:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                break
            if not data:
                break
            self.seen += data
        return self.proc.wait(timeout=timeout)


@contextmanager
def terminal(*argv: str, rows: int = 24, cols: int = 80,
             env: dict[str, str] | None = None) -> Iterator[Terminal]:
    master, slave = os.openpty()
    set_size(master, rows, cols)
    before = termios.tcgetattr(slave)
    proc = subprocess.Popen(rage_cmd("run", *argv), stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True, env=env)
    term = Terminal(proc, master, slave, before)
    try:
        yield term
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        os.close(master)
        os.close(slave)


def only_run(app: str) -> dict[str, object]:
    proc = run_rage("list", "--json", "--app", app)
    runs: list[dict[str, object]] = json.loads(proc.stdout)["runs"]
    assert len(runs) == 1, runs
    return runs[0]


CHILD_TTY = (
    "import os, sys\n"
    "print('tty', os.isatty(0), os.isatty(1), os.isatty(2), os.get_terminal_size(1))\n"
    "sys.stderr.write('to-stderr\\n')\n"
    "sys.stdout.write('\\x1b[31mred\\x1b[0m\\n')\n"
)


def test_child_gets_a_terminal_on_all_streams_and_the_session_is_recorded() -> None:
    with terminal("--app", "ttyapp", "--", sys.executable, "-c", CHILD_TTY,
                  rows=33, cols=101) as term:
        assert term.finish() == 0
        after = termios.tcgetattr(term.slave)
    assert b"tty True True True os.terminal_size(columns=101, lines=33)\r\n" in term.seen
    assert b"to-stderr\r\n\x1b[31mred\x1b[0m\r\n" in term.seen
    # raw mode was undone (the modes read before rage started: read after, under load, they
    # could already be raw)
    assert term.before == after
    run = only_run("ttyapp")
    assert run["mode"] == "pty"
    log = (Path(str(run["dir"])) / "output.log").read_bytes()
    assert log == term.seen
    assert not (Path(str(run["dir"])) / "stdout.log").exists()


CHILD_INPUT = (
    "import os, signal, sys, time\n"
    "hits = []\n"
    "signal.signal(signal.SIGINT, lambda n, f: hits.append(n))\n"
    "line = sys.stdin.readline()\n"
    "print('got', repr(line), flush=True)\n"
    "deadline = time.monotonic() + 20\n"
    "while not hits and time.monotonic() < deadline:\n"
    "    time.sleep(0.01)\n"
    "time.sleep(0.3)  # a second, duplicated SIGINT would arrive in this window\n"
    "print('ints', len(hits), flush=True)\n"
)


def test_keys_reach_the_child_and_ctrl_c_is_delivered_once() -> None:
    with terminal("--app", "keys", "--", sys.executable, "-c", CHILD_INPUT) as term:
        time.sleep(0.2)
        os.write(term.master, b"hello\xc3\xa9\r")
        term.read_until("got 'helloé\\n'".encode())
        os.write(term.master, b"\x03")  # ^C typed at the user's (raw) terminal
        term.read_until(b"ints ")
        assert term.finish() == 0
    assert b"ints 1\r\n" in term.seen


CHILD_WINCH = (
    "import os, signal, sys, time\n"
    "got = []\n"
    "signal.signal(signal.SIGWINCH, lambda n, f: got.append(os.get_terminal_size(1)))\n"
    "print('ready', os.get_terminal_size(1), flush=True)\n"
    "deadline = time.monotonic() + 20\n"
    "while not got and time.monotonic() < deadline:\n"
    "    time.sleep(0.01)\n"
    "print('resized', got, flush=True)\n"
)


def test_window_resize_reaches_the_child() -> None:
    with terminal("--", sys.executable, "-c", CHILD_WINCH, rows=24, cols=80) as term:
        term.read_until(b"ready os.terminal_size(columns=80, lines=24)")
        set_size(term.master, 50, 132)
        # our wrapper is not the pty's foreground job, so send the resize signal ourselves
        os.kill(term.proc.pid, signal.SIGWINCH)
        term.read_until(b"resized")
        assert term.finish() == 0
    assert b"resized [os.terminal_size(columns=132, lines=50)]" in term.seen


def test_term_to_wrapper_reaches_child_and_terminal_is_restored(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    child = ("import signal, sys, time\n"
             "signal.signal(signal.SIGTERM, lambda n, f: (print('bye'), sys.exit(3)))\n"
             f"open({str(ready)!r}, 'w').close()\n"
             "time.sleep(30)\n")
    with terminal("--app", "termed", "--", sys.executable, "-c", child) as term:
        deadline = time.monotonic() + 20
        while not ready.exists():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        term.proc.send_signal(signal.SIGTERM)
        assert term.finish() == 3
        assert termios.tcgetattr(term.slave) == term.before
    assert b"bye\r\n" in term.seen
    assert only_run("termed")["exit_code"] == 3


def test_crash_on_a_terminal_prints_the_hint_after_restoring() -> None:
    with terminal("--app", "segv", "--", "sh", "-c", "kill -SEGV $$") as term:
        assert term.finish() == -signal.SIGSEGV, term.seen
    run = only_run("segv")
    short = str(run["id"]).rsplit("-", 1)[-1].encode()
    assert b"rage: segv crashed (SIGSEGV); to report it: rage report " + short + b"\r\n" \
        in term.seen
    assert run["status"] == "crashed"


def test_piped_stdin_with_terminal_stdout(tmp_path: Path) -> None:
    # stdin stays the user's pipe (EOF works); stdout/stderr are the child's terminal
    master, slave = os.openpty()
    code = "import os,sys; d=sys.stdin.buffer.read(); print(os.isatty(0), os.isatty(1), d)"
    proc = subprocess.Popen(rage_cmd("run", "--", sys.executable, "-c", code),
                            stdin=subprocess.PIPE, stdout=slave, stderr=slave,
                            start_new_session=True)
    term = Terminal(proc, master, slave)
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"\x00\xffpiped")
        proc.stdin.close()
        assert term.finish() == 0
    finally:
        os.close(master)
        os.close(slave)
    # one newline translation only: the user's terminal does it, not the child's too
    assert term.seen == b"False True b'\\x00\\xffpiped'\r\n"


def test_child_terminal_has_the_users_modes_and_size() -> None:
    # what the child sees is a copy of the user's terminal as it was before going raw
    code = "import termios; print(termios.tcgetattr(0))"
    # a fresh pty has the modes the user's had before rage made it raw (read now: the
    # wrapper's own may already be raw by the time we look)
    fresh_master, fresh_slave = os.openpty()
    users = termios.tcgetattr(fresh_slave)
    os.close(fresh_master)
    os.close(fresh_slave)
    with terminal("--", sys.executable, "-c", code, rows=40, cols=120) as term:
        assert term.finish() == 0
    assert term.seen.strip().decode() == str(users)


def bulk(seed: int, size: int) -> bytes:
    """Every byte value, newlines included, in a reproducible order."""
    import random

    return random.Random(seed).randbytes(size)


def test_bulk_output_reaches_the_terminal_exactly_and_is_recorded_as_seen(
        tmp_path: Path) -> None:
    data = bulk(1, 3 << 20)
    src = tmp_path / "data.bin"
    src.write_bytes(data)
    with terminal("--app", "bulk", "--", "cat", str(src)) as term:
        assert term.finish(timeout=60) == 0
    # the child's terminal does the output processing (ONLCR) once; the user's is raw
    assert term.seen == data.replace(b"\n", b"\r\n")
    run = only_run("bulk")
    assert (Path(str(run["dir"])) / "output.log").read_bytes() == term.seen


def test_stderr_pipe_and_terminal_stdout_both_flow_in_volume(tmp_path: Path) -> None:
    # stdout is a terminal, stderr a file: the wrapper reads a pty and a pipe at once
    out, err = bulk(2, 1 << 20), bulk(3, 1 << 20)
    (tmp_path / "out.bin").write_bytes(out)
    (tmp_path / "err.bin").write_bytes(err)
    code = ("import os, sys\n"
            f"out = open({str(tmp_path / 'out.bin')!r}, 'rb').read()\n"
            f"err = open({str(tmp_path / 'err.bin')!r}, 'rb').read()\n"
            "for i in range(0, len(out), 50000):\n"
            "    os.write(2, err[i:i + 50000])\n"  # both sides block in turn: a wrapper
            "    sys.stdout.buffer.write(out[i:i + 50000])\n"  # stuck on one would hang
            "    sys.stdout.flush()\n")
    master, slave = os.openpty()
    with open(tmp_path / "stderr.txt", "wb") as err_file:
        proc = subprocess.Popen(rage_cmd("run", "--app", "both", "--", sys.executable, "-c",
                                         code),
                                stdin=slave, stdout=slave, stderr=err_file,
                                start_new_session=True)
    term = Terminal(proc, master, slave)
    try:
        assert term.finish(timeout=60) == 0
    finally:
        os.close(master)
        os.close(slave)
    assert term.seen == out.replace(b"\n", b"\r\n")
    assert (tmp_path / "stderr.txt").read_bytes() == err
    run_dir = Path(str(only_run("both")["dir"]))
    assert (run_dir / "stderr.log").read_bytes() == err


CHILD_FLOOD = (
    "import os, sys, threading\n"
    "def flood():\n"
    "    chunk = b'y' * 4095 + b'\\n'\n"
    "    while True:\n"
    "        os.write(1, chunk)\n"
    "threading.Thread(target=flood, daemon=True).start()\n"
    "line = sys.stdin.readline()\n"
    "os.write(1, b'\\ngot %r\\n' % line.encode())\n"
    "os._exit(0)\n"
)


def test_keys_reach_a_child_that_floods_the_terminal() -> None:
    # the relay reads the child's output in bursts; typed keys must still get through
    with terminal("--", sys.executable, "-c", CHILD_FLOOD) as term:
        # everything seen since typing: the flood thread's last chunk may land after the
        # reply, so the reply is not necessarily at the very end
        since, total, typed = b"", 0, False
        deadline = time.monotonic() + 30
        while b"got b'stop\\n'" not in since:
            assert time.monotonic() < deadline, f"keys never arrived; {total} bytes seen"
            if select.select([term.master], [], [], 0.5)[0]:
                try:
                    data = os.read(term.master, 65536)
                except OSError:
                    break
                total += len(data)
                if typed:
                    since += data
            if not typed and total > 1 << 20:  # the flood is on
                os.write(term.master, b"stop\r")
                typed = True
        assert b"got b'stop\\n'" in since
        assert term.finish() == 0


def _proc_state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def _wait_for(pred: object, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not pred():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_job_control_ctrl_z_and_fg_in_an_interactive_shell() -> None:
    """^Z stops the wrapped command and the wrapper, `fg` resumes both, ^C ends the run."""
    import pty
    import shlex

    from rage.record.history import RunStore

    cmd = shlex.join(rage_cmd("run", "--app", "jobs", "--", "sleep", "30"))
    env = {**os.environ, "PS1": "PROMPT$ ", "TERM": "xterm"}
    pid, master = pty.fork()
    if pid == 0:  # the child: an interactive shell with this pty as its controlling terminal
        os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], env)
    set_size(master, 24, 80)
    screen = bytearray()

    def read_until(needle: bytes, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while needle not in screen:
            left = deadline - time.monotonic()
            assert left > 0, f"timed out waiting for {needle!r}; saw {bytes(screen)!r}"
            if select.select([master], [], [], left)[0]:
                screen.extend(os.read(master, 65536))

    try:
        read_until(b"PROMPT$ ")
        os.write(master, cmd.encode() + b"\n")
        store = RunStore()

        def running() -> bool:
            runs = store.list("jobs").runs
            return bool(runs) and runs[0].status == "running"

        _wait_for(running, "the run to start")
        child = store.list("jobs").runs[0].pid
        assert child is not None
        _wait_for(lambda: _proc_state(child) == "S", "sleep to be running")
        os.write(master, b"\x1a")  # ^Z
        read_until(b"Stopped")
        _wait_for(lambda: _proc_state(child) == "T", "sleep to be stopped")
        assert store.list("jobs").runs[0].status == "running"  # stopped, not ended
        os.write(master, b"fg\n")
        _wait_for(lambda: _proc_state(child) == "S", "sleep to run again")
        os.write(master, b"\x03")  # ^C
        _wait_for(lambda: store.list("jobs").runs[0].status != "running", "the run to end")
        run = store.list("jobs").runs[0]
        assert run.status == "interrupted" and run.signal == signal.SIGINT
        os.write(master, b"echo after-$((40+2))\n")
        read_until(b"after-42")  # the shell's terminal works normally again
        os.write(master, b"exit\n")
    finally:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(master)


# The record is built while the command's session leader starts it (job control), and put
# in place once the leader has said the command's pid: these hold on an app's later runs,
# where that overlap happens (its first run creates the history's directories afterwards).

CHILD_SAYS = (
    "import os, time\n"
    "print('pid', os.getpid(), 'at', time.time_ns(), flush=True)\n"
)


def _history(rage_home: Path, app: str) -> list[str]:
    runs = rage_home / app / "runs"
    return sorted(p.name for p in runs.iterdir()) if runs.exists() else []


def test_a_later_run_on_a_terminal_records_the_commands_pid_and_start(
        rage_home: Path) -> None:
    for n in range(2):
        with terminal("--app", "again", "--", sys.executable, "-c", CHILD_SAYS) as term:
            term.read_until(b"\r\n")
            assert term.finish() == 0
            wrapper_pid = term.proc.pid
        words = term.seen.split(b"\r\n")[0].split()
        pid, at_ns = int(words[1]), int(words[3])
        proc = run_rage("list", "--json", "--app", "again")
        runs = json.loads(proc.stdout)["runs"]
        assert len(runs) == n + 1
        run = runs[0]  # the newest
        assert run["pid"] == pid and run["wrapper_pid"] == wrapper_pid
        assert run["status"] == "ok" and run["mode"] == "pty"
        # dated from the spawn: before the command's own clock reading
        started = run["started_at"]
        secs = time.mktime(time.strptime(started[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        started_ns = int(secs) * 10**9 + int(started[20:26]) * 1000
        assert started_ns <= at_ns < started_ns + 20 * 10**9
        run_dir = Path(str(run["dir"]))
        assert (run_dir / "output.log").read_bytes() == term.seen
        assert (run_dir / "environ.json").exists()
        assert json.loads((run_dir / "meta.json").read_text())["pid"] == pid
    assert not [n for n in _history(rage_home, "again") if n.startswith(".")]


def test_exec_failure_on_a_terminal_records_the_failure(rage_home: Path,
                                                        tmp_path: Path) -> None:
    # exec fails in the session leader (its interpreter is missing), after the wrapper has
    # begun the record of an app with history: that record is dropped, and the failure to
    # start recorded instead (127, with the line the user saw)
    script = tmp_path / "broken"
    script.write_text("#!/no/such/interpreter\necho never\n")
    script.chmod(0o755)
    with terminal("--app", "broken", "--", "true") as term:
        assert term.finish() == 0
    first = _history(rage_home, "broken")
    assert len(first) == 1
    for app in ("broken", "fresh"):
        with terminal("--app", app, "--", str(script)) as term:
            assert term.finish() == 127
        assert term.seen == f"rage: {script}: No such file or directory\r\n".encode()
    later = [r for r in _history(rage_home, "broken") if r not in first]
    assert len(_history(rage_home, "broken")) == 2 and len(later) == 1
    meta = json.loads((rage_home / "broken" / "runs" / later[0] / "meta.json").read_text())
    assert (meta["status"], meta["exit_code"]) == ("failed", 127)
    assert meta["error"] == f"{script}: No such file or directory"
    assert len(_history(rage_home, "fresh")) == 1


def test_history_failing_midway_on_a_terminal_is_said_once_and_the_run_is_lost(
        rage_home: Path) -> None:
    # meta.json fits under the file size limit (ulimit -f: 512-byte blocks), environ.json
    # does not: the run is kept, unlocked (lost), as when the environment was written after
    # meta.json
    import shlex

    with terminal("--app", "midway", "--", "true") as term:
        assert term.finish() == 0
    master, slave = os.openpty()
    env = {**os.environ, "BIG": "x" * 20000}
    argv = shlex.join(rage_cmd("run", "--app", "midway", "--", sys.executable, "-c",
                               "print('ran')"))
    proc = subprocess.Popen(["sh", "-c", f"ulimit -f 8 && exec {argv}"], stdin=slave,
                            stdout=slave, stderr=slave, start_new_session=True, env=env)
    term = Terminal(proc, master, slave)
    try:
        assert term.finish() == 0
    finally:
        os.close(master)
        os.close(slave)
    assert term.seen.count(b"ran\r\n") == 1
    assert term.seen.count(b"rage: warning: not recording this run: File too large") == 1
    proc_list = run_rage("list", "--json", "--app", "midway")
    runs = json.loads(proc_list.stdout)["runs"]
    assert [r["status"] for r in runs] == ["lost", "ok"]
    assert runs[0]["pid"] != runs[1]["pid"]
    assert not [n for n in _history(rage_home, "midway") if n.startswith(".")]


LEADER = """
import os, sys
from rage.record.session import read_result, start
assert "resource" not in sys.modules
master, slave = os.openpty()
name = os.ttyname(slave)
actions = [(os.POSIX_SPAWN_OPEN, 0, name, os.O_RDWR | os.O_NOCTTY, 0),
           (os.POSIX_SPAWN_DUP2, 0, 1), (os.POSIX_SPAWN_DUP2, 0, 2)]
leader, pid, status_fd = start("/bin/true", ["true"], name, actions, sigmask=set(),
                               sigdef=[], close=(master,))
# the leader's os.wait4 needs resource: loaded here, before the fork, its pages are shared
print("resource" in sys.modules, flush=True)
os.waitpid(leader, 0)
status, usage, _keys = read_result(status_fd)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss > 0, flush=True)
# the leader's own peak (the command's ru_maxrss counts it in) from getrusage: not read
# from /proc/self/status by rage.record.peakrss, whose text and objects cost it ~0.12 ms
print(usage.spawner_maxrss is not None and 1000 < usage.spawner_maxrss < 10**6,
      "rage.record.peakrss" in sys.modules, flush=True)
"""


def test_the_session_leader_imports_nothing_after_its_fork() -> None:
    # every page an import writes in the forked leader is a copy of the wrapper's heap
    proc = subprocess.run([sys.executable, "-c", LEADER], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "0", "True", "True", "False"]


ENV_DIGEST = ("import hashlib, os\n"
              "items = sorted(os.environb.items())\n"
              "print(len(items), hashlib.sha256(repr(items).encode()).hexdigest())\n")


def test_the_command_gets_the_environment_byte_for_byte() -> None:
    # rage hands posix_spawn the bytes it holds (os.environb), on pipes and from the
    # session leader: a value that is not UTF-8 arrives as it was given
    import hashlib

    env = {**os.environ, "ODD_BYTES_VALUE": "caf\udce9 \udcff", "EMPTY_VALUE": ""}
    items = sorted((k.encode("utf-8", "surrogateescape"), v.encode("utf-8", "surrogateescape"))
                   for k, v in env.items())
    want = f"{len(items)} {hashlib.sha256(repr(items).encode()).hexdigest()}"
    piped = subprocess.run(rage_cmd("run", "--", sys.executable, "-c", ENV_DIGEST), env=env,
                           capture_output=True, stdin=subprocess.DEVNULL, timeout=60,
                           check=False)
    assert piped.returncode == 0 and piped.stdout.decode().strip() == want, piped.stderr
    with terminal("--", sys.executable, "-c", ENV_DIGEST, env=env) as term:
        assert term.finish() == 0
    assert want.encode() + b"\r\n" in term.seen
