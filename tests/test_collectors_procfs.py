"""collectors.procfs gives what psutil gives: both read the same /proc files (psutil's own
PROCFS_PATH pointed at a snapshot of this machine's, and at edge cases), the same statvfs,
the same sysfs CPU topology, on this Linux machine."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import psutil
import pytest

from collectors import procfs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


@pytest.fixture
def proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A snapshot of /proc's meminfo, stat and vmstat that psutil reads too."""
    for name in ("meminfo", "stat", "vmstat"):
        (tmp_path / name).write_bytes(Path(f"/proc/{name}").read_bytes())
    monkeypatch.setattr(psutil, "PROCFS_PATH", str(tmp_path))
    return tmp_path


def psutil_memory() -> tuple[dict[str, object], dict[str, object]]:
    vm, sw = psutil.virtual_memory(), psutil.swap_memory()
    return ({"total_bytes": vm.total, "available_bytes": vm.available, "percent": vm.percent},
            {"total_bytes": sw.total, "used_bytes": sw.used, "percent": sw.percent})


def ours(proc: Path) -> tuple[dict[str, object] | None, dict[str, object] | None]:
    mems = procfs.meminfo(str(proc))
    return procfs.virtual_memory(mems), procfs.swap_memory(mems)


def test_memory_and_swap_as_psutil(proc: Path) -> None:
    assert ours(proc) == psutil_memory()


def edit(proc: Path, **fields: int) -> None:
    lines = (proc / "meminfo").read_text().splitlines()
    out = [ln for ln in lines if ln.split(":")[0] not in fields]
    out += [f"{k}: {v} kB" for k, v in fields.items() if v >= 0]
    (proc / "meminfo").write_text("\n".join(out) + "\n")


@pytest.mark.parametrize("fields", [
    {"MemTotal": 1000, "MemFree": 300, "MemAvailable": 1500},  # above total: MemFree
    {"MemTotal": 3, "MemFree": 1, "MemAvailable": 2},  # percent's rounding
    {"SwapTotal": 0, "SwapFree": 0},  # no swap: 0.0 percent
    {"SwapTotal": 2048, "SwapFree": 1000},
])
def test_edge_cases_as_psutil(proc: Path, fields: dict[str, int]) -> None:
    edit(proc, **fields)
    assert ours(proc) == psutil_memory()


def test_what_psutil_estimates_is_left_to_it(proc: Path) -> None:
    edit(proc, MemAvailable=-1)  # (dropped) a kernel before 3.14
    memory, swap = ours(proc)
    assert memory is None and swap == psutil_memory()[1]
    edit(proc, MemAvailable=0)
    assert ours(proc)[0] is None
    edit(proc, SwapTotal=-1)
    assert ours(proc)[1] is None


def test_boot_time_as_psutil(proc: Path) -> None:
    assert procfs.boot_time(str(proc)) == psutil.boot_time()
    (proc / "stat").write_bytes(b"cpu  1 2 3\nbtime 1700000123\n")
    assert procfs.boot_time(str(proc)) == psutil.boot_time() == 1700000123.0
    (proc / "stat").write_bytes(b"cpu  1 2 3\n")
    assert procfs.boot_time(str(proc)) is None
    with pytest.raises(RuntimeError):  # psutil's answer, which the collector then gets
        psutil.boot_time()


def test_cpu_counts_as_psutil() -> None:
    assert procfs.cpu_count_logical() == psutil.cpu_count(logical=True)
    assert procfs.cpu_count_cores() == psutil.cpu_count(logical=False)


def test_cpu_cores_from_a_topology(tmp_path: Path) -> None:
    for cpu, siblings in (("cpu0", "0,2"), ("cpu1", "1,3"), ("cpu2", "0,2"), ("cpu3", "1,3")):
        (tmp_path / cpu / "topology").mkdir(parents=True)
        (tmp_path / cpu / "topology" / "thread_siblings_list").write_text(siblings + "\n")
    (tmp_path / "cpufreq").mkdir()
    assert procfs.cpu_count_cores(str(tmp_path)) == 2
    (tmp_path / "cpu0" / "topology" / "core_cpus_list").write_text("0\n")
    assert procfs.cpu_count_cores(str(tmp_path)) == 1  # the newer file wins where present
    assert procfs.cpu_count_cores(str(tmp_path / "none")) is None


def test_disk_usage_as_psutil(tmp_path: Path) -> None:
    for path in ("/", str(tmp_path), "/proc"):  # /proc: no blocks, percent 0.0
        for _ in range(20):  # a busy disk moves between the calls: until it holds still
            before = psutil.disk_usage(path)
            mine = procfs.disk_usage(path)
            if psutil.disk_usage(path) == before:
                break
        assert mine == {"total_bytes": before.total, "used_bytes": before.used,
                        "free_bytes": before.free, "percent": before.percent}, path
    with pytest.raises(FileNotFoundError):
        procfs.disk_usage(str(tmp_path / "gone"))


def test_battery(tmp_path: Path) -> None:
    if procfs.no_battery():
        # OSError: no power-supply directory, the collector's None too
        with contextlib.suppress(OSError):
            assert psutil.sensors_battery() is None
    else:
        assert os.path.isdir(procfs.POWER_SUPPLY)
    (tmp_path / "AC").mkdir()
    assert procfs.no_battery(str(tmp_path))
    (tmp_path / "hidpp_battery_0").mkdir()
    assert not procfs.no_battery(str(tmp_path))
    assert procfs.no_battery(str(tmp_path / "none"))
