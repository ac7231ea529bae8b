"""`rage run` start-up cost: what the wrapper imports, and the cheap paths standing in for
heavier modules (XDG dirs instead of platformdirs, a JSON writer instead of json, defaults
without a config file). Regressions show up as imported modules, never as timings."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rage import paths
from rage.config import Settings
from rage.fsutil import dumps_json
from rage.record.capture import Truncation
from rage.record.runid import is_run_id, new_run_id
from rage.record.shims import run_argv
from rage.record.store import RecordingSettings, recording_settings
from tests.conftest import rage_cmd

# never imported by `rage run` (pipe mode, no config file, no --attach) on top of what the
# interpreter and `import rage` already import
HEAVY = {"click", "requests", "zstandard", "psutil", "platformdirs", "json", "dataclasses",
         "pathlib", "datetime", "tomllib", "threading", "shutil", "secrets", "glob", "inspect",
         "typing", "re", "enum", "contextlib", "signal", "subprocess", "tempfile",
         "rage.record.history", "rage.config", "rage.errors", "rage.cli.main"}

# the hint names the run's own short id, which `rage report` accepts
HINT = re.compile(rb"rage: sh failed \(exit 5\); to report it: rage report [0-9a-f]{8}\n")


def imported(argv: list[str], env: dict[str, str]
             ) -> tuple[set[str], subprocess.CompletedProcess[bytes]]:
    """Run ``argv`` (a python command line) under ``-X importtime``; the modules it imported."""
    proc = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], env=env,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=60, check=False)
    mods = set()
    for line in proc.stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line and "imported package" not in line:
            mods.add(line.rsplit("|", 1)[1].strip())
    return mods, proc


def xdg_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAGE_", "ANDROID_", "PYTHONDONTWRITE"))}
    env["RAGE_HOME"] = str(tmp_path / "home")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg-config")  # no config file there yet
    return env


def config_path(tmp_path: Path) -> Path:
    """Where rage looks for the config file with :func:`xdg_env`."""
    d = tmp_path / "xdg-config" / "rage"
    d.mkdir(parents=True, exist_ok=True)
    return d / "config.toml"


def recorded(home: Path, app: str) -> list[dict[str, object]]:
    runs = home / app / "runs"
    return [json.loads((d / "meta.json").read_text()) for d in sorted(runs.iterdir())]


@pytest.mark.parametrize("via", ["shim", "python -m rage"])
def test_run_imports_nothing_heavy(tmp_path: Path, via: str) -> None:
    env = xdg_env(tmp_path)
    if via == "shim":
        argv = run_argv()
        code = argv[-1].replace("from rage.__main__ import main; main()", "import rage")
        assert code != argv[-1]
        baseline = [*argv[:-1], code]
    else:
        argv, baseline = rage_cmd(), [sys.executable, "-c", "import rage, runpy"]
    base, done = imported(baseline, env)
    assert done.returncode == 0 and "rage" in base, done.stderr
    # the first run of an app makes a full retention pass (then at most hourly): not this one
    first, proc = imported([*argv, "run", "--", "true"], env)
    assert proc.returncode == 0 and "rage.record.history" in first
    mods, proc = imported([*argv, "run", "--app", "true", "--", "sh", "-c", "echo out; exit 3"],
                          env)
    assert proc.returncode == 3 and proc.stdout == b"out\n"
    [meta] = [m for m in recorded(tmp_path / "home", "true") if m["argv"] != ["true"]]
    assert meta["status"] == "failed" and meta["exit_code"] == 3
    # the parse found the real path
    assert "rage.record.wrapper" in mods and "rage.record.relay" in mods
    assert sorted((mods - base) & HEAVY) == []


def test_run_without_rage_home_uses_xdg_not_platformdirs(tmp_path: Path) -> None:
    env = xdg_env(tmp_path)
    del env["RAGE_HOME"]
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    mods, proc = imported([*run_argv(), "run", "--", "true"], env)
    assert proc.returncode == 0, proc.stderr
    assert "platformdirs" not in mods
    assert len(recorded(tmp_path / "state" / "rage", "true")) == 1


def test_settings_from_env_and_config_file_still_apply(tmp_path: Path) -> None:
    env = xdg_env(tmp_path)
    cfg = config_path(tmp_path)
    cfg.write_text('[app.sh]\nhint_on_failure = true\n')
    argv = [*run_argv(), "run", "--", "sh", "-c", "exit 5"]
    proc = subprocess.run(argv, env=env, capture_output=True, timeout=60, check=False)
    assert proc.returncode == 5
    assert HINT.fullmatch(proc.stderr), proc.stderr
    cfg.unlink()
    env["RAGE_DISABLE"] = "1"
    proc = subprocess.run(argv, env=env, capture_output=True, timeout=60, check=False)
    assert proc.returncode == 5 and proc.stderr == b""
    assert len(recorded(tmp_path / "home", "sh")) == 1  # the disabled run left no record
    env["RAGE_DISABLE"] = "maybe"
    proc = subprocess.run(argv, env=env, capture_output=True, timeout=60, check=False)
    assert proc.returncode == 5
    assert b"rage: warning: environment: disable: not a boolean" in proc.stderr
    assert len(recorded(tmp_path / "home", "sh")) == 2


def test_settings_cache_follows_the_config_file(tmp_path: Path) -> None:
    env = xdg_env(tmp_path)
    cfg = config_path(tmp_path)
    argv = [*run_argv(), "run", "--", "sh", "-c", "exit 5"]

    def stderr() -> bytes:
        proc = subprocess.run(argv, env=env, capture_output=True, timeout=60, check=False)
        assert proc.returncode == 5
        return proc.stderr

    cfg.write_text("[app.sh]\nhint_on_failure = true \n")
    assert HINT.fullmatch(stderr())
    mods, _ = imported(argv, env)  # answered from the cache this time
    assert "rage.config" not in mods and "tomllib" not in mods
    assert HINT.fullmatch(stderr())
    cfg.write_text("[app.sh]\nhint_on_failure = false\n")  # same size, new times
    assert stderr() == b""
    env["RAGE_HINT_ON_FAILURE"] = "1"
    assert HINT.fullmatch(stderr())
    cfg.write_text("[app.sh]\nbogus = 1\n")
    assert b"unknown setting 'bogus'" in stderr()
    assert b"unknown setting 'bogus'" in stderr()  # the cached answer keeps the warning
    assert (tmp_path / "home" / "sh" / ".settings-cache").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("value", ["1", " TRUE ", "yes", "On"])
def test_rage_disable_alone_needs_no_config_loader(tmp_path: Path, value: str) -> None:
    env = {**xdg_env(tmp_path), "RAGE_DISABLE": value}
    mods, proc = imported([*run_argv(), "run", "--", "sh", "-c", "exit 4"], env)
    assert proc.returncode == 4 and b"rage:" not in proc.stderr
    assert "rage.config" not in mods and "rage.record.relay" not in mods
    assert not (tmp_path / "home").exists()


def test_recording_defaults_are_the_settings_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    got, warning = recording_settings("app")
    assert warning is None
    want = Settings()
    for name in RecordingSettings.__slots__:
        assert getattr(got, name) == getattr(want, name), name
    monkeypatch.setenv("RAGE_MAX_RUNS", "7")
    assert recording_settings("app")[0].max_runs == 7
    monkeypatch.setenv("RAGE_MAX_RUNS", "seven")
    got, warning = recording_settings("app")
    assert got.max_runs == want.max_runs and warning is not None and "max_runs" in warning


@pytest.mark.parametrize("env", [
    {},
    {"XDG_STATE_HOME": "/x/state", "XDG_CONFIG_HOME": "/x/config"},
    {"XDG_STATE_HOME": "relative", "XDG_CONFIG_HOME": ""},
    {"HOME": "relative-home"},
    {"HOME": "/"},
])
def test_xdg_rule_matches_platformdirs(monkeypatch: pytest.MonkeyPatch,
                                       env: dict[str, str]) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the XDG rule is applied directly on Linux only")
    import platformdirs

    for var in ("RAGE_HOME", "RAGE_CONFIG", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert paths.home_root() == Path(platformdirs.user_state_dir("rage", appauthor=False))
    assert paths.config_file() == (Path(platformdirs.user_config_dir("rage", appauthor=False))
                                   / "config.toml")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (st.lists(inner, max_size=4) | st.tuples(inner, inner)
                   | st.dictionaries(st.text() | st.integers() | st.floats() | st.booleans()
                                     | st.none(), inner, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_dumps_json_is_json_dumps(value: object) -> None:
    assert dumps_json(value) == json.dumps(value, indent=2, default=str)


def test_dumps_json_falls_back_to_str() -> None:
    value = {"p": Path("/a b"), "s": {1}, "n": [float("nan"), float("-inf")]}
    assert dumps_json(value) == json.dumps(value, indent=2, default=str)
    with pytest.raises(TypeError):
        dumps_json({(1, 2): 3})


def test_app_names_and_run_ids_without_regexes() -> None:
    import re

    app_re = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]{0,99}")
    for name in ["git", "a.b+c-d_e", "_x", "x" * 100, "x" * 101, ".hidden", "-x", "+x", "",
                 "a/b", "a b", "ä", "a\n", "٣"]:
        assert paths.is_app_name(name) == bool(app_re.fullmatch(name)), name
    assert paths.app_name_from_command("/usr/bin/ä b.sh") == "__b.sh"
    assert paths.app_name_from_command("...x") == "x"
    assert is_run_id(new_run_id())
    # a fixed id: a random suffix of digits alone would make rid.upper() == rid (2% of runs)
    rid = new_run_id(0.0)[:-8] + "0a1b2c3d"
    assert is_run_id(rid) and rid.upper() != rid
    for bad in [rid + "\n", rid.upper(), rid[:-1], rid.replace("T", "X"), "٣" * 8 + rid[8:]]:
        assert not is_run_id(bad), bad


def test_truncation_is_immutable_plain_data() -> None:
    t = Truncation("output.log", 10, 2)
    assert t == Truncation("output.log", 10, 2) and t != Truncation("output.log", 10, 3)
    assert hash(t) == hash(Truncation("output.log", 10, 2))
    assert repr(t) == "Truncation(name='output.log', total_bytes=10, dropped_bytes=2)"
    assert t.to_dict() == {"name": "output.log", "total_bytes": 10, "dropped_bytes": 2}
    with pytest.raises(AttributeError):
        t.name = "x"


def test_second_run_imports_only_what_it_records_with(tmp_path: Path) -> None:
    # from the second run the verdicts on the names come from the cache, and so does PWD's
    # value (a secret-looking name whose value, a path, is kept in clear); a command on
    # pipes needs no session leader, no terminal job control and no lock probe, and
    # retention under its limits no module of its own (two stats)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "PWD": str(tmp_path), "RAGE_HOME": str(tmp_path / "home"),
           "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    argv = [*run_argv(), "run", "--", "sh", "-c", "echo out"]
    first, proc = imported(argv, env)
    assert proc.returncode == 0 and proc.stdout == b"out\n", proc.stderr
    assert "rage.sensitive" in first
    mods, proc = imported(argv, env)
    assert proc.returncode == 0 and proc.stdout == b"out\n", proc.stderr
    assert "rage.record.relay" in mods
    assert sorted(mods & {"rage.sensitive", "rage.record.session", "rage.record.runlock",
                          "rage.termjob", "rage.record.prune"}) == []
    assert len(recorded(tmp_path / "home", "sh")) == 2


def test_config_on_dev_null_is_no_config(tmp_path: Path) -> None:
    # RAGE_CONFIG=/dev/null reads as an empty file: the defaults, with neither the config
    # loader nor a settings cache
    env = {**xdg_env(tmp_path), "RAGE_CONFIG": os.devnull}
    for _ in range(2):
        mods, proc = imported([*run_argv(), "run", "--", "sh", "-c", "exit 4"], env)
        assert proc.returncode == 4 and proc.stderr.count(b"rage:") == 0, proc.stderr
        assert "rage.config" not in mods
    assert not (tmp_path / "home" / "sh" / ".settings-cache").exists()
    assert len(recorded(tmp_path / "home", "sh")) == 2
