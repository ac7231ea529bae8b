"""Real tools from PyPI through the integration: a click group (flask), a plain click command
(black), an argparse tool (yamllint; and examples/argparse_tool.py), under ``rage run`` too.

Every tool is run twice, with and without rage, and the console must be byte-identical.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import pytest

from rage.record.history import Run, RunStore
from tests.conftest import rage_cmd

pytest.importorskip("black")
pytest.importorskip("flask")
pytest.importorskip("yamllint")

ROOT = Path(__file__).resolve().parent.parent

BLACK = """\
import os, sys
import black
if os.environ.get("USE_RAGE", "1") == "1":
    import rage.click
    rage.click.attach(black.main, "black", version=black.__version__)
sys.exit(black.patched_main())
"""

FLASK = """\
import os
from flask.cli import cli, main
if os.environ.get("USE_RAGE", "1") == "1":
    import rage.click
    rage.click.attach(cli, "flask", version="3")
main()
"""


def run(tmp_path: Path, source: str, *args: str, use_rage: bool = True,
        env: dict[str, str] | None = None, name: str = "tool.py",
        timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    script = tmp_path / name
    script.write_text(source)
    full_env = {**os.environ, "USE_RAGE": "1" if use_rage else "0", **(env or {})}
    return subprocess.run([sys.executable, str(script), *args], capture_output=True,
                          env=full_env, cwd=tmp_path, timeout=timeout, check=False,
                          stdin=subprocess.DEVNULL)


def both(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run without and with rage; the console and the status must be the same."""
    bare = run(tmp_path, source, *args, use_rage=False)
    proc = run(tmp_path, source, *args)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        bare.returncode, bare.stdout, bare.stderr)
    return proc


def runs(app: str) -> list[Run]:
    return RunStore().list(app, include_report_commands=True).runs


def only_run(app: str) -> Run:
    (r,) = runs(app)
    return r


