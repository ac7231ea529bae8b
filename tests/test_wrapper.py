"""`rage run` in pipe mode: real subprocesses, real signals, real files."""

from __future__ import annotations

import json
import os
import shlex
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rage.record.history import RunStore
from tests.conftest import rage_cmd, run_rage


def runs(app: str) -> list[dict[str, object]]:
    proc = run_rage("list", "--json", "--app", app, "--limit", "1000")
    assert proc.returncode == 0, proc.stderr
    data: list[dict[str, object]] = json.loads(proc.stdout)["runs"]
    return data


def only_run(app: str) -> dict[str, object]:
    found = runs(app)
    assert len(found) == 1, found
    return found[0]


def wrap(*argv: str, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("timeout", 60)
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(rage_cmd("run", *argv), check=False, **kwargs)  # type: ignore[call-overload,no-any-return]


@pytest.mark.parametrize("code", [0, 1, 42, 255])
def test_exit_status_is_the_childs(code: int) -> None:
    proc = wrap("--", "sh", "-c", f"exit {code}")
    assert proc.returncode == code
    assert proc.stdout == b"" and proc.stderr == b""
    run = only_run("sh")
    assert run["exit_code"] == code and run["status"] == ("ok" if code == 0 else "failed")
    assert run["recorder"] == "wrapper" and run["argv"] == ["sh", "-c", f"exit {code}"]
    assert isinstance(run["cpu_user_s"], float)
    # sh is smaller than the memory rage spawned it from: a bound, no exact peak
    # (tests/test_wrapper_memory.py)
    assert run["peak_rss_bytes"] is None


def test_not_found_and_not_executable(tmp_path: Path) -> None:
    proc = wrap("no-such-command-xyz")
    assert proc.returncode == 127
    assert proc.stderr == b"rage: no-such-command-xyz: command not found\n"
    script = tmp_path / "plain.txt"
    script.write_text("echo hi\n")
    script.chmod(0o644)
    proc = wrap(str(script))
    assert proc.returncode == 126
    assert proc.stderr == f"rage: {script}: Permission denied\n".encode()
    proc = wrap(str(tmp_path))
    assert proc.returncode == 126
    # recorded: a command that cannot start is what a user may want to report
    [run] = runs("plain.txt")
    assert (run["status"], run["exit_code"]) == ("failed", 126)
    assert run["error"] == f"{script}: Permission denied"
    [run] = runs("no-such-command-xyz")
    assert (run["status"], run["exit_code"]) == ("failed", 127)
    assert run["argv"] == ["no-such-command-xyz"]


def test_script_without_shebang_runs_with_sh(tmp_path: Path) -> None:
    script = tmp_path / "noshebang"
    script.write_text("echo from-sh \"$1\"\n")
    script.chmod(0o755)
    proc = wrap(str(script), "arg")
    assert proc.returncode == 0 and proc.stdout == b"from-sh arg\n"


def test_usage_errors() -> None:
    for args, text in [((), b"no command given"), (("--bogus", "x"), b"unknown option"),
                       (("--app",), b"--app needs a value"),
                       (("--app", "../x", "true"), b"invalid app name")]:
        proc = wrap(*args)
        assert proc.returncode == 2, args
        assert text in proc.stderr and b"Traceback" not in proc.stderr
    proc = wrap("--help")
    assert proc.returncode == 0 and b"Usage: rage run [OPTIONS] [--] CMD [ARGS]..." in proc.stdout


def test_stdout_and_stderr_byte_exact_and_separate(rage_home: Path) -> None:
    code = (
        "import os\n"
        "os.write(1, b'out\\xff\\xfe\\x00raw\\r\\n' * 3)\n"
        "os.write(2, b'err\\x80\\x81 no newline')\n"
        "os.write(1, b'tail')\n"
    )
    proc = wrap("--app", "bytes", "--", sys.executable, "-c", code)
    assert proc.returncode == 0
    assert proc.stdout == b"out\xff\xfe\x00raw\r\n" * 3 + b"tail"
    assert proc.stderr == b"err\x80\x81 no newline"
    run_dir = Path(str(only_run("bytes")["dir"]))
    assert (run_dir / "stdout.log").read_bytes() == proc.stdout
    assert (run_dir / "stderr.log").read_bytes() == proc.stderr
    assert stat.S_IMODE(os.stat(run_dir / "stdout.log").st_mode) == 0o600
    assert only_run("bytes")["mode"] == "pipe"


def test_stdin_binary_passthrough_and_eof() -> None:
    data = bytes(range(256)) * 4000 + b"\x00end"
    proc = wrap("--app", "cat", "--", "cat", input=data, stdin=None)
    assert proc.returncode == 0 and proc.stdout == data
    # EOF right away
    proc = wrap("--", "wc", "-c", stdin=subprocess.DEVNULL)
    assert proc.stdout.strip() == b"0"


def test_child_sees_no_tty_and_a_pipe_when_piped() -> None:
    code = "import os,sys; print(os.isatty(0), os.isatty(1), os.isatty(2))"
    proc = wrap("--", sys.executable, "-c", code)
    assert proc.stdout == b"False False False\n"


def test_child_signal_death_is_the_wrappers_death_and_crash_hint() -> None:
    proc = wrap("--app", "boom", "--", "sh", "-c", "kill -SEGV $$")
    assert proc.returncode == -signal.SIGSEGV
    run = only_run("boom")
    assert proc.stderr == (b"rage: boom crashed (SIGSEGV); to report it: "
                           b"rage report " + str(run["id"]).rsplit("-", 1)[-1].encode() + b"\n")
    assert run["status"] == "crashed" and run["signal"] == signal.SIGSEGV
    # a non-crash signal: no hint, and the wrapper dies of the same signal
    proc = wrap("--app", "term", "--", "sh", "-c", "kill -TERM $$")
    assert proc.returncode == -signal.SIGTERM and proc.stderr == b""
    assert only_run("term")["status"] == "interrupted"
    proc = wrap("--app", "usr", "--", "sh", "-c", "kill -USR1 $$")
    assert proc.returncode == -signal.SIGUSR1


def test_wrapper_dies_of_the_crash_without_dumping_its_own_core(tmp_path: Path) -> None:
    """With core dumps allowed, the crashing child dumps its core; the wrapper, dying of
    the same SIGSEGV so the shell prints "Segmentation fault", dumps none of its own."""
    allow_cores = ["sh", "-c", 'ulimit -c unlimited && exec "$@"', "sh"]
    crash = [sys.executable, "-c", "import ctypes; ctypes.string_at(0)"]
    bare = subprocess.Popen([*allow_cores, *crash], cwd=tmp_path, stderr=subprocess.DEVNULL)
    _, bare_status, _ = os.wait4(bare.pid, 0)
    bare.returncode = bare_status  # reaped here, for the core-dump bit Popen does not keep
    proc = subprocess.Popen([*allow_cores, *rage_cmd("run", "--", *crash)], cwd=tmp_path,
                            stderr=subprocess.DEVNULL)
    _, status, _ = os.wait4(proc.pid, 0)
    proc.returncode = status
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSEGV
    assert not os.WCOREDUMP(status)
    assert os.WTERMSIG(bare_status) == signal.SIGSEGV  # the peer: same death
    bash = subprocess.run(["bash", "-c", shlex.join(rage_cmd("run", "--", *crash)) + "; echo $?"],
                          cwd=tmp_path, capture_output=True, timeout=60, check=False)
    assert bash.stdout == b"139\n" and b"Segmentation fault" in bash.stderr


def test_hint_on_failure_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGE_HINT_ON_FAILURE", "1")
    proc = wrap("--app", "fails", "--", "sh", "-c", "exit 4")
    assert proc.returncode == 4
    short = str(only_run("fails")["id"]).rsplit("-", 1)[-1].encode()
    assert proc.stderr == (b"rage: fails failed (exit 4); to report it: "
                           b"rage report " + short + b"\n")


def _handler_child(tmp_path: Path) -> str:
    ready = tmp_path / "ready"
    return (
        "import os, signal, sys, time\n"
        "def h(n, f):\n"
        "    os.write(1, f'got {signal.Signals(n).name}\\n'.encode())\n"
        "    sys.exit(7)\n"
        "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n"
        "    signal.signal(s, h)\n"
        f"open({str(ready)!r}, 'w').close()\n"
        "time.sleep(30)\n"
    )


def _wait_for(path: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "child never got ready"
        time.sleep(0.01)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signals_to_wrapper_reach_child(tmp_path: Path, sig: signal.Signals) -> None:
    # own session: no terminal, so every signal here comes from kill(), as from a supervisor
    proc = subprocess.Popen(rage_cmd("run", "--app", "sig", "--", sys.executable, "-c",
                                     _handler_child(tmp_path)),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    _wait_for(tmp_path / "ready", proc)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert out == f"got {sig.name}\n".encode() and err == b""
    assert proc.returncode == 7
    run = only_run("sig")
    assert run["exit_code"] == 7
    assert (Path(str(run["dir"])) / "stdout.log").read_bytes() == out


def test_wrapper_killed_leaves_a_lost_run(tmp_path: Path) -> None:
    proc = subprocess.Popen(rage_cmd("run", "--app", "victim", "--", sys.executable, "-c",
                                     _handler_child(tmp_path)),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    _wait_for(tmp_path / "ready", proc)
    deadline = time.monotonic() + 20
    while not runs("victim"):  # the run is recorded just after the child starts
        assert time.monotonic() < deadline
        time.sleep(0.02)
    child_pid = int(str(only_run("victim")["pid"]))
    proc.kill()
    proc.wait(timeout=10)
    try:
        run = only_run("victim")
        assert run["status"] == "lost"
    finally:
        os.kill(child_pid, signal.SIGKILL)  # orphaned by the SIGKILL; not ours to keep


@pytest.mark.parametrize("home", ["/dev/null/rage-home", "file"])
def test_unwritable_history_runs_command_anyway(tmp_path: Path, home: str) -> None:
    # both fail for root too: a path below a character device or a regular file
    if home == "file":
        (tmp_path / "afile").write_text("x")
        home = str(tmp_path / "afile" / "sub")
    env = {**os.environ, "RAGE_HOME": home}
    code = "import os,sys; os.write(1, b'\\xffout'); os.write(2, b'err\\n'); sys.exit(5)"
    proc = wrap("--", sys.executable, "-c", code, env=env)
    assert proc.returncode == 5 and proc.stdout == b"\xffout"
    warning = f"rage: warning: not recording this run: Not a directory: {home}".encode()
    assert sorted(proc.stderr.splitlines()) == sorted([b"err", warning])


def test_write_failure_mid_run_warns_once_and_output_continues() -> None:
    # RLIMIT_FSIZE (ulimit -f, 512-byte blocks) makes file writes fail with EFBIG after 20 KiB
    # even for root; the child only writes to a pipe, so it is not affected
    code = ("import os\n"
            "for i in range(200): os.write(1, b'x' * 1000 + b'\\n')\n"
            "raise SystemExit(3)\n")
    argv = shlex.join(rage_cmd("run", "--app", "full", "--", sys.executable, "-c", code))
    proc = subprocess.run(["sh", "-c", f"ulimit -f 40 && exec {argv}"], capture_output=True,
                          timeout=60, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 3
    assert proc.stdout == (b"x" * 1000 + b"\n") * 200
    assert proc.stderr == b"rage: warning: not recording this run: File too large\n"
    run = only_run("full")
    assert run["status"] == "failed" and run["exit_code"] == 3
    assert run["capture_error"] == "File too large"


def test_output_cap_keeps_head_and_tail() -> None:
    code = ("import os\n"
            "os.write(1, b'HEAD' + b'.' * 100000 + b'TAIL')\n")
    env = {**os.environ, "RAGE_OUTPUT_CAP": "64"}
    proc = wrap("--app", "capped", "--", sys.executable, "-c", code, env=env)
    assert proc.returncode == 0 and len(proc.stdout) == 100008
    run_dir = Path(str(only_run("capped")["dir"]))
    log = (run_dir / "stdout.log").read_bytes()
    head, marker, tail = log.split(b"\n", 2)
    assert head == b"HEAD" + b"." * 28
    assert marker == (b"[rage: 99944 bytes dropped here: output above the cap keeps its head "
                      b"and tail]")
    assert tail == b"." * 28 + b"TAIL"
    meta = json.loads((run_dir / "meta.json").read_text())
    trunc = {t["name"]: t for t in meta["truncation"]}
    assert trunc["stdout.log"] == {"name": "stdout.log", "total_bytes": 100008,
                                   "dropped_bytes": 99944}
    assert trunc["stderr.log"]["total_bytes"] == 0


def test_attach_copies_files_modified_during_run(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "logs").mkdir(parents=True)
    (work / "logs" / "old.log").write_text("before the run\n")
    script = ("echo line1 > logs/new.log; echo big >> logs/big.log; "
              "head -c 5000 /dev/zero >> logs/big.log; echo untouched > other.txt")
    env = {**os.environ, "RAGE_OUTPUT_CAP": "1000"}
    proc = wrap("--app", "att", "--attach", "logs/*.log", "--attach=~/nonexistent-*.log",
                "--", "sh", "-c", script, cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr
    run_dir = Path(str(only_run("att")["dir"]))
    att = run_dir / "attachments"
    assert sorted(os.listdir(att)) == ["big.log", "new.log"]
    assert (att / "new.log").read_text() == "line1\n"
    assert stat.S_IMODE(os.stat(att / "new.log").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(att).st_mode) == 0o700
    big = (att / "big.log").read_bytes()
    assert big.startswith(b"big\n") and b"bytes dropped here" in big
    meta = json.loads((run_dir / "meta.json").read_text())
    names = {t["name"]: t for t in meta["truncation"]}
    assert names["attachments/big.log"]["total_bytes"] == 5004
    assert meta["attachments"] == ["attachments/big.log", "attachments/new.log"]


def test_attach_from_config(tmp_path: Path, config_file: Path) -> None:
    log = tmp_path / "tool.log"
    config_file.write_text(f'[app.cfgapp]\nattach = ["{log}"]\n')
    proc = wrap("--app", "cfgapp", "--", "sh", "-c", f"echo hello > {log}")
    assert proc.returncode == 0
    run_dir = Path(str(only_run("cfgapp")["dir"]))
    assert (run_dir / "attachments" / "tool.log").read_text() == "hello\n"


def test_broken_config_warns_and_still_records(config_file: Path) -> None:
    config_file.write_text("this is [ not toml")
    proc = wrap("--app", "cfg", "--", "true")
    assert proc.returncode == 0
    assert proc.stderr.startswith(b"rage: warning: invalid config")
    assert proc.stderr.count(b"\n") == 1
    assert only_run("cfg")["status"] == "ok"


def test_disable_execs_without_recording(rage_home: Path) -> None:
    env = {**os.environ, "RAGE_DISABLE": "1"}
    proc = wrap("--", "sh", "-c", "echo $$; exit 9", env=env)
    assert proc.returncode == 9 and proc.stdout.strip().isdigit()
    assert not rage_home.exists()


def test_sigpipe_default_in_child_like_a_shell() -> None:
    # `yes | head -1` must end: yes dies of SIGPIPE once head has gone
    shell = f"{' '.join(rage_cmd('run', '--', 'yes'))} | head -n 1; echo rc=$?"
    proc = subprocess.run(["sh", "-c", shell], capture_output=True, timeout=30, check=False)
    assert proc.stdout == b"y\nrc=0\n"
    run = only_run("yes")
    assert run["signal"] == signal.SIGPIPE


def test_sigpipe_is_not_a_failure_and_last_failed_skips_it() -> None:
    """`| head` ending a producer is normal in a pipeline: status ok, no hint, and
    `last-failed` still finds the real failure recorded before it."""
    assert wrap("--app", "t", "--", "sh", "-c", "exit 3").returncode == 3
    shell = f"{shlex.join(rage_cmd('run', '--app', 't', '--', 'yes'))} | head -c 1"
    proc = subprocess.run(["sh", "-c", shell], capture_output=True, timeout=30, check=False)
    assert proc.stdout == b"y" and proc.stderr == b""
    listing = runs("t")
    assert [r["status"] for r in listing] == ["ok", "failed"]
    assert listing[0]["signal"] == signal.SIGPIPE
    failed = run_rage("show", "last-failed", "--app", "t", "--json")
    assert failed.returncode == 0, failed.stderr
    assert json.loads(failed.stdout)["exit_code"] == 3


@pytest.mark.slow
def test_concurrent_runs_with_retention(monkeypatch: pytest.MonkeyPatch) -> None:
    limit = 5
    monkeypatch.setenv("RAGE_MAX_RUNS", str(limit))
    procs = [subprocess.Popen(rage_cmd("run", "--app", "many", "--", "sh", "-c",
                                       f"echo {i}; sleep 0.{i % 3}"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL) for i in range(40)]
    for i, p in enumerate(procs):
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0 and out == f"{i}\n".encode() and err == b""
    remaining = RunStore().run_dirs("many")
    # every run has ended; each wrapper pruned after itself, keeping only its own run extra.
    # Runs still live during a prune are skipped, so more than `limit` may go, but a run that
    # another pruner already claimed counts as gone: the newest run always survives.
    assert 1 <= len(remaining) <= limit + 1, len(remaining)
    assert all(r["status"] == "ok" for r in runs("many"))


def test_capture_memory_is_bounded_by_the_cap() -> None:
    """400 MB relayed to a pipe with a 1 MiB cap: the wrapper's peak RSS stays within a
    small constant of an idle wrapper's (it once held every relayed chunk: ~half the
    stream)."""
    env = {**os.environ, "RAGE_OUTPUT_CAP": "1MiB"}

    def peak(*argv: str) -> int:
        # sh's rusage covers the pipeline it waited for; the wrapper is its largest process
        shell = f"{shlex.join(rage_cmd('run', '--', *argv))} | cat >/dev/null"
        proc = subprocess.Popen(["sh", "-c", shell], stdin=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        assert proc.returncode == 0
        return int(usage.ru_maxrss) * 1024

    idle = peak("true")
    busy = peak("head", "-c", "400000000", "/dev/zero")
    assert busy < idle + (1 << 20) + (24 << 20), (idle, busy)


DONE_ALREADY = """
import _thread, os, sys
sys.setswitchinterval(100)  # a thread started below could not run before the checks
import _signal as signal
from rage.record.spawn import Child
from rage.record.supervisor import Supervisor, blocked_signals
sigs = blocked_signals(False)
signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
pid = os.posix_spawn("/bin/sh", ["sh", "-c", "exit 7"], os.environ)
os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # exited, not yet reaped
r, w = os.pipe()
sup = Supervisor(Child(pid, "pipe"), sigs, w)
sup.start()
print(os.waitstatus_to_exitcode(sup.status or 0), _thread._count(),
      sup.rusage is not None, flush=True)
sup.join()
"""


def test_a_command_done_before_the_supervisor_starts_needs_no_thread() -> None:
    # `rage run` starts the supervisor once the record is built; a short command has
    # exited by then and is reaped at once, without a thread (~0.25 ms of CPU)
    proc = subprocess.run([sys.executable, "-c", DONE_ALREADY], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["7", "0", "True"]
