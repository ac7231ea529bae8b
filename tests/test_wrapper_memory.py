"""The peak memory a record gives is the command's, never rage's: real commands of known
size (`true`, an interpreter holding 50 MB) on a pipe and on a terminal (where a session
leader starts the command), and a Python tool with `rage.install` started by a large parent.

Linux counts the memory a process is exec'd from into its ``ru_maxrss``: a command that
rage spawns (vfork + exec) would report rage's own peak when it is smaller than that."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import rage_cmd, run_rage
from tests.test_wrapper_pty import terminal

MB = 1_000_000
HOLD_50MB = "x = bytearray(50_000_000); x[::4096] = b'1' * len(x[::4096])"


def only_meta(app: str) -> dict[str, object]:
    proc = run_rage("list", "--json", "--app", app)
    assert proc.returncode == 0, proc.stderr
    [run] = json.loads(proc.stdout)["runs"]
    meta: dict[str, object] = json.loads((Path(run["dir"]) / "meta.json").read_text())
    return meta


def run_on_a_pipe(app: str, *argv: str) -> dict[str, object]:
    proc = subprocess.run(rage_cmd("run", "--app", app, "--", *argv), capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return only_meta(app)


def run_on_a_terminal(app: str, *argv: str) -> dict[str, object]:
    with terminal("--app", app, "--", *argv) as term:
        assert term.finish() == 0, term.seen
    meta = only_meta(app)
    assert meta["mode"] == "pty"
    return meta


def check(small: dict[str, object], big: dict[str, object]) -> None:
    # `true` (about 1 MB) is smaller than what rage's memory adds to its figure: no exact
    # peak is claimed, only the bound (before: peak_rss_bytes was rage's own, 6-15 MB)
    assert small["peak_rss_bytes"] is None, small
    bound = small["peak_rss_at_most_bytes"]
    assert isinstance(bound, int) and MB < bound < 64 * MB, small
    # 50 MB held: the command's own peak, exactly (the interpreter adds a few MB)
    peak = big["peak_rss_bytes"]
    assert isinstance(peak, int) and 50 * MB < peak < 50 * MB + 40 * MB, big
    assert "peak_rss_at_most_bytes" not in big


def test_peak_memory_of_small_and_large_commands_on_a_pipe() -> None:
    check(run_on_a_pipe("small", "true"),
          run_on_a_pipe("big", sys.executable, "-I", "-S", "-c", HOLD_50MB))


def test_peak_memory_of_small_and_large_commands_on_a_terminal() -> None:
    check(run_on_a_terminal("small", "true"),
          run_on_a_terminal("big", sys.executable, "-I", "-S", "-c", HOLD_50MB))


def test_show_says_when_the_peak_is_only_bounded() -> None:
    meta = run_on_a_pipe("small", "true")
    out = run_rage("show", "last", "--app", "small").stdout
    assert "peak memory: at most" in out and "not measured exactly" in out, out
    assert meta["peak_rss_bytes"] is None


def test_a_python_tool_started_by_a_large_parent_records_its_own_peak(tmp_path: Path) -> None:
    """`rage.install` in a tool that a 300 MB parent starts through subprocess (vfork): the
    tool's record holds its own peak, not the parent's."""
    tool = tmp_path / "tool.py"
    tool.write_text("import rage\nrage.install('tool')\n")
    parent = textwrap.dedent(f"""
        import subprocess, sys
        big = bytearray(300_000_000)
        big[::4096] = b'1' * len(big[::4096])
        subprocess.run([sys.executable, {str(tool)!r}], check=True)
    """)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    subprocess.run([sys.executable, "-c", parent], env=env, check=True, timeout=60,
                   stdin=subprocess.DEVNULL)
    meta = only_meta("tool")
    peak = meta["peak_rss_bytes"]
    assert isinstance(peak, int) and 5 * MB < peak < 150 * MB, meta


def test_rage_started_by_a_large_parent_still_measures_its_command() -> None:
    """rage itself started through vfork by a 300 MB parent (a test runner, an IDE): its
    own ru_maxrss holds that parent's peak, which must not hide its command's 50 MB."""
    parent = textwrap.dedent(f"""
        import subprocess, sys
        big = bytearray(300_000_000)
        big[::4096] = b'1' * len(big[::4096])
        subprocess.run({rage_cmd("run", "--app", "big", "--", sys.executable, "-I", "-S",
                                 "-c", HOLD_50MB)!r}, check=True, stdin=subprocess.DEVNULL)
    """)
    subprocess.run([sys.executable, "-c", parent], check=True, timeout=60,
                   stdin=subprocess.DEVNULL)
    peak = only_meta("big")["peak_rss_bytes"]
    assert isinstance(peak, int) and 50 * MB < peak < 50 * MB + 40 * MB, peak