def bundle_members(path: Path) -> dict[str, bytes]:
    raw = subprocess.run(["zstd", "-dc", str(path)], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        return {m.name: tar.extractfile(m).read()  # type: ignore[union-attr]
                for m in tar.getmembers() if m.isfile()}


# -- a plain click command: black -------------------------------------------------------------
def test_black_plain_command_records_and_keeps_its_console(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text("x = 1\n")
    proc = both(tmp_path, BLACK, "--check", "good.py")
    assert proc.returncode == 0
    run_ = only_run("black")
    assert (run_.status, run_.exit_code, run_.app_version) == ("ok", 0, __import__(
        "black").__version__)
    assert (run_.dir / "stderr.log").read_bytes() == proc.stderr  # "All done! ..."


def test_black_failure_without_crash_keeps_what_the_user_saw(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("x=( 1, )\n")
    proc = both(tmp_path, BLACK, "--check", "bad.py")
    assert proc.returncode == 1 and b"would reformat" in proc.stderr
    run_ = only_run("black")
    assert (run_.status, run_.exit_code) == ("failed", 1)
    assert b"would reformat" in (run_.dir / "stderr.log").read_bytes()


def test_black_rage_option_runs_the_report_and_cannot_collide(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("x=( 1, )\n")
    run(tmp_path, BLACK, "--check", "bad.py")
    out = tmp_path / "b.tar.zst"
    proc = run(tmp_path, BLACK, "--rage", "--last", "--yes", "--no-collect", "--output",
               str(out))
    assert proc.returncode == 0, proc.stderr
    members = bundle_members(out)
    stderr = next(v for k, v in members.items() if k.endswith("stderr.log"))
    assert b"would reformat" in stderr
    # `black rage` still means "format the path rage", as without rage
    proc = both(tmp_path, BLACK, "rage")
    assert proc.returncode == 2 and b"Path 'rage' does not exist" in proc.stderr
    # --help is black's own, unchanged
    both(tmp_path, BLACK, "--help")


def test_attach_refuses_an_option_the_command_has() -> None:
    import click

    import rage.click

    @click.command()
    @click.option("--rage", is_flag=True)
    def cmd(rage: bool) -> None: ...

    main_before = cmd.main
    with pytest.raises(ValueError, match="already has an option --rage"):
        rage.click.attach(cmd, "cmd")
    assert cmd.main == main_before  # nothing half-attached
    rage.click.attach(cmd, "cmd", option="--report-bug")


# -- a click group: flask ---------------------------------------------------------------------
def test_flask_failure_without_crash_has_the_error_in_the_bundle(tmp_path: Path) -> None:
    proc = both(tmp_path, FLASK, "--app", "nonexistent", "routes")
    assert proc.returncode == 2
    assert b"Could not import 'nonexistent'" in proc.stderr
    run_ = only_run("flask")
    assert (run_.status, run_.exit_code) == ("failed", 2)
    out = tmp_path / "f.tar.zst"
    rep = run(tmp_path, FLASK, "rage", "--last", "--yes", "--no-collect", "--output", str(out))
    assert rep.returncode == 0, rep.stderr
    members = bundle_members(out)
    stderr = next(v for k, v in members.items() if k.endswith("stderr.log"))
    assert b"Error: Could not import 'nonexistent'." in stderr
    summary = next(v for k, v in members.items() if k.endswith("summary.md"))
    assert b"failed" in summary


def test_flask_version_duration_counts_interpreter_start_up(tmp_path: Path) -> None:
    # a second spent before flask and the recorder are even imported
    proc = run(tmp_path, "import time\ntime.sleep(1.0)\n" + FLASK, "--version")
    assert proc.returncode == 0, proc.stderr
    d = only_run("flask").duration_s
    assert d is not None
    # the run is dated from the process start, that second included, not from when the
    # recorder started (a lower bound: a busy machine only makes it longer)
    assert d >= 1.0, d


APP_PY = """\
from flask import Flask
app = Flask(__name__)

@app.route("/")
def index():
    return "hi"
"""


def test_flask_debug_reloader_children_are_not_runs(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP_PY)
    script = tmp_path / "tool.py"
    script.write_text(FLASK)
    env = {**os.environ, "USE_RAGE": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(script), "--app", "app", "run", "--debug", "--port", "0",
         "--reload"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL)
    try:
        children = RunStore().root / "flask"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not list(children.glob("runs/*/children/*")):
            time.sleep(0.1)
        app = tmp_path / "app.py"
        deadline = time.monotonic() + 45
        edits = 0
        while time.monotonic() < deadline and len(list(children.glob("runs/*/children/*"))) < 2:
            # the reloader restarts the child (exit 3) once it sees the file change; under
            # load the child may not watch yet when a first edit lands: edit again
            edits += 1
            app.write_text(APP_PY + f"\n# reload {edits}\n")
            os.utime(app, (time.time() + 5 * edits, time.time() + 5 * edits))
            step = time.monotonic() + 3
            while time.monotonic() < min(step, deadline) and len(
                    list(children.glob("runs/*/children/*"))) < 2:
                time.sleep(0.1)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (run_,) = runs("flask")  # one run: the user's invocation, not one per reload
    assert run_.status in {"interrupted", "ok"}, (run_.status, out)
    child_dirs = sorted((run_.dir / "children").iterdir())
    assert len(child_dirs) >= 2, out
    # a child the reloader kills on ^C keeps the "running" record written at its start
    infos = [json.loads((d / "child.json").read_text()) for d in child_dirs]
    assert any(i["exit_code"] == 3 for i in infos), infos  # the reload
    assert not any(r.status == "failed" and r.exit_code == 3 for r in runs("flask"))


YAMLLINT = """\
import os
from yamllint import __version__
from yamllint.cli import run
if os.environ.get("USE_RAGE", "1") == "1":
    import rage
    rage.install("yamllint", version=__version__)
run()
"""


@pytest.mark.parametrize(("text", "code", "status"), [
    ("a: 1\n", 0, "ok"),
    ("a: 1\na: 2\n", 1, "failed"),  # duplicated key: an error on stdout
])
def test_yamllint_argparse_tool(tmp_path: Path, text: str, code: int, status: str) -> None:
    (tmp_path / "f.yaml").write_text("---\n" + text)
    proc = both(tmp_path, YAMLLINT, "-f", "parsable", "f.yaml")
    assert proc.returncode == code
    run_ = only_run("yamllint")
    assert (run_.status, run_.exit_code) == (status, code)
    if code:
        assert b"duplication of key" in (run_.dir / "stdout.log").read_bytes()


def test_yamllint_usage_error(tmp_path: Path) -> None:
    proc = both(tmp_path, YAMLLINT, "--no-such-option")
    assert proc.returncode == 2 and b"yamllint: error:" in proc.stderr
    run_ = only_run("yamllint")
    assert (run_.status, run_.exit_code) == ("failed", 2)
    assert b"yamllint: error:" in (run_.dir / "stderr.log").read_bytes()


# -- an argparse tool: the example, which ends with `raise SystemExit(main())` ------------------
def test_argparse_example_records_the_real_status(tmp_path: Path) -> None:
    example = (ROOT / "examples" / "argparse_tool.py").read_text()
    proc = run(tmp_path, example, "hello", "there")
    assert (proc.returncode, proc.stdout) == (0, b"hello, there\n")
    proc = run(tmp_path, example, "nosuch")
    assert proc.returncode == 2
    proc = run(tmp_path, example, "fail")
    assert proc.returncode == 1 and b"crash was recorded" in proc.stderr
    got = sorted((r.status, r.exit_code) for r in runs("argparse_tool"))
    assert got == [("crashed", 1), ("failed", 2), ("ok", 0)]


@pytest.mark.parametrize(("stmt", "code"), [
    ("raise SystemExit(5)", 5), ("raise SystemExit", 0), ("raise SystemExit('bye')", 1),
    ("exit(6)", 6),
])
def test_bare_raise_system_exit(tmp_path: Path, stmt: str, code: int) -> None:
    src = "import rage\nrage.install('tool')\n" + stmt + "\n"
    proc = run(tmp_path, src)
    assert proc.returncode == code
    assert only_run("tool").exit_code == code


# -- signals ----------------------------------------------------------------------------------
CHATTY = """\
import os
if os.environ.get("USE_RAGE", "1") == "1":
    import rage
    rage.install("tool")
for i in range(100000):
    print("line", i)
"""


@pytest.mark.parametrize("unbuffered", [False, True])
def test_broken_pipe_is_treated_as_the_shell_would(tmp_path: Path, unbuffered: bool) -> None:
    script = tmp_path / "tool.py"
    script.write_text(CHATTY)

    def pipe(use_rage: str) -> subprocess.CompletedProcess[bytes]:
        env = {**os.environ, "USE_RAGE": use_rage}
        if unbuffered:
            env["PYTHONUNBUFFERED"] = "1"
        cmd = f"{sys.executable} {script} | head -1; echo status=${{PIPESTATUS[0]}} >&2"
        return subprocess.run(["bash", "-c", cmd], capture_output=True, env=env, timeout=60,
                              cwd=tmp_path, check=False)

    bare, proc = pipe("0"), pipe("1")
    assert proc.stdout == bare.stdout == b"line 0\n"
    assert proc.stderr == bare.stderr
    assert b"recorded" not in proc.stderr
    run_ = only_run("tool")
    assert (run_.status, run_.signal) == ("interrupted", signal.SIGPIPE)


def test_segfault_is_crashed_in_the_bundle_too(tmp_path: Path) -> None:
    src = ("import ctypes, sys, rage\nrage.install('tool')\nprint('before', file=sys.stderr)\n"
           "ctypes.string_at(0)\n")
    proc = run(tmp_path, src)
    assert proc.returncode == -signal.SIGSEGV
    run_ = only_run("tool")
    assert (run_.status, run_.signal, run_.meta["status"]) == (
        "crashed", signal.SIGSEGV, "crashed")
    out = tmp_path / "s.tar.zst"
    rep = subprocess.run(rage_cmd("report", "--app", "tool", "--last", "--yes", "--no-collect",
                                  "--output", str(out)), capture_output=True, timeout=60,
                         check=False)
    assert rep.returncode == 0, rep.stderr
    members = bundle_members(out)
    summary = next(v for k, v in members.items() if k.endswith("summary.md"))
    assert b"crashed" in summary and b"running" not in summary
    meta = json.loads(next(v for k, v in members.items() if k.endswith("run/meta.json")))
    assert meta["status"] == "crashed"
    assert b"before" in next(v for k, v in members.items() if k.endswith("stderr.log"))


# -- through a shim: the wrapper's run, not two ------------------------------------------------
def test_under_rage_run_the_tool_joins_the_wrappers_run(tmp_path: Path) -> None:
    src = textwrap.dedent("""\
        import logging, rage
        rage.install("tool", version="9.9")
        logging.getLogger("t").debug("inside")
        raise KeyError("boom")
        """)
    script = tmp_path / "tool.py"
    script.write_text(src)
    proc = subprocess.run(rage_cmd("run", "--app", "tool", "--", sys.executable, str(script)),
                          capture_output=True, timeout=60, cwd=tmp_path,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 1 and b"KeyError" in proc.stderr
    run_ = only_run("tool")
    assert run_.recorder == "wrapper"
    assert (run_.status, run_.exit_code, run_.app_version) == ("crashed", 1, "9.9")
    assert "KeyError" in (run_.dir / "traceback.txt").read_text()
    assert "inside" in (run_.dir / "log.jsonl").read_text()
    assert b"KeyError" in (run_.dir / "stderr.log").read_bytes()


def test_the_next_run_says_an_earlier_run_crashed_once(tmp_path: Path) -> None:
    crash = "import ctypes, rage\nrage.install('tool')\nctypes.string_at(0)\n"
    assert run(tmp_path, crash).returncode == -signal.SIGSEGV
    crashed = only_run("tool")
    fine = "import rage\nrage.install('tool')\nprint('ok')\n"
    proc = run(tmp_path, fine)
    assert proc.returncode == 0 and proc.stdout == b"ok\n"
    assert proc.stderr == (b"tool: an earlier run crashed (Segmentation fault); to report it"
                           b" run: rage report " + crashed.short_id.encode() + b"\n")
    assert run(tmp_path, fine).stderr == b""  # said once


FAKE_WRAPPER = """\
# stands in for `rage run`, writing its record only after the tool has started, so the
# tool must find it at exit (the name holds "rage" and argv "run", as the real one's does)
import os, subprocess, sys
from rage.paths import home_root_str
from rage.record.store import start_run
r, w = os.pipe()
child = subprocess.Popen([sys.executable, sys.argv[2], str(w)], pass_fds=[w])
os.close(w)
os.read(r, 1)  # the tool has installed rage and found no wrapper record
rec = start_run(home_root_str(), "tool", ["tool"], recorder="wrapper", pid=child.pid,
                extra={"wrapper_pid": os.getpid()})
os.write(1, b"recorded\\n")
code = child.wait()
rec.finish_meta(exit_code=code)
sys.exit(code)
"""

LATE_TOOL = """\
import logging, os, sys
import rage
rec = rage.install("tool", version="7.0")
assert rec.mode == "own", rec.mode
logging.getLogger("t").warning("before the wrapper wrote its record")
os.write(int(sys.argv[1]), b"x")
import time
time.sleep(1.0)
raise RuntimeError("late")
"""


def test_the_wrappers_record_written_after_start_is_joined_at_exit(tmp_path: Path) -> None:
    wrapper = tmp_path / "fake_rage_wrapper.py"
    wrapper.write_text(FAKE_WRAPPER)
    (tmp_path / "late_tool.py").write_text(LATE_TOOL)
    proc = subprocess.run([sys.executable, str(wrapper), "run", str(tmp_path / "late_tool.py")],
                          capture_output=True, timeout=60, cwd=tmp_path, check=False,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 1 and proc.stdout == b"recorded\n", proc.stderr
    run_ = only_run("tool")  # the tool's own run was folded into the wrapper's
    assert run_.recorder == "wrapper"
    assert (run_.status, run_.exit_code, run_.app_version) == ("crashed", 1, "7.0")
    assert "late" in (run_.dir / "traceback.txt").read_text()
    assert "before the wrapper" in (run_.dir / "log.jsonl").read_text()
    assert not (run_.dir / "joined.json").exists()


def test_a_crash_under_rage_run_is_hinted_by_the_wrapper_only(tmp_path: Path) -> None:
    crash = tmp_path / "crash.py"
    crash.write_text("import ctypes, rage\nrage.install('tool')\nctypes.string_at(0)\n")
    proc = subprocess.run(rage_cmd("run", "--app", "tool", "--", sys.executable, str(crash)),
                          capture_output=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == -signal.SIGSEGV and b"crashed (SIGSEGV)" in proc.stderr
    assert only_run("tool").status == "crashed"
    fine = run(tmp_path, "import rage\nrage.install('tool')\n")
    assert fine.stderr == b""  # the wrapper already said it


def test_through_a_real_shim_one_run(tmp_path: Path) -> None:
    from tests.conftest import run_rage

    real_dir, shim_dir = tmp_path / "bin", tmp_path / "shims"
    real_dir.mkdir()
    tool = real_dir / "mytool"
    tool.write_text(f"#!{sys.executable}\nimport logging, sys, rage\n"
                    "rage.install('mytool', version='4.2')\n"
                    "logging.getLogger('m').info('via the shim')\nsys.exit(5)\n")
    tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{shim_dir}{os.pathsep}{real_dir}{os.pathsep}"
           + os.environ.get("PATH", "")}
    assert run_rage("shim", "install", "mytool", "--dir", str(shim_dir), env=env).returncode == 0
    proc = subprocess.run(["mytool"], env=env, capture_output=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 5, proc.stderr
    run_ = only_run("mytool")
    assert (run_.recorder, run_.status, run_.exit_code, run_.app_version) == (
        "wrapper", "failed", 5, "4.2")
    assert "via the shim" in (run_.dir / "log.jsonl").read_text()
