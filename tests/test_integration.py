"""rage.install() in real Python processes: logging, crash hooks, exit codes, fatal signals.

Every test writes a small script into tmp_path and runs it with the test interpreter; the
autouse fixture's RAGE_HOME is inherited, so the runs land in this test's own history.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rage.record.history import Run, RunStore

APP = "tool"

PRELUDE = """\
import logging, os, sys, threading
if os.environ.get("USE_RAGE", "1") == "1":
    import rage
    rage.install("tool", version="1.2")
log = logging.getLogger("tool.core")
"""


def run_script(tmp_path: Path, body: str, *args: str, use_rage: bool = True,
               env: dict[str, str] | None = None, name: str = "tool.py",
               prelude: str = PRELUDE) -> subprocess.CompletedProcess[bytes]:
    script = tmp_path / name
    script.write_text(prelude + textwrap.dedent(body))
    full_env = {**os.environ, "USE_RAGE": "1" if use_rage else "0", **(env or {})}
    return subprocess.run([sys.executable, str(script), *args], capture_output=True,
                          env=full_env, cwd=tmp_path, timeout=60, check=False,
                          stdin=subprocess.DEVNULL)


def only_run(app: str = APP) -> Run:
    runs = RunStore().list(app).runs
    assert len(runs) == 1, runs
    return runs[0]


def log_records(run: Run) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run.dir / "log.jsonl").read_text().splitlines()]


LEVELS_BODY = """
log.debug("debug %d", 1)
log.info("info %d", 2)
log.warning("warning %d", 3)
log.error("error %d", 4)
print("stdout line")
"""


@pytest.mark.parametrize("config", [
    "",  # no handlers at all: Python's lastResort prints WARNING+ bare on stderr
    "logging.basicConfig(level=logging.INFO, format='%(levelname)s:%(name)s:%(message)s')",
    "logging.basicConfig(format='%(levelname)s %(message)s')",  # root stays at WARNING
    # a handler on the app's logger that relied on the root level to drop DEBUG
    "h = logging.StreamHandler(sys.stdout); log.addHandler(h); log.propagate = False",
    "logging.getLogger().setLevel(logging.DEBUG); logging.basicConfig()",
])
def test_console_output_is_unchanged_and_debug_is_recorded(tmp_path: Path, config: str) -> None:
    body = config + "\n" + LEVELS_BODY
    bare = run_script(tmp_path, body, use_rage=False)
    recorded = run_script(tmp_path, body)
    assert (recorded.returncode, recorded.stdout, recorded.stderr) == (
        bare.returncode, bare.stdout, bare.stderr)
    run = only_run()
    assert run.status == "ok" and run.exit_code == 0 and run.recorder == "python"
    assert run.app_version == "1.2"
    recs = log_records(run)
    assert [(r["level"], r["msg"]) for r in recs] == [
        ("DEBUG", "debug 1"), ("INFO", "info 2"), ("WARNING", "warning 3"), ("ERROR", "error 4")]
    assert all(r["logger"] == "tool.core" and isinstance(r["t"], float) for r in recs)
    assert stat.S_IMODE((run.dir / "log.jsonl").stat().st_mode) == 0o600


def test_argv_and_meta(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "pass\n", "a b", "--flag")
    assert proc.returncode == 0, proc.stderr
    run = only_run()
    assert run.argv == (str(tmp_path / "tool.py"), "a b", "--flag")
    assert run.pid is not None and run.duration_s is not None
    assert run.meta["peak_rss_bytes"] > 0
    assert not (run.dir / "fatal.log").exists()  # removed when empty


def test_uncaught_exception(tmp_path: Path) -> None:
    body = """
    log.error("about to fail")
    def inner():
        raise ValueError("bad value 42")
    inner()
    """
    bare = run_script(tmp_path, body, use_rage=False)
    proc = run_script(tmp_path, body)
    assert proc.returncode == bare.returncode == 1
    err = proc.stderr.decode()
    run = only_run()
    hint = f"tool: this crash was recorded; to report it run: rage report {run.short_id}\n"
    # Python's own output is untouched, the hint comes after it
    assert err == bare.stderr.decode() + hint
    assert run.status == "crashed" and run.exit_code == 1
    tb = (run.dir / "traceback.txt").read_text()
    assert "Traceback (most recent call last)" in tb and "ValueError: bad value 42" in tb
    assert 'in inner' in tb
    assert stat.S_IMODE((run.dir / "traceback.txt").stat().st_mode) == 0o600
    assert [r["msg"] for r in log_records(run)] == ["about to fail"]


def test_crash_is_recorded_even_if_a_later_excepthook_does_not_chain(tmp_path: Path) -> None:
    body = """
    sys.excepthook = lambda t, v, tb: print("custom hook:", v, file=sys.stderr)
    raise LookupError("no such thing")
    """
    proc = run_script(tmp_path, body)
    assert proc.returncode == 1
    assert proc.stderr == b"custom hook: no such thing\n"
    run = only_run()
    assert run.status == "crashed" and run.exit_code == 1
    assert "LookupError: no such thing" in (run.dir / "traceback.txt").read_text()


def test_exception_in_thread_is_recorded(tmp_path: Path) -> None:
    body = """
    def work():
        raise RuntimeError("worker died")
    t = threading.Thread(target=work, name="worker-1")
    t.start(); t.join()
    print("main goes on")
    """
    proc = run_script(tmp_path, body)
    assert proc.returncode == 0
    assert proc.stdout == b"main goes on\n"
    assert b"RuntimeError: worker died" in proc.stderr  # Python's thread report still shown
    run = only_run()
    assert run.status == "ok"
    assert run.meta["thread_exceptions"] == 1
    tb = (run.dir / "traceback.txt").read_text()
    assert "Exception in thread worker-1" in tb and "RuntimeError: worker died" in tb


@pytest.mark.parametrize(("stmt", "code", "status"), [
    ("sys.exit(4)", 4, "failed"),
    ("sys.exit('giving up')", 1, "failed"),
    ("sys.exit()", 0, "ok"),
    ("sys.exit(0)", 0, "ok"),
    ("pass", 0, "ok"),
])
def test_exit_codes(tmp_path: Path, stmt: str, code: int, status: str) -> None:
    proc = run_script(tmp_path, stmt + "\n")
    assert proc.returncode == code
    run = only_run()
    assert (run.status, run.exit_code) == (status, code)
    assert b"crash was recorded" not in proc.stderr


def test_segfault_leaves_fatal_log_and_dies_of_the_signal(tmp_path: Path) -> None:
    body = """
    import ctypes
    for i in range(50):
        log.debug("step %d", i)
    log.error("last words before the crash")
    ctypes.string_at(0)
    """
    proc = run_script(tmp_path, body)
    assert proc.returncode == -signal.SIGSEGV
    run = only_run()
    fatal = (run.dir / "fatal.log").read_text()
    assert "Fatal Python error: Segmentation fault" in fatal
    assert "tool.py" in fatal  # the Python stack of the crashing thread
    assert run.status == "crashed"
    assert run.signal == signal.SIGSEGV
    # records up to the ERROR were flushed before the process died
    msgs = [r["msg"] for r in log_records(run)]
    assert msgs[-1] == "last words before the crash" and len(msgs) == 51


def test_records_after_a_quiet_spell_are_on_disk_before_a_segfault(tmp_path: Path) -> None:
    body = """
    import ctypes, time
    log.debug("started")
    time.sleep(1.2)
    log.debug("calling into C")
    ctypes.string_at(0)
    """
    proc = run_script(tmp_path, body)
    assert proc.returncode == -signal.SIGSEGV
    assert [r["msg"] for r in log_records(only_run())] == ["started", "calling into C"]


def test_keyboard_interrupt_is_interrupted_without_hint(tmp_path: Path) -> None:
    body = """
    import signal
    log.info("waiting")
    os.kill(os.getpid(), signal.SIGINT)  # a real SIGINT, as from Ctrl-C
    """
    bare = run_script(tmp_path, body, use_rage=False)
    proc = run_script(tmp_path, body)
    assert proc.returncode == bare.returncode == -signal.SIGINT
    assert proc.stderr == bare.stderr
    assert b"KeyboardInterrupt" in proc.stderr and b"recorded" not in proc.stderr
    run = only_run()
    assert run.status == "interrupted" and run.signal == signal.SIGINT


def test_rage_disable_writes_nothing(tmp_path: Path, rage_home: Path) -> None:
    body = LEVELS_BODY + "raise SystemExit(3)\n"
    bare = run_script(tmp_path, body, use_rage=False)
    proc = run_script(tmp_path, body, env={"RAGE_DISABLE": "1"})
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        bare.returncode, bare.stdout, bare.stderr)
    assert not rage_home.exists()


def test_disable_in_config_file(tmp_path: Path, rage_home: Path, config_file: Path) -> None:
    config_file.write_text("[app.tool]\ndisable = true\n")
    proc = run_script(tmp_path, "print(rage.install('tool').enabled)\n")
    assert proc.stdout == b"False\n" and proc.stderr == b""
    assert not rage_home.exists()


@pytest.mark.parametrize("body", [LEVELS_BODY, LEVELS_BODY + "raise KeyError('x')\n"])
def test_unwritable_history_changes_nothing_but_one_warning(tmp_path: Path, body: str) -> None:
    bare = run_script(tmp_path, body, use_rage=False)
    proc = run_script(tmp_path, body, env={"RAGE_HOME": "/dev/null/x"})
    assert proc.returncode == bare.returncode
    assert proc.stdout == bare.stdout
    warning, rest = proc.stderr.split(b"\n", 1)
    assert warning.startswith(b"tool: rage: not recording this run (")
    assert rest == bare.stderr


def test_install_is_idempotent(tmp_path: Path) -> None:
    body = """
    again = rage.install("tool", version="9")
    print(again is rage.install("other"), again.enabled, again.version)
    """
    proc = run_script(tmp_path, body)
    assert proc.stdout == b"True True 1.2\n", proc.stderr
    assert len(RunStore().list(APP).runs) == 1
    assert RunStore().list("other").runs == []


def test_redacted_value_never_reaches_disk(tmp_path: Path) -> None:
    body = """
    token = "tok-" + "s3cr3t-a1b2c3d4e5"
    rage.redact_value(token)
    log.debug("using token %s", token)
    try:
        raise PermissionError("rejected " + token)
    except PermissionError:
        log.exception("auth failed")
    raise RuntimeError("token " + token + " expired")
    """
    proc = run_script(tmp_path, body)
    assert proc.returncode == 1
    assert b"tok-s3cr3t-a1b2c3d4e5" in proc.stderr  # the console is the user's own
    run = only_run()
    for name in ("log.jsonl", "traceback.txt"):
        text = (run.dir / name).read_text()
        assert "s3cr3t-a1b2c3d4e5" not in text, name
    assert "auth failed" in (run.dir / "log.jsonl").read_text()
    assert "expired" in (run.dir / "traceback.txt").read_text()


def test_install_imports_no_heavy_modules(tmp_path: Path) -> None:
    body = """
    heavy = ("click", "requests", "zstandard", "psutil")
    print(sorted(m for m in heavy if m in sys.modules))
    """
    proc = run_script(tmp_path, body)
    assert proc.stdout == b"[]\n", proc.stderr


def test_the_end_of_a_run_loads_no_retention_module_when_none_is_due(tmp_path: Path) -> None:
    # registered before install, so it runs after rage's own exit handler
    prelude = ("import atexit, sys\n"
               "atexit.register(lambda: print(sorted(m for m in sys.modules\n"
               "    if m in ('rage.record.prune', 'rage.record.retention')), flush=True))\n"
               "import rage\nrage.install('tool', version='1.2')\n")
    first = run_script(tmp_path, "print('one')\n", prelude=prelude)  # the first full pass
    second = run_script(tmp_path, "print('two')\n", prelude=prelude)
    assert first.stdout.splitlines()[0] == b"one" and second.stdout == b"two\n[]\n", (
        second.stdout, second.stderr)
    assert len(RunStore().list(APP).runs) == 2


def test_site_listing_ids_are_remembered_not_hashed_again(tmp_path: Path) -> None:
    # a run whose environment holds no secret needs no _blake2 (an extension module, ~0.4M
    # instructions) once its site directories' listing ids are in the cache: the same ids
    from rage.record.context import _listing_id
    from rage.sensitive import looks_secret_name

    script = tmp_path / "hello.py"
    script.write_text("import sys\nimport rage\nrage.install('tool', version='1')\n"
                      "print('_blake2' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if not looks_secret_name(k)}
    outs = [subprocess.run([sys.executable, str(script)], capture_output=True, cwd=tmp_path,
                           env=env, timeout=60, check=True).stdout for _ in range(2)]
    assert outs == [b"True\n", b"False\n"]
    runs = RunStore().list("tool").runs
    assert len(runs) == 2
    fingerprints = [r.meta["fingerprint"]["python"]["sites"] for r in runs]
    assert fingerprints[0] == fingerprints[1] and fingerprints[0]
    for site, mtime, lid in fingerprints[0]:
        assert lid == _listing_id(site, mtime)


def test_import_rage_alone_imports_nothing_else_of_rage() -> None:
    # `import rage` in a tool that never calls install (or before it does) costs its two
    # small modules: the API's functions import what they need when called
    code = ("import sys\nbefore = set(sys.modules)\nimport rage\n"
            "print(sorted(set(sys.modules) - before - {'__future__'}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60,
                          check=False)
    assert proc.stdout == b"['rage', 'rage._version']\n", proc.stderr


def test_log_is_capped_keeping_head_and_tail(tmp_path: Path) -> None:
    body = """
    for i in range(2000):
        log.debug("record %05d %s", i, "x" * 40)
    """
    proc = run_script(tmp_path, body, env={"RAGE_OUTPUT_CAP": "16KiB"})
    assert proc.returncode == 0
    run = only_run()
    data = (run.dir / "log.jsonl").read_bytes()
    assert len(data) <= 16 * 1024 + 300
    recs = log_records(run)  # every line is still valid JSON
    assert str(recs[0]["msg"]).startswith("record 00000")
    assert str(recs[-1]["msg"]).startswith("record 01999")
    markers = [r for r in recs if r["level"] == "RAGE"]
    assert len(markers) == 1 and "dropped" in str(markers[0]["msg"])
    (trunc,) = run.meta["truncation"]
    assert trunc["name"] == "log.jsonl" and trunc["dropped_bytes"] > 0


def test_broken_config_warns_and_still_records(tmp_path: Path, config_file: Path) -> None:
    config_file.write_text("[default\n")
    proc = run_script(tmp_path, "print('hi')\n")
    assert proc.stdout == b"hi\n"
    assert proc.stderr.startswith(b"tool: rage: invalid config")
    assert proc.stderr.count(b"\n") == 1
    assert only_run().status == "ok"


def test_bad_options_are_programming_errors() -> None:
    from rage.integration.recorder import install, split_options

    with pytest.raises(TypeError, match="no_such_option"):
        split_options({"no_such_option": 1})
    with pytest.raises(ValueError, match="invalid app name"):
        install("../escape")
    defaults, collectors = split_options(
        {"upload_url": "https://x.example/", "collectors": ["git", object]})
    assert defaults == {"upload_url": "https://x.example/", "collectors": ("git",)}
    assert collectors == (object,)


def test_invalid_app_default_value_is_value_error(tmp_path: Path) -> None:
    prelude = "import rage\n"
    body = """
    try:
        rage.install("tool", output_cap="lots")
    except ValueError as e:
        print("ValueError", "output_cap" in str(e))
    """
    proc = run_script(tmp_path, body, prelude=prelude)
    assert proc.stdout == b"ValueError True\n", proc.stderr


def test_forked_child_does_not_finish_the_parents_run(tmp_path: Path) -> None:
    body = """
    pid = os.fork()
    if pid == 0:
        log.error("child logs")  # ERROR flushes at once: it would land in the run's log
        sys.exit(7)  # a normal interpreter exit in the child runs atexit too
    _, status = os.waitpid(pid, 0)
    log.debug("parent logs")
    print("child exit", os.waitstatus_to_exitcode(status))
    """
    proc = run_script(tmp_path, body)
    assert proc.stdout == b"child exit 7\n" and proc.returncode == 0
    assert proc.stderr == b"child logs\n"  # the child's console is untouched
    run = only_run()
    assert (run.status, run.exit_code) == ("ok", 0)
    assert [r["msg"] for r in log_records(run)] == ["parent logs"]


def test_hint_on_failure_setting(tmp_path: Path) -> None:
    proc = run_script(tmp_path, "sys.exit(2)\n", env={"RAGE_HINT_ON_FAILURE": "1"})
    assert proc.returncode == 2
    assert proc.stderr == (b"tool: this run failed (exit 2); to report it run: "
                           b"rage report " + only_run().short_id.encode() + b"\n")


def test_option_names_match_the_settings() -> None:
    import dataclasses

    from rage.config import Settings, load_settings
    from rage.errors import ConfigError
    from rage.integration.options import RECORDING_NAMES, SETTING_NAMES
    from rage.record.store import RecordingSettings

    assert {f.name for f in dataclasses.fields(Settings)} == SETTING_NAMES
    assert set(RecordingSettings.__slots__) == RECORDING_NAMES
    # the full loader still validates recording app defaults
    with pytest.raises(ConfigError, match=r"^app defaults: output_cap: not a size: 'lots'"):
        load_settings("tool", app_defaults={"output_cap": "lots"})


@pytest.mark.parametrize(("stmt", "code"), [("raise SystemExit(4)", 4), ("raise SystemExit", 0)])
def test_bare_system_exit_is_recorded(tmp_path: Path, stmt: str, code: int) -> None:
    proc = run_script(tmp_path, stmt + "\n")
    assert proc.returncode == code
    assert only_run().exit_code == code


def test_install_path_imports_almost_nothing(tmp_path: Path) -> None:
    # start-up is measured in bench/bench_integration.py; this guards what makes it cheap
    prelude = "import sys\nimport rage\nrage.install('tool')\n"
    body = """
    lazy = ("logging", "dataclasses", "json", "rage.config", "rage.record.history",
            "rage.integration.loghandler", "traceback", "pathlib")
    print(sorted(m for m in lazy if m in sys.modules and m not in before))
    """
    pre = "import sys\nbefore = set(sys.modules)\n"
    proc = run_script(tmp_path, body, prelude=pre + prelude)
    assert proc.stdout == b"[]\n", proc.stderr


def test_logging_imported_after_install_is_recorded(tmp_path: Path) -> None:
    prelude = "import rage\nrage.install('tool')\n"
    body = """
    import importlib.util
    assert importlib.util.find_spec("logging") is not None  # looking is not importing
    import logging
    logging.getLogger("late").debug("recorded although logging came after install")
    """
    proc = run_script(tmp_path, body, prelude=prelude)
    assert proc.returncode == 0 and proc.stderr == b""
    assert [r["msg"] for r in log_records(only_run())] == [
        "recorded although logging came after install"]


def test_except_system_exit_still_catches_every_exit(tmp_path: Path) -> None:
    prelude = "import sys\nfrom sys import exit\n" + PRELUDE  # taken before install
    body = """
    import pickle
    caught = []
    for how in (lambda: sys.exit(3), lambda: exit(4), lambda: sys.exit(),
                lambda: sys.exit((5, 6))):
        try:
            how()
        except SystemExit as e:
            caught.append((e.code, e.args, type(e) is SystemExit, repr(e)))
    try:
        raise SystemExit(7)
    except SystemExit as e:
        caught.append((e.code, pickle.loads(pickle.dumps(e)).code))
    print(caught)
    """
    bare = run_script(tmp_path, body, prelude=prelude, use_rage=False)
    proc = run_script(tmp_path, body, prelude=prelude)
    assert proc.returncode == bare.returncode == 0, proc.stderr
    assert proc.stdout == bare.stdout


def test_a_thread_s_own_exit_is_caught_as_without_rage(tmp_path: Path) -> None:
    """`_thread.exit()` raises SystemExit from C: `except SystemExit` in the thread must
    still catch it (it did not: the handler named rage's subclass)."""
    body = """
    import _thread
    def work():
        try:
            _thread.exit()
        except SystemExit as e:
            print("caught", type(e).__name__, type(e) is SystemExit, flush=True)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    print("done")
    """
    bare = run_script(tmp_path, body, use_rage=False)
    proc = run_script(tmp_path, body)
    assert bare.stdout == b"caught SystemExit True\ndone\n"
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        bare.returncode, bare.stdout, bare.stderr)


def test_exits_in_threads_stay_silent(tmp_path: Path) -> None:
    body = """
    def work(how):
        if how == "exit":
            sys.exit(3)
        raise SystemExit(4)
    for how in ("exit", "raise"):
        t = threading.Thread(target=work, args=(how,))
        t.start()
        t.join()
    print("done")
    """
    bare = run_script(tmp_path, body, use_rage=False)
    proc = run_script(tmp_path, body)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"done\n", b"") == (
        bare.returncode, bare.stdout, bare.stderr)
    assert only_run().exit_code == 0  # a thread's exit is not the process's
