"""Retention on the recording path: amortised (hysteresis), bounded per pass (finished runs'
sizes kept), never fooled by what is planted in the store. Real `rage run` processes."""

from __future__ import annotations

import os
from pathlib import Path

from rage.record.history import RunStore
from rage.record.prune import MAX_BATCH, low_water, retain
from rage.record.retention import read_sizes
from tests.conftest import run_rage


def count(home: Path, app: str) -> int:
    return len(RunStore(home).run_dirs(app))


def test_over_the_limit_prunes_below_it_not_on_every_run(rage_home: Path,
                                                          config_file: Path) -> None:
    config_file.write_text("[default]\nmax_runs = 20\n")
    assert low_water(20) == 18
    seen = []
    for _ in range(26):
        assert run_rage("run", "--app", "t", "--", "true").returncode == 0
        seen.append(count(rage_home, "t"))
    # up to the limit, then back to 18 once it is exceeded: a full pass every third run
    # here, every 21st with the default 200 (instead of on every run)
    assert seen == [*range(1, 21), 18, 19, 20, 18, 19, 20]
    assert max(seen) <= 20


def test_sizes_of_finished_runs_are_kept_and_trusted_only_if_ours(rage_home: Path) -> None:
    store = RunStore()
    live = store.start("t", ["t"], recorder="test")
    done = []
    for i in range(5):
        run = store.start("t", ["t", str(i)], recorder="test")
        (run.dir / "stdout.log").write_bytes(b"x" * 1000)
        done.append(run.finish(exit_code=0))
    store.prune("t", max_runs=0, max_bytes=0, max_age_days=0)
    sizes_file = rage_home / "t" / ".run-sizes"
    sizes = read_sizes(sizes_file)
    assert set(sizes) == {r.id for r in done}  # the live run grows: not kept
    assert all(v > 1000 for v in sizes.values())
    # a planted sizes file (a symlink, or not ours) is ignored, never written through
    victim = rage_home / "victim"
    victim.write_bytes(b"".join(f"{r.id} 0\n".encode() for r in done))
    sizes_file.unlink()
    sizes_file.symlink_to(victim)
    assert read_sizes(sizes_file) == {}
    res = store.prune("t", max_runs=0, max_bytes=3 * 1100, max_age_days=0)
    assert res.bytes_kept <= 3 * 1100 and len(res.removed) >= 2
    assert victim.read_bytes().count(b"\n") == 5
    live.finish(exit_code=0)


def test_the_same_pass_with_and_without_kept_sizes(rage_home: Path) -> None:
    store = RunStore()
    for i in range(8):
        run = store.start("t", ["t"], recorder="test")
        (run.dir / "stdout.log").write_bytes(b"y" * (500 * (i + 1)))
        run.finish(exit_code=0)
    store.prune("t", max_runs=0, max_bytes=0, max_age_days=0)  # fills .run-sizes
    with_cache = read_sizes(rage_home / "t" / ".run-sizes")
    (rage_home / "t" / ".run-sizes").unlink()
    store.prune("t", max_runs=0, max_bytes=0, max_age_days=0)
    assert read_sizes(rage_home / "t" / ".run-sizes") == with_cache
    res = store.prune("t", max_runs=0, max_bytes=10_000, max_age_days=0)
    assert res.bytes_kept <= 10_000
    assert res.bytes_kept == sum(read_sizes(rage_home / "t" / ".run-sizes").values())


def test_count_check_without_directory_link_counts(rage_home: Path, config_file: Path) -> None:
    """Runs are counted by name when the link count cannot bound them (stray entries in
    `runs/` make the bound loose on ext4, and some file systems report 1)."""
    config_file.write_text("[default]\nmax_runs = 3\n")
    runs = rage_home / "t" / "runs"
    runs.mkdir(parents=True)
    for i in range(6):  # directories that are not runs
        (runs / f".trash-x{i}").mkdir()
    for _ in range(5):
        assert run_rage("run", "--app", "t", "--", "true").returncode == 0
    assert count(rage_home, "t") <= 3
    assert os.stat(runs).st_nlink >= 2


def test_deletions_per_command_are_bounded_but_the_limit_is_hard(rage_home: Path) -> None:
    runs = rage_home / "t" / "runs"
    runs.mkdir(parents=True)
    for i in range(401):
        (runs / f"20260101T{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}Z-{i:08x}").mkdir()
    assert retain(rage_home / "t", 400, 3600.0) is True  # no full pass yet: one is due
    assert count(rage_home, "t") == 400 - MAX_BATCH + 1 == 369  # not 360: 32 at a time
    assert retain(rage_home / "t", 100, 3600.0)
    assert count(rage_home, "t") == 100  # a lowered limit holds at once
    names = sorted(p.name for p in runs.iterdir())
    assert names[0].endswith(f"{301:08x}")  # the oldest went first
    (rage_home / "t" / ".last-prune").touch()
    assert retain(rage_home / "t", 100, 3600.0) is False
