"""Choosing a run: flags, the interactive chooser through a real pty, no-terminal errors."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import struct
import subprocess
import termios
import time
from collections.abc import Iterator, Sequence

import pytest

from rage.errors import DeclinedError, NotFoundError, UsageError
from rage.record.history import Run, RunStore
from rage.report.select import candidates, prompt_for_run, resolve_flags
from tests.conftest import rage_cmd, run_rage


def record(
    app: str,
    argv: Sequence[str],
    exit_code: int | None = 0,
    *,
    signal: int | None = None,
    output: bytes | None = None,
    files: dict[str, bytes] | None = None,
    extra: dict[str, object] | None = None,
) -> Run:
    """A finished run in the store, written through RunStore itself.

    The wrapper (`rage run`) is another helper's module; recording through RunStore keeps
    these tests independent of it, with the same on-disk result.
    """
    active = RunStore().start(app, argv, recorder="wrapper", extra=extra)
    if output is not None:
        active.path("output.log").write_bytes(output)
    for name, data in (files or {}).items():
        p = active.path(name)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    run = active.finish(exit_code=exit_code, signal=signal)
    time.sleep(0.002)  # distinct started_at ordering
    return run


class Pty:
    """A child process on a real pseudo-terminal, driven like a user would."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                     env=env, start_new_session=True, close_fds=True)
        os.close(slave)
        self.seen = b""

    def expect(self, text: str, timeout: float = 30.0) -> str:
        """Read until ``text`` has appeared since the last expect; return what was read."""
        want = text.encode()
        deadline = time.monotonic() + timeout
        while want not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {text!r}; saw {self.seen!r}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"EOF waiting for {text!r}; saw {self.seen!r}")
                self.seen += chunk
        idx = self.seen.index(want) + len(want)
        got, self.seen = self.seen[:idx], self.seen[idx:]
        return got.decode("utf-8", "replace")

    def send(self, line: str) -> None:
        os.write(self.master, line.encode())

    def _drain(self, quiet: float) -> None:
        with contextlib.suppress(OSError):  # EIO once the child closed the terminal
            while select.select([self.master], [], [], quiet)[0]:
                chunk = os.read(self.master, 65536)
                if not chunk:
                    break
                self.seen += chunk

    def wait(self, timeout: float = 60.0) -> int:
        """The exit status, with everything the child wrote read, also what it wrote last
        (a slow child's last words must not be lost to the wait)."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            self._drain(0.05)
            if time.monotonic() > deadline:
                return self.proc.wait(timeout=0.1)  # raises TimeoutExpired
        self._drain(0.2)
        return self.proc.returncode

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        os.close(self.master)


@contextlib.contextmanager
def pty_rage(*args: str, env: dict[str, str] | None = None) -> Iterator[Pty]:
    full = {**os.environ, "PAGER": "cat", "TERM": "dumb", "COLUMNS": "120", **(env or {})}
    p = Pty(rage_cmd(*args), env=full)
    try:
        yield p
    finally:
        p.close()


# -- resolving from flags --------------------------------------------------------------------

def test_flags_pick_the_right_run() -> None:
    store = RunStore()
    failed = record("demo", ["demo", "a"], 1)
    ok = record("demo", ["demo", "b"], 0)
    record("demo", ["demo", "rage"], 0, extra={"report_command": True})
    assert resolve_flags(store, "demo", None, last=True, last_failed=False) == ok
    assert resolve_flags(store, "demo", None, last=False, last_failed=True) == failed
    assert resolve_flags(store, "demo", failed.short_id, last=False, last_failed=False) == failed
    assert resolve_flags(store, "demo", "last-failed", last=False, last_failed=False) == failed
    assert resolve_flags(store, "demo", None, last=False, last_failed=False) is None
    with pytest.raises(UsageError):
        resolve_flags(store, "demo", "abc", last=True, last_failed=False)


def test_nothing_recorded_is_not_found_with_a_hint() -> None:
    with pytest.raises(NotFoundError) as e:
        resolve_flags(RunStore(), "demo", None, last=True, last_failed=False)
    assert e.value.hint and "rage run" in e.value.hint
    record("demo", ["demo"], 0)
    with pytest.raises(NotFoundError, match="no failed run"):
        resolve_flags(RunStore(), "demo", None, last=False, last_failed=True)


def test_candidates_leave_out_report_commands_and_our_own_live_run() -> None:
    record("demo", ["demo", "old"], 1)
    record("demo", ["demo", "rage"], 0, extra={"report_command": True})
    live = RunStore().start("demo", ["demo", "live"], recorder="python")  # pid = ours
    try:
        other = RunStore().start("demo", ["demo", "other"], recorder="python", pid=1)
        try:
            names = [r.argv[1] for r in candidates(RunStore(), "demo")]
        finally:
            other.release()
    finally:
        live.release()
    assert names == ["other", "old"]


def test_prompt_reasks_until_valid() -> None:
    runs = [record("demo", ["demo", str(i)], i) for i in range(3)]
    answers = iter(["", "x", "0", "4", " 2 "])
    said: list[str] = []
    chosen = prompt_for_run(runs, ["r1", "r2", "r3"], lambda q: next(answers), said.append)
    assert chosen == runs[1]
    assert said.count("pick a number 1-3, a run id, or q to quit") == 4
    with pytest.raises(DeclinedError):
        prompt_for_run(runs, ["a", "b", "c"], lambda q: None, said.append)
    with pytest.raises(DeclinedError):
        prompt_for_run(runs, ["a", "b", "c"], lambda q: "q", said.append)


# -- through the real CLI ----------------------------------------------------------------------

def test_no_terminal_and_no_selector_is_a_usage_error_fast() -> None:
    record("demo", ["demo"], 1)
    # stdin a pipe that stays open and silent: waiting on it would hang until the timeout
    read_end, write_end = os.pipe()
    try:
        proc = run_rage("report", "--app", "demo", timeout=20, stdin=read_end)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert proc.returncode == 2, proc.stderr
    assert "--last" in proc.stderr and "Traceback" not in proc.stderr


def test_nothing_recorded_exit_3() -> None:
    proc = run_rage("report", "--last", "--app", "demo")
    assert proc.returncode == 3
    assert "rage run -- CMD" in proc.stderr


def test_chooser_on_a_pty_reasks_and_quits() -> None:
    record("demo", ["demo", "first-run"], 0)
    record("demo", ["demo", "second-run"], 3)
    record("demo", ["demo", "rage"], 0, extra={"report_command": True})
    with pty_rage("report", "--app", "demo", "--no-collect") as p:
        listing = p.expect("q to quit]")
        assert "second-run" in listing and "first-run" in listing
        assert "demo rage" not in listing
        # newest first, the failed one marked with "!"
        assert listing.index("second-run") < listing.index("first-run")
        assert "  1) ! " in listing
        p.send("seven\n")
        p.expect("pick a number 1-2, a run id, or q to quit")
        p.send("3\n")
        p.expect("pick a number 1-2, a run id, or q to quit")
        p.send("q\n")
        assert p.wait() == 5
