"""The run store under hostile or damaged conditions: planted symlinks, damaged records,
unbounded or absurd configuration. Real `rage` processes on real files throughout."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
from pathlib import Path

import pytest

from rage.record.store import recording_settings
from tests.conftest import run_rage

NOBODY = 65534


def record(app: str = "mytool", *cmd: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return run_rage("run", "--app", app, "--", *(cmd or ("true",)), **kw)


def runs_of(home: Path, app: str) -> list[Path]:
    d = home / app / "runs"
    return sorted(p for p in d.iterdir() if not p.name.startswith(".")) if d.is_dir() else []


def test_planted_last_prune_symlink_is_never_followed(rage_home: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    assert record().returncode == 0
    stamp = rage_home / "mytool" / ".last-prune"
    stamp.unlink()
    stamp.symlink_to(victim)
    for _ in range(2):
        assert record().returncode == 0
    assert run_rage("gc").returncode == 0
    assert victim.read_text() == "precious\n"
    assert stamp.is_symlink()


def test_planted_settings_cache_is_never_loaded(rage_home: Path, config_file: Path,
                                                tmp_path: Path) -> None:
    config_file.write_text("[default]\nmax_runs = 50\n")
    recording_settings("mytool")  # writes the genuine cache, as a recorder would
    cache = rage_home / "mytool" / ".settings-cache"
    key, values, warning = marshal.loads(cache.read_bytes())
    planted = marshal.dumps((key, {**values, "disable": True}, warning))  # injected setting
    cache.unlink()
    # 1. a symlink to a file with the injected settings
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(planted)
    cache.symlink_to(elsewhere)
    assert record().returncode == 0
    assert len(runs_of(rage_home, "mytool")) == 1  # recorded: the cache was not believed
    assert elsewhere.read_bytes() == planted  # and not written through
    # 2. a file someone else owns
    cache.unlink()
    cache.write_bytes(planted)
    os.chown(cache, NOBODY, NOBODY)
    assert record().returncode == 0
    assert len(runs_of(rage_home, "mytool")) == 2
    # 3. the predictable temporary names of old are plain files now, never written through
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    for pid in range(os.getpid(), os.getpid() + 50):
        (rage_home / "mytool" / f"..settings-cache.{pid}.tmp").symlink_to(victim)
    cache.unlink()
    assert record().returncode == 0
    assert victim.read_text() == "precious\n"


def test_planted_app_directory_symlink_is_not_followed(rage_home: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim-dir"
    victim.mkdir()
    rage_home.mkdir()
    (rage_home / "mytool").symlink_to(victim)
    done = record("mytool", "sh", "-c", "echo out")
    assert done.returncode == 0 and done.stdout == "out\n"  # the command ran untouched
    assert done.stderr.startswith("rage: warning: not recording this run: unsafe history")
    assert list(victim.iterdir()) == []


DAMAGE = {
    "nan": b'{"status": "ok", "duration_s": NaN}',
    "1e400": b'{"status": "ok", "exit_code": 1e400, "duration_s": 1e400}',
    "deep": b'{"status": "ok", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "nested 40": b'{"status": "ok", "x": ' + b"[" * 40 + b"]" * 40 + b"}",
    "surrogate": b'{"status": "ok", "argv": ["\\ud800"], "cwd": "\\udcff"}',
    "not an object": b"[]",
    "bad utf-8": b'{"status": "ok", "cwd": "\xff"}',
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_one_damaged_record_never_breaks_anything(rage_home: Path, tmp_path: Path,
                                                  damage: str) -> None:
    done = record("mytool", "sh", "-c", "exit 3")
    assert done.returncode == 3
    assert record("other").returncode == 0
    good = runs_of(rage_home, "mytool")[0]
    bad = good.with_name("20990101T000000Z-deadbeef")  # the newest: `last` would pick it
    bad.mkdir()
    (bad / "meta.json").write_bytes(DAMAGE[damage])
    (rage_home / "mytool copy" / "runs").mkdir(parents=True)  # a stray directory
    warning = f"rage: warning: skipping broken run mytool/{bad.name}: meta.json is unreadable"
    for argv in (["list"], ["list", "--app", "mytool"], ["list", "--json"]):
        proc = run_rage(*argv)
        assert proc.returncode == 0, (argv, proc.stderr)
        assert proc.stderr.startswith(warning) and proc.stderr.count("\n") == 1, proc.stderr
    for argv in (["show", "last"], ["show", "last-failed"]):
        proc = run_rage(*argv)
        assert proc.returncode == 0, (argv, proc.stderr)
        assert proc.stderr.startswith(warning) and proc.stderr.count("\n") == 1, proc.stderr
    proc = run_rage("show", bad.name)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    for ref in ("last", "last-failed"):
        proc = run_rage("show", ref, "--app", "mytool", "--json")
        assert json.loads(proc.stdout)["id"] == good.name
    out = tmp_path / "bundle.rage"
    proc = run_rage("report", "--app", "mytool", "--last", "--yes", "--no-upload", "--no-collect",
                    "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.is_file() and "Traceback" not in proc.stderr
    proc = run_rage("gc")
    assert proc.returncode == 0, proc.stderr
    assert any(line.startswith("mytool: removed 0, kept 2 run(s)")
               for line in proc.stdout.splitlines()), proc.stdout


def test_meta_json_that_is_a_fifo_or_symlink_is_skipped(rage_home: Path) -> None:
    assert record().returncode == 0
    [good] = runs_of(rage_home, "mytool")
    fifo = good.with_name("20990101T000000Z-0000fifo".replace("fifo", "f1f0"))
    fifo.mkdir()
    os.mkfifo(fifo / "meta.json")
    link = good.with_name("20990101T000001Z-00000001")
    link.mkdir()
    (link / "meta.json").symlink_to("/dev/zero")
    (link / "lock").symlink_to("/dev/zero")
    proc = run_rage("list", timeout=20)
    listed = [ln for ln in proc.stdout.splitlines() if not ln.lstrip().startswith("ID ")]
    assert proc.returncode == 0 and len(listed) == 1  # the good run, under the header
    assert proc.stderr.count("skipping broken run") == 2


def test_deeply_nested_config_never_stops_the_command(config_file: Path) -> None:
    config_file.write_text("x = " + "[" * 500 + "]" * 500 + "\n")
    done = record("mytool", "sh", "-c", "echo ran")
    assert done.returncode == 0 and done.stdout == "ran\n"
    assert done.stderr == (f"rage: warning: invalid config {config_file}: nested too deep "
                           "(using defaults)\n")
    proc = run_rage("gc")
    assert proc.returncode == 6
    assert proc.stderr.splitlines()[0] == f"rage: invalid config {config_file}: nested too deep"


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_config_on_a_device_is_bounded(device: str) -> None:
    env = {**os.environ, "RAGE_CONFIG": device}
    done = record("mytool", "sh", "-c", "echo ran", env=env, timeout=20)
    assert done.returncode == 0 and done.stdout == "ran\n"
    assert done.stderr == (f"rage: warning: cannot read config {device}: not a regular file "
                           "(using defaults)\n")
    proc = run_rage("report", "--last", "--yes", "--no-upload", env=env, timeout=20)
    assert proc.returncode == 6 and "not a regular file" in proc.stderr


def test_invalid_retention_settings_never_wipe_history(rage_home: Path,
                                                       config_file: Path) -> None:
    for _ in range(3):
        assert record().returncode == 0
    for bad, why in (("max_runs = -1", "max_runs: must be 0 (no limit) or more, not -1"),
                     ("max_age_days = nan", "max_age_days: expected a finite number, not nan"),
                     ("max_bytes = -5", "max_bytes: size must not be negative"),
                     ("max_runs = 1.5", "max_runs: expected a whole number, not 1.5")):
        config_file.write_text(f"[default]\n{bad}\n")
        done = record()
        assert done.returncode == 0
        assert done.stderr == (f"rage: warning: {config_file} [default]: {why}; ignored, the "
                               "other settings apply (using defaults)\n")
        proc = run_rage("gc")  # a broken config is an error (exit 6): nothing is pruned
        assert proc.returncode == 6
        assert proc.stderr == f"rage: {config_file} [default]: {why}\n"
    assert len(runs_of(rage_home, "mytool")) == 7


def test_zero_means_no_limit(rage_home: Path, config_file: Path) -> None:
    config_file.write_text("[default]\nmax_runs = 0\nmax_bytes = 0\nmax_age_days = 0\n")
    for _ in range(4):
        assert record().returncode == 0
    old = rage_home / "mytool" / "runs" / "20000101T000000Z-00000000"  # 26 years old
    old.mkdir()
    (old / "meta.json").write_text('{"status": "ok"}')
    proc = run_rage("gc")
    assert proc.returncode == 0 and proc.stdout.startswith("mytool: removed 0, kept 5 run(s)")
    env = {**os.environ, "RAGE_MAX_RUNS": "2"}
    proc = run_rage("gc", env=env)
    assert proc.returncode == 0 and proc.stdout.startswith("mytool: removed 3, kept 2 run(s)")


def test_symlinked_runs_directory_is_never_listed_or_pruned(rage_home: Path,
                                                           tmp_path: Path) -> None:
    assert record().returncode == 0
    elsewhere = tmp_path / "elsewhere"
    victim = elsewhere / "20200101T000000Z-0000abcd"  # shaped like an old run
    victim.mkdir(parents=True)
    (victim / "meta.json").write_text('{"status": "ok"}')
    (rage_home / "planted").mkdir()
    (rage_home / "planted" / "runs").symlink_to(elsewhere)
    for argv in (["list"], ["gc"], ["list", "--app", "planted"]):
        proc = run_rage(*argv)
        assert proc.returncode == 0 and "planted" not in proc.stdout, (argv, proc.stdout)
    proc = run_rage("forget", "--all", "--app", "planted", "--yes")
    assert proc.returncode == 3 and "no runs of planted" in proc.stderr  # nothing recorded
    assert (victim / "meta.json").is_file()
