"""How rage.install sees the exit code of ``raise SystemExit(n)``, and what that may change.

On Python 3.12+ ``sys.monitoring`` sees the exception leave the main thread's outermost frame
and builtins stay untouched; on 3.11 builtins' ``SystemExit`` is a subclass that notes its
code as it is made and takes it back if a handler frees it (docs/ARCHITECTURE.md says why),
whose known difference is an exception of the base class raised by C code passing an
``except SystemExit`` by. Each case runs the same script with and without rage.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tests.test_integration import only_run, run_script

MONITORING = sys.version_info >= (3, 12)
ONLY_311_DIFFERS = pytest.mark.xfail(
    not MONITORING, strict=True,
    reason="3.11: builtins' SystemExit is rage's subclass, noting codes as made")


@ONLY_311_DIFFERS
def test_system_exit_raised_by_c_code_is_caught_as_without_rage(tmp_path: Path) -> None:
    # PyErr_SetNone(PyExc_SystemExit), as a C extension raises it: the builtin class itself
    body = """
    import ctypes
    exc = ctypes.py_object.in_dll(ctypes.pythonapi, "PyExc_SystemExit")
    try:
        ctypes.pythonapi.PyErr_SetNone(exc)
    except SystemExit as e:
        print("caught", type(e).__name__, e.code)
    print("after")
    raise SystemExit(3)
    """
    bare = run_script(tmp_path, body, use_rage=False)
    proc = run_script(tmp_path, body)
    assert bare.stdout == b"caught SystemExit None\nafter\n" and bare.returncode == 3
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, bare.stdout, bare.stderr)
    assert only_run().exit_code == 3


@ONLY_311_DIFFERS
def test_builtins_are_left_alone(tmp_path: Path) -> None:
    body = """
    import builtins
    print(builtins.SystemExit.__mro__, builtins.SystemExit is type(SystemExit()))
    """
    bare = run_script(tmp_path, body, use_rage=False)
    proc = run_script(tmp_path, body)
    assert proc.stdout == bare.stdout, proc.stderr


@pytest.mark.parametrize("where", ["module", "function", "runpy"])
def test_uncaught_system_exit_code_is_recorded(tmp_path: Path, where: str) -> None:
    body = {
        "module": "raise SystemExit(5)\n",
        "function": "def main():\n    raise SystemExit(5)\nmain()\n",
        # python -m: the outermost frame is runpy's, the script's module above it
        "runpy": "import runpy\nrunpy.run_path(__file__ + '.inner.py', run_name='__main__')\n",
    }[where]
    (tmp_path / "tool.py.inner.py").write_text(
        "def main():\n    raise SystemExit(5)\nmain()\n")
    proc = run_script(tmp_path, body)
    assert proc.returncode == 5, proc.stderr
    assert only_run().exit_code == 5


@pytest.mark.parametrize("how", ["raise SystemExit(9)", "sys.exit(9)"])
def test_a_caught_system_exit_is_not_the_exit_code(tmp_path: Path, how: str) -> None:
    # 3.11 notes the code as the exception is made, and takes it back as a handler frees it
    body = f"""
    try:
        {how}
    except SystemExit:
        pass
    print("on")
    """
    proc = run_script(tmp_path, body)
    assert (proc.returncode, proc.stdout) == (0, b"on\n"), proc.stderr
    assert only_run().exit_code == 0


# Where a SystemExit goes, and the exit status a shell sees: each case runs with and without
# rage, and the run must record what the shell saw.
EXIT_PATHS = {
    # a tool that survives argparse's error (argparse raises SystemExit(2) through sys.exit)
    "argparse error caught": ("""
    import argparse
    p = argparse.ArgumentParser(prog="tool")
    p.add_argument("--n", type=int)
    try:
        p.parse_args(["--n", "x"])
    except SystemExit as e:
        print("caught", e.code)
    """, 0),
    "caught deep in a function": ("""
    def inner():
        sys.exit(7)
    def outer():
        try:
            inner()
        except SystemExit:
            return "survived"
    print(outer())
    """, 0),
    "made, never raised": ("""
    e = SystemExit(5)
    del e
    print("on")
    """, 0),
    "caught, then another exit": ("""
    try:
        sys.exit(3)
    except SystemExit:
        sys.exit(4)
    """, 4),
    "caught, kept, raised again": ("""
    try:
        sys.exit(6)
    except SystemExit as e:
        saved = e
    print("later")
    raise saved
    """, 6),
    "caught twice, the second uncaught": ("""
    for code in (8, 9):
        try:
            sys.exit(code)
        except SystemExit:
            if code == 9:
                raise
    """, 9),
    "caught under python -m (runpy)": ("""
    import runpy
    runpy.run_path(__file__ + ".inner.py", run_name="__main__")
    """, 0),
    "caught, the script then crashes": ("""
    try:
        sys.exit(3)
    except SystemExit:
        pass
    raise ValueError("boom")
    """, 1),
}


@pytest.mark.parametrize("case", list(EXIT_PATHS))
def test_the_exit_status_is_the_one_a_shell_sees(tmp_path: Path, case: str) -> None:
    body, code = EXIT_PATHS[case]
    (tmp_path / "tool.py.inner.py").write_text(
        "import sys\ntry:\n    sys.exit(5)\nexcept SystemExit:\n    print('inner on')\n")
    bare = run_script(tmp_path, "import sys\n" + textwrap.dedent(body), use_rage=False)
    proc = run_script(tmp_path, "import sys\n" + textwrap.dedent(body))
    assert bare.returncode == code, bare.stderr
    hint = b"tool: this crash was recorded"  # rage's one line after a crash's traceback
    stderr = b"".join(line for line in proc.stderr.splitlines(keepends=True)
                      if not line.startswith(hint))
    assert (proc.returncode, proc.stdout, stderr) == (code, bare.stdout, bare.stderr)
    assert only_run().exit_code == code


def test_a_click_tool_run_inside_a_tool_that_survives_its_exit(tmp_path: Path) -> None:
    # click's standalone mode ends in sys.exit, which rage.click's wrapper notes as well
    body = """
    import click

    @click.command()
    @click.option("--n", type=int)
    def cli(n):
        print("n", n)

    if os.environ["USE_RAGE"] == "1":
        import rage.click
        rage.click.attach(cli, "tool")
    try:
        cli(["--n", "x"])
    except SystemExit as e:
        print("caught", e.code)
    """
    bare = run_script(tmp_path, body, use_rage=False)
    proc = run_script(tmp_path, body)
    assert bare.stdout == b"caught 2\n" and bare.returncode == 0, bare.stderr
    assert (proc.returncode, proc.stdout) == (0, bare.stdout), proc.stderr
    assert only_run().exit_code == 0


@pytest.mark.skipif(not MONITORING, reason="sys.monitoring is Python 3.12+")
def test_without_a_free_monitoring_id_the_subclass_notes_the_code(tmp_path: Path) -> None:
    prelude = ("import sys\nfor i in (3, 4):\n    sys.monitoring.use_tool_id(i, 'other')\n"
               "import rage\nrage.install('tool')\n")
    body = """
    import builtins
    print(len(builtins.SystemExit.__mro__))
    raise SystemExit(6)
    """
    proc = run_script(tmp_path, body, prelude=prelude)
    assert (proc.returncode, proc.stdout) == (6, b"4\n"), proc.stderr
    assert only_run().exit_code == 6
