"""`rage redact`: the engine as a filter, run as a real subprocess."""

from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import time
from pathlib import Path
from typing import IO

import pytest

from tests.conftest import rage_cmd
from tests.conftest import run_rage as _run_rage


def run_rage(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    if "input" in kwargs:
        kwargs["stdin"] = None
    return _run_rage(*args, **kwargs)

TOKEN = "ghp_" + "Zq8Lr2Vx9Kp4Tn6Wm1Hc3Bd5Fg7Js0Ya2Ue4"
LOG = (f"2024-05-01 INFO start user=bob\n\x1b[32m{TOKEN}\x1b[0m\npassword=hunter2xyz\n"
       "tests/test_auth.py::test_token_refresh PASSED\n")


def test_stdin_to_stdout_with_counts_on_stderr() -> None:
    proc = run_rage("redact", input=LOG)
    assert proc.returncode == 0, proc.stderr
    assert TOKEN not in proc.stdout and "hunter2xyz" not in proc.stdout
    assert "\x1b" not in proc.stdout
    assert "tests/test_auth.py::test_token_refresh PASSED" in proc.stdout
    assert proc.stderr.strip() == "rage: redacted 2 (github-token 1, secret-field 1)"


def test_file_and_json_counts(tmp_path: Path) -> None:
    src = tmp_path / "app.log"
    src.write_text(LOG)
    proc = run_rage("redact", str(src), "--json")
    assert proc.returncode == 0
    assert json.loads(proc.stderr) == {"counts": {"github-token": 1, "secret-field": 1},
                                       "total": 2}
    assert proc.stdout.count("\n") == LOG.count("\n")


def test_output_file_is_private(tmp_path: Path) -> None:
    src = tmp_path / "app.log"
    src.write_text(LOG)
    dst = tmp_path / "clean.log"
    proc = run_rage("redact", str(src), "-o", str(dst), "-q")
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    assert stat.S_IMODE(dst.stat().st_mode) == 0o600
    assert TOKEN not in dst.read_text()


def test_user_patterns_and_settings(tmp_path: Path) -> None:
    proc = run_rage("redact", "--pattern", r"ACME-[0-9]{6}", input="customer ACME-884411\n",
                    env=dict(os.environ, RAGE_REDACT=r"ticket-[0-9]+"))
    assert proc.stdout == "customer [REDACTED:custom]\n"
    proc = run_rage("redact", input="see ticket-42\n",
                    env=dict(os.environ, RAGE_REDACT=r"ticket-[0-9]+"))
    assert proc.stdout == "see [REDACTED:custom]\n"


def test_bad_input_one_line_and_exit_codes(tmp_path: Path) -> None:
    proc = run_rage("redact", str(tmp_path / "missing.log"))
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1
    proc = run_rage("redact", str(tmp_path))
    assert proc.returncode == 6 and "directory" in proc.stderr
    proc = run_rage("redact", "--pattern", "(", input="x\n")
    assert proc.returncode == 6 and "Traceback" not in proc.stderr


def test_pipe_closed_early_is_quiet() -> None:
    """`rage redact big.log | head -1`: no traceback when the reader leaves."""
    producer = "for i in $(seq 1 200000); do echo \"$i token=abcdef12\"; done"
    cmd = f"{producer} | {' '.join(rage_cmd('redact', '-q'))} | head -1"
    proc = subprocess.run(["bash", "-c", cmd], check=False, capture_output=True,
                          text=True, timeout=120)
    assert proc.stdout == "1 token=[REDACTED:secret-field]\n"
    assert "Traceback" not in proc.stderr


def test_lines_flow_through_a_pipe_as_written() -> None:
    """A filter on a live log: each line comes out before the input ends."""
    proc = subprocess.Popen(rage_cmd("redact", "-q"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"first password=abc12345\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == b"first password=[REDACTED:secret-field]\n"
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    proc.stdout.close()


def test_a_line_with_a_multi_line_opener_is_not_held_on_a_live_pipe() -> None:
    """A line that may start a multi-line value (`Bearer`, `name`, a JWT) waits for the lines
    after it only while the input keeps coming: a pause lets it out."""
    proc = subprocess.Popen(rage_cmd("redact", "-q"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for line, shown in ((b"hostname=web-1 name=api\n", b"hostname=web-1 name=api\n"),
                            (b"Authorization: Bearer Tk5RbTk5RbTk5Rb\n",
                             b"Authorization: Bearer [REDACTED:auth-header]\n")):
            proc.stdin.write(line)
            proc.stdin.flush()
            assert _line_within(proc.stdout, 10) == shown  # before the input ends
    finally:
        proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    proc.stdout.close()


def test_a_token_wrapped_onto_the_next_write_is_redacted_on_a_live_pipe() -> None:
    """The rest of a wrapped token written right after its line (a logger writes line by
    line) is redacted with it, as in a file."""
    proc = subprocess.Popen(rage_cmd("redact", "-q"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    rest = b"Qm7VtQm7VtQm7VtQm7Vt"
    try:
        proc.stdin.write(b"Authorization: Bearer Tk5RbTk5RbTk5RbTk5Rb\n")
        proc.stdin.flush()
        time.sleep(0.02)
        proc.stdin.write(rest + b"\n")
        proc.stdin.flush()
        assert _line_within(proc.stdout, 10) == (
            b"Authorization: Bearer [REDACTED:auth-header]\n")
        assert _line_within(proc.stdout, 10) == b"[REDACTED:auth-header]\n"
    finally:
        proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    proc.stdout.close()


def _line_within(f: IO[bytes], seconds: float) -> bytes:
    """The next line of a pipe, or b"" if none is complete within ``seconds``."""
    line = b""
    deadline = time.monotonic() + seconds
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([f], [], [], left)[0]:
            return b""
        byte = os.read(f.fileno(), 1)
        if not byte:
            return line
        line += byte
    return line


def test_a_live_pipe_past_the_parallel_threshold_still_lets_lines_out_on_a_pause() -> None:
    """Past 8 MiB a live input is redacted by worker processes; a pause still lets every
    line written so far out (before: the pieces held by the workers waited for more input,
    so `tail -f big.log | rage redact` stopped showing lines after its first 8 MiB)."""
    import threading

    proc = subprocess.Popen(rage_cmd("redact", "-q"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    got = bytearray()
    seen = threading.Event()
    last = b"last line password=abc12345\n"

    def read() -> None:
        assert proc.stdout is not None
        while chunk := os.read(proc.stdout.fileno(), 1 << 16):
            got.extend(chunk)
            if got.endswith(b"last line password=[REDACTED:secret-field]\n"):
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        line = b"2026-12-03T10:00:00Z INFO request finished user=bob n=1234567\n"
        for _ in range(12):  # 12 MiB in writes of 1 MiB, then one line, then a pause
            proc.stdin.write(line * ((1 << 20) // len(line)))
            proc.stdin.flush()
        proc.stdin.write(last)
        proc.stdin.flush()
        assert seen.wait(15), f"{len(got)} bytes out, the last line not among them"
    finally:
        proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    reader.join(30)
    proc.stdout.close()
    assert got.count(b"\n") == 12 * ((1 << 20) // len(line)) + 1


XTRACE_SECRET = "Zq8hunter2Secret"
XTRACE = (f"echo {XTRACE_SECRET} before it is named\n+ export API_PASSWORD={XTRACE_SECRET}\n"
          + "step finished: copied a batch of ordinary files\n" * 100_000
          + f"+ curl -d @- <<< {XTRACE_SECRET}\n")


def test_a_live_pipe_learns_what_it_names_for_the_lines_after() -> None:
    """On a pipe (`tail -f ci.log | rage redact`) a value named under a secret name is
    removed where the lines after repeat it, as they come; a copy written before the line
    that names it is out already and stays. Before, only the named copy went."""
    proc = subprocess.Popen(rage_cmd("redact", "--json"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        for line, shown in (
                (f"echo {XTRACE_SECRET} before it is named\n",
                 f"echo {XTRACE_SECRET} before it is named\n"),
                (f"+ export API_PASSWORD={XTRACE_SECRET}\n",
                 "+ export API_PASSWORD=[REDACTED:secret-field]\n"),
                (f"+ curl -d @- <<< {XTRACE_SECRET}\n", "+ curl -d @- <<< [REDACTED:literal]\n"),
                (f"retrying {XTRACE_SECRET}, then done\n",
                 "retrying [REDACTED:literal], then done\n")):
            proc.stdin.write(line.encode())
            proc.stdin.flush()
            assert _line_within(proc.stdout, 10) == shown.encode()  # before the input ends
        # named and repeated in one write: the repeat goes in the same piece
        proc.stdin.write(b"token: Hx7pQ2mZr9vK3wLd\nsending Hx7pQ2mZr9vK3wLd\n")
        proc.stdin.flush()
        assert _line_within(proc.stdout, 10) == b"token: [REDACTED:secret-field]\n"
        assert _line_within(proc.stdout, 10) == b"sending [REDACTED:literal]\n"
    finally:
        proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert json.loads(proc.stderr.read())["counts"] == {"secret-field": 2, "literal": 3}
    proc.stdout.close()
    proc.stderr.close()


def test_a_pipe_learns_its_first_64_values() -> None:
    """A pipe learns the first PIPE_LEARN_MAX values it names (each one made a literal
    costs the literals' finder a compilation): their repeats go, the later ones' stay."""
    from rage.cli.redact_cmd import PIPE_LEARN_MAX

    values = [f"Vq{i:03d}x9Lm7Kp2" for i in range(PIPE_LEARN_MAX + 6)]
    text = "".join(f"password={v}\n" for v in values) + "".join(f"echo {v}\n" for v in values)
    proc = subprocess.run(rage_cmd("redact", "-q"), input=text.encode(), capture_output=True,
                          check=False)  # a pipe
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert out.count("echo [REDACTED:literal]\n") == PIPE_LEARN_MAX
    assert all(f"echo {v}\n" in out for v in values[PIPE_LEARN_MAX:])
    assert not any(f"={v}" in out for v in values)  # each named copy goes, learned or not


def test_a_value_a_pipe_names_twice_is_learned_once() -> None:
    """Named again before it became a literal (in a later read), a value still counts once
    against the 64: the 64th value is learned too."""
    import time

    from rage.cli.redact_cmd import PIPE_LEARN_MAX

    values = [f"Wq{i:03d}x9Lm7Kp2" for i in range(PIPE_LEARN_MAX)]
    proc = subprocess.Popen(rage_cmd("redact", "-q"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    for _ in range(2):  # two reads: the first is out before the second comes
        proc.stdin.write(f"password={values[0]}\n".encode())
        proc.stdin.flush()
        assert _line_within(proc.stdout, 10) == b"password=[REDACTED:secret-field]\n"
        time.sleep(0.05)
    rest = "".join(f"password={v}\n" for v in values[1:]) + "".join(
        f"echo {v}\n" for v in values)
    out, _ = proc.communicate(rest.encode(), timeout=30)
    assert proc.returncode == 0
    assert out.decode().count("echo [REDACTED:literal]\n") == PIPE_LEARN_MAX


def test_a_file_is_read_whole_and_what_it_names_is_removed_everywhere(tmp_path: Path) -> None:
    """`rage redact FILE` (or a file on standard input) learns as a report does: a value
    the file names once under a secret name goes wherever else it repeats it, before or
    after. Before, only the named copy went."""
    src = tmp_path / "ci.log"
    src.write_text(XTRACE)
    by_name = run_rage("redact", str(src), "--json")
    with open(src, "rb") as f:
        redirected = subprocess.run([*rage_cmd("redact", "-")], stdin=f, capture_output=True,
                                    text=True, check=False, env={**os.environ})
    for proc in (by_name, redirected):
        assert proc.returncode == 0, proc.stderr
        assert XTRACE_SECRET not in proc.stdout
        assert proc.stdout.startswith("echo [REDACTED:literal] before it is named\n"
                                      "+ export API_PASSWORD=[REDACTED:secret-field]\n")
        assert proc.stdout.endswith("+ curl -d @- <<< [REDACTED:literal]\n")
    assert json.loads(by_name.stderr)["counts"] == {"secret-field": 1, "literal": 2}


def test_a_full_disk_is_told_as_the_output_not_the_source(tmp_path: Path) -> None:
    """`/dev/full` answers every write with ENOSPC: the error names where the output was
    going, in one line with the bad-input exit code, whether that is `-o FILE` or stdout."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    src = tmp_path / "app.log"
    src.write_text(LOG)
    to_file = run_rage("redact", str(src), "-o", "/dev/full")
    assert to_file.returncode == 6, to_file.stderr
    assert to_file.stderr.strip() == "rage: cannot write /dev/full: No space left on device"
    with open("/dev/full", "w") as full:
        to_stdout = subprocess.run([*rage_cmd(), "redact", str(src)], stdout=full,
                                   stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    assert to_stdout.returncode == 6, to_stdout.stderr
    assert to_stdout.stderr.strip() == (
        "rage: cannot write standard output: No space left on device")
