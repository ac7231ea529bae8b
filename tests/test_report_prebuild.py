"""The caches a first report built (the redaction engine's databases and patterns, the
distributions) are built ahead by a detached child a recording starts: the first report
in a new rage home then builds nothing (it writes no cache file, the real observable of
a compile or of a distribution read)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from rage.paths import prebuild_needed
from rage.redact.native import available
from rage.report import prebuild
from tests.test_cli_exit_codes import RAGE


def cache_state(home: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in (home / ".cache").iterdir()}


def built_caches(home: Path) -> list[str]:
    """What a first report builds (not the recorder's own small caches, secret-names)."""
    where = home / ".cache"
    return sorted(p.name for p in where.iterdir() if p.name.startswith(
        ("hyperscan-", "regex-", "dists-", "prebuilt-"))) if where.is_dir() else []


def report(home: Path, out: Path) -> subprocess.CompletedProcess[str]:
    out.mkdir(exist_ok=True)
    return subprocess.run([RAGE, "report", "--last", "--yes", "--output", f"{out}/"],
                          env={**os.environ, "RAGE_HOME": str(home)}, capture_output=True,
                          text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)


def wait_built(home: Path) -> None:
    deadline = time.monotonic() + 90
    while prebuild_needed(str(home)):
        assert time.monotonic() < deadline, "the prebuild did not finish"
        time.sleep(0.1)


def test_the_first_report_builds_nothing_after_a_recording_s_prebuild(
        rage_home: Path, tmp_path: Path) -> None:
    rec = subprocess.run([RAGE, "run", "--", "sh", "-c", "echo hi; exit 3"],
                         env={**os.environ, "RAGE_HOME": str(rage_home)},
                         capture_output=True, timeout=60, check=False)
    assert rec.returncode == 3
    assert not built_caches(rage_home)  # (a recording compiles nothing)
    # as the recorder starts it, with the interpreter reports run in
    code = ("import sys; from rage.report.prebuild import spawn_if_needed; "
            "print(spawn_if_needed(sys.argv[1], 'sh') is not None)")
    spawn = [str(Path(RAGE).parent / "python"), "-c", code, str(rage_home)]
    env = {**os.environ, "RAGE_HOME": str(rage_home)}
    started = subprocess.run(spawn, env=env, capture_output=True, text=True, timeout=60,
                             check=True)
    assert started.stdout.split() == ["True"]
    wait_built(rage_home)
    built = cache_state(rage_home)
    assert any(n.startswith("hyperscan-") for n in built) or not available()
    assert any(n.startswith("regex-") for n in built)
    assert any(n.startswith("dists-") for n in built)

    first = report(rage_home, tmp_path / "a")
    assert first.returncode == 0, first.stderr
    assert cache_state(rage_home) == built  # nothing compiled, nothing read anew

    # a second recording starts nothing: one stat of the stamp
    again = subprocess.run(spawn, env=env, capture_output=True, text=True, timeout=60,
                           check=True)
    assert again.stdout.split() == ["False"]


def test_without_the_prebuild_the_first_report_builds_them(rage_home: Path,
                                                           tmp_path: Path) -> None:
    """The control: what the prebuild saves the first report."""
    subprocess.run([RAGE, "run", "--", "true"], env={**os.environ, "RAGE_HOME": str(rage_home)},
                   capture_output=True, timeout=60, check=True)
    assert prebuild_needed(str(rage_home))
    done = report(rage_home, tmp_path / "a")
    assert done.returncode == 0, done.stderr
    made = cache_state(rage_home)
    assert any(n.startswith("regex-") for n in made) and any(n.startswith("dists-") for n in made)
    assert prebuild_needed(str(rage_home))  # (a report leaves no stamp)


def test_the_child_leaves_the_recorder_s_signals_behind(rage_home: Path) -> None:
    """A recorder blocks the signals its supervisor waits for and may ignore SIGHUP: the
    child blocks and ignores neither SIGTERM nor SIGHUP (`kill` stops it), in a session
    of its own."""
    code = """
import json, os, signal, sys, time
from rage.report.prebuild import spawn_if_needed
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP, signal.SIGINT})
signal.signal(signal.SIGHUP, signal.SIG_IGN)
pid = spawn_if_needed(sys.argv[1], None)
time.sleep(0.05)
with open(f"/proc/{pid}/status") as f:
    fields = dict(line.rstrip("\\n").split(":\\t", 1) for line in f if ":\\t" in line)
sid = os.getsid(pid)
os.kill(pid, signal.SIGTERM)
_, st = os.waitpid(pid, 0)
print(json.dumps({"blocked": int(fields["SigBlk"], 16), "ignored": int(fields["SigIgn"], 16),
                  "session": sid == pid,
                  "killed": os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGTERM}))
"""
    out = subprocess.run([str(Path(RAGE).parent / "python"), "-c", code, str(rage_home)],
                         env={**os.environ, "RAGE_HOME": str(rage_home)},
                         capture_output=True, text=True, timeout=60, check=True).stdout
    got = json.loads(out)
    for sig in (1, 15):  # SIGHUP, SIGTERM
        assert not got["blocked"] & (1 << (sig - 1)) and not got["ignored"] & (1 << (sig - 1))
    assert got["session"] and got["killed"]


def test_a_home_with_no_run_yet_gets_the_engine_built(rage_home: Path) -> None:
    """`rage shim install` may start it before any recording: no home, no run."""
    assert not rage_home.exists()
    pid = prebuild.spawn_if_needed(str(rage_home), None)
    assert pid is not None
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert not prebuild_needed(str(rage_home))
    made = cache_state(rage_home)
    assert any(n.startswith("regex-") for n in made) and any(n.startswith("dists-") for n in made)


def test_the_wrapper_starts_the_prebuild_once_the_command_ended(rage_home: Path,
                                                                  tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAGE_PREBUILD"}
    rec = subprocess.run([RAGE, "run", "--", "sh", "-c", "echo hi; exit 3"], env=env,
                         capture_output=True, text=True, timeout=60, check=False)
    assert (rec.returncode, rec.stdout) == (3, "hi\n")  # the command as without rage
    wait_built(rage_home)
    built = cache_state(rage_home)
    assert any(n.startswith("regex-") for n in built)
    first = report(rage_home, tmp_path / "a")
    assert first.returncode == 0, first.stderr
    assert cache_state(rage_home) == built


def test_the_integration_starts_the_prebuild_at_exit(rage_home: Path, tmp_path: Path) -> None:
    tool = tmp_path / "tool.py"
    tool.write_text("import sys, rage\nrage.install('tool')\nprint('ok')\nsys.exit(4)\n")
    env = {k: v for k, v in os.environ.items() if k != "RAGE_PREBUILD"}
    done = subprocess.run([str(Path(RAGE).parent / "python"), str(tool)], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (4, "ok\n")
    wait_built(rage_home)
    assert any(n.startswith("dists-") for n in cache_state(rage_home))


def test_rage_prebuild_0_starts_nothing(rage_home: Path) -> None:
    env = {**os.environ, "RAGE_PREBUILD": "0"}
    subprocess.run([RAGE, "run", "--", "true"], env=env, capture_output=True, timeout=60,
                   check=True)
    # the wrapper has exited; a child it started would hold the lock or leave caches
    time.sleep(3)
    assert prebuild_needed(str(rage_home))
    assert not built_caches(rage_home)


def test_the_child_holds_none_of_the_recorder_s_inherited_descriptors(rage_home: Path) -> None:
    """`rage run -- true 3>&1 | cat`: a pipe the shell passed as fd 3 reached the child,
    and `cat` waited for the prebuild to end (about a second) before its EOF."""
    import signal

    r, w = os.pipe()
    os.set_inheritable(w, True)  # as a shell passes it
    pid = prebuild.spawn_if_needed(str(rage_home), None)
    assert pid is not None
    try:
        os.kill(pid, signal.SIGSTOP)  # held still, to read its descriptors
        deadline = time.monotonic() + 30  # a hang guard: stopping is not instant
        while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        held = {os.readlink(f"/proc/{pid}/fd/{n}") for n in os.listdir(f"/proc/{pid}/fd")}
        assert os.readlink(f"/proc/self/fd/{w}") not in held
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
        os.close(w)
