"""Background jobs of an interactive shell on a real pseudo-terminal (job control, SIGTTIN
and SIGTTOU are the kernel's): rage must never be stopped for reading the terminal or
changing its modes when the user did not ask it to, and a command that reads the terminal
in the background stops as it would without rage. Each case runs with a plain
`r() { "$@"; }` and with `r` going through `rage run`; bash, sleep, head, a real shim."""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from rage.record.shims import render
from tests.conftest import rage_cmd
from tests.test_fidelity_terminal import (
    BOTH,
    PLAIN,
    PROMPT,
    Session,
    descendants,
    interactive,
    session,
    stopped,
)


def _no_stopped_job(s: Session, start: int = 0) -> None:
    """No job was reported stopped since ``start``, and no process is stopped now."""
    assert b"Stopped" not in s.screen[start:], bytes(s.screen)
    assert not any(st == "T" for _c, st in descendants(s.pid).values()), s.processes()


def waiting(s: Session, wrapper: str) -> Callable[[], bool]:
    """The command (python, waiting for the file "go") runs in the foreground: under rage,
    its own python below rage's, and the keys go raw to it."""
    def pred() -> bool:
        pythons = [st for c, st in descendants(s.pid).values() if c.startswith("python")]
        enough = len(pythons) >= (1 if wrapper == PLAIN else 2)
        return enough and all(st in "RS" for st in pythons) and (
            wrapper == PLAIN or s.raw())
    return pred


def _wait_all(s: Session, mark: str) -> None:
    """`wait` for every background job, then print its status after ``mark``."""
    at = len(s.screen)
    s.type(f"wait; echo {mark}-$?\n".encode())
    s.read_until(f"{mark}-0".encode(), start=at)


@BOTH
def test_background_command_runs_to_the_end(wrapper: str, tmp_path: Path) -> None:
    """`r CMD &` that never reads its terminal ends: neither rage's raw mode (SIGTTOU) nor
    its key relay (SIGTTIN) stops the job, and its output reaches the screen."""
    with session(interactive(wrapper, tmp_path), tmp_path) as s:
        s.read_until(PROMPT)
        s.type(b"r true &\n")
        s.type(b"r sh -c 'sleep 0.5; echo bg-$((6*7))' &\n")
        s.read_until(b"bg-42")
        _wait_all(s, "waited")
        _no_stopped_job(s)
        s.type(b"exit\n")
        s.wait()


@BOTH
def test_typing_at_the_shell_while_a_job_runs_in_the_background(wrapper: str,
                                                                tmp_path: Path) -> None:
    """^Z then `bg`: the keys typed next are the shell's; the job is not stopped by them
    (rage holds its key relay back in the background), and after `fg` the command reads
    the keys typed then."""
    # one process (python), which reads its terminal only once the test says so ("go")
    code = ("import os, sys, time\n"
            "while not os.path.exists('go'):\n    time.sleep(0.05)\n"
            "print('got', sys.stdin.readline().strip())\n")
    with session(interactive(wrapper, tmp_path), tmp_path) as s:
        s.read_until(PROMPT)
        s.type(f"r {shlex.quote(sys.executable)} -c {shlex.quote(code)}\n".encode())
        s.wait_for(waiting(s, wrapper), "the command to run")
        s.type(b"\x1a")
        s.read_until(b"Stopped")
        s.wait_for(lambda: all(st == "T" for _c, st in descendants(s.pid).values()
                               if _c != "bash"), "the command stopped")
        s.type(b"bg\n")
        s.wait_for(lambda: not any(st == "T" for _c, st in descendants(s.pid).values()),
                   "the job to run in the background")
        at = len(s.screen)
        s.type(b"echo typed-$((6*7))\n")
        s.read_until(b"typed-42", start=at)
        s.type(b"jobs; echo listed-$((1+1))\n")
        s.read_until(b"listed-2", start=at)
        _no_stopped_job(s, at)
        s.type(b"fg\n")
        s.wait_for(waiting(s, wrapper), "the command in the foreground")
        (tmp_path / "go").touch()
        s.type(b"hello\n")
        s.read_until(b"got hello")
        s.type(b"exit\n")
        s.wait()


@BOTH
def test_fg_with_no_key_typed_in_the_background(wrapper: str, tmp_path: Path) -> None:
    """^Z, then `bg` and `fg` on one line: the shell reads the whole line while the job is
    stopped, so no key arrives while it runs in the background, and `fg` of a running job
    sends no SIGCONT. rage must still learn from its SIGCONT that it runs in the background
    (it used to learn it only from a key it saw there, which the shell can read first on a
    busy machine) and take the terminal back once in the foreground."""
    code = ("import os, sys, time\n"
            "while not os.path.exists('go'):\n    time.sleep(0.05)\n"
            "print('got', sys.stdin.readline().strip())\n")
    with session(interactive(wrapper, tmp_path), tmp_path) as s:
        s.read_until(PROMPT)
        s.type(f"r {shlex.quote(sys.executable)} -c {shlex.quote(code)}\n".encode())
        s.wait_for(waiting(s, wrapper), "the command to run")
        s.type(b"\x1a")
        s.read_until(b"Stopped")
        s.wait_for(lambda: all(st == "T" for _c, st in descendants(s.pid).values()
                               if _c != "bash"), "the command stopped")
        s.type(b"bg; sleep 0.5; fg\n")
        s.wait_for(waiting(s, wrapper), "the command in the foreground", timeout=20)
        (tmp_path / "go").touch()
        s.type(b"hello\n")
        s.read_until(b"got hello")
        s.type(b"exit\n")
        s.wait()


@BOTH
def test_a_background_command_reading_the_terminal_stops_until_fg(
        wrapper: str, tmp_path: Path) -> None:
    """The command itself reads the terminal in the background: its job stops with
    SIGTTIN as without rage, and `fg` hands it the keys typed then."""
    with session(interactive(wrapper, tmp_path), tmp_path) as s:
        s.read_until(PROMPT)
        s.type(b"r head -n 1 &\n")
        # head stops first; under rage the job bash sees is rage, which follows it (its
        # leader, then the wrapper): `jobs` is asked once all of them are stopped
        s.wait_for(lambda: stopped(s, "head")() and all(
            st == "T" for c, st in descendants(s.pid).values() if c.startswith("python")),
            "the job stopped")
        at = len(s.screen)
        s.type(b"jobs -l; echo listed-$((1+1))\n")
        s.read_until(b"listed-2", start=at)
        assert re.search(rb"Stopped \(tty input\)\s+r head -n 1", s.screen[at:]), s.screen
        s.type(b"fg\n")
        # (it reads the user's terminal itself, which rage leaves as it is: not raw)
        s.wait_for(lambda: any(c == "head" and st in "RS"
                               for c, st in descendants(s.pid).values()), "head to read")
        s.type(b"line-for-head\n")
        s.read_until(b"line-for-head\r\nline-for-head")  # echoed, then printed by head
        s.type(b"exit\n")
        s.wait()


def test_a_shim_in_the_background_runs_to_the_end(tmp_path: Path) -> None:
    """The real shim script of a program, started with `&` in an interactive shell, ends
    and records its run; its output reaches the screen."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "sleep"
    shim.write_text(render("sleep"))
    shim.chmod(0o700)
    rc = tmp_path / "rc"
    rc.write_text(f"PS1='PROMPT$ '\nPATH={shlex.quote(str(bin_dir))}:$PATH\n")
    with session(["bash", "--noprofile", "--rcfile", str(rc), "-i"], tmp_path) as s:
        s.read_until(PROMPT)
        s.type(b"sleep 0.3 && echo slept-$((6*7)) &\n")
        s.read_until(b"slept-42")
        _wait_all(s, "waited")
        _no_stopped_job(s)
        s.type(b"exit\n")
        s.wait()
    home = Path(os.environ["RAGE_HOME"])
    metas = list((home / "sleep" / "runs").glob("*/meta.json"))
    assert len(metas) == 1 and b'"status": "ok"' in metas[0].read_bytes()


def test_rage_report_in_the_background_asks_nothing(tmp_path: Path) -> None:
    """`rage report &` does not wait for answers on a terminal it is not in the foreground
    of: without a selector it fails at once naming the flags (as without a terminal); with
    one it writes the bundle without asking for a note."""
    rage = shlex.join(rage_cmd())
    with session(interactive('r() { "$@"; }', tmp_path), tmp_path) as s:
        s.read_until(PROMPT)
        s.type(f"{rage} run -- true; {rage} report &\n".encode())
        s.read_until(b"--last")
        _wait_all(s, "first")  # `wait` itself says 0; the job must have ended, not stopped
        at = len(s.screen)
        s.type(f"{rage} report --last --output {shlex.quote(str(tmp_path))}/ &\n".encode())
        s.read_until(b"bundle written", start=at)
        _wait_all(s, "second")
        _no_stopped_job(s)
        s.type(b"exit\n")
        s.wait()
    assert len(list(tmp_path.glob("*.tar.zst"))) == 1
