"""The ``system`` collector: CPUs, memory, disks, load, uptime, limits, battery (psutil).

On Linux the values come from /proc and /sys by psutil's own arithmetic
(:mod:`collectors.procfs`), psutil imported only for what those cannot answer."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from collectors import procfs
from collectors.base import Collector, Context


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (the history root may not exist yet)."""
    for p in (path, *path.parents):
        if p.exists():
            return p
    return path


def disk_usage(path: Path) -> dict[str, Any]:
    target = _existing(path)
    try:
        if procfs.ON_LINUX:  # psutil's disk_usage is statvfs and this arithmetic there
            return {"path": str(path), **procfs.disk_usage(str(target))}
        import psutil

        u = psutil.disk_usage(str(target))
    except OSError as e:
        return {"path": str(path), "error": e.strerror or str(e)}
    return {"path": str(path), "total_bytes": u.total, "used_bytes": u.used,
            "free_bytes": u.free, "percent": u.percent}


def rlimits() -> dict[str, Any]:
    try:
        import resource
    except ImportError:  # Windows
        return {}
    out: dict[str, Any] = {}
    for name, key in (("open_files", "RLIMIT_NOFILE"), ("processes", "RLIMIT_NPROC"),
                      ("core_bytes", "RLIMIT_CORE"), ("stack_bytes", "RLIMIT_STACK"),
                      ("address_space_bytes", "RLIMIT_AS")):
        which = getattr(resource, key, None)
        if which is None:
            continue
        soft, hard = resource.getrlimit(which)
        inf = resource.RLIM_INFINITY
        out[name] = {"soft": None if soft == inf else soft, "hard": None if hard == inf else hard}
    return out


def battery() -> dict[str, Any] | None:
    if procfs.ON_LINUX and procfs.no_battery():
        return None
    import psutil

    probe = getattr(psutil, "sensors_battery", None)
    if probe is None:
        return None
    try:
        b = probe()
    except (OSError, RuntimeError):
        return None
    if b is None:
        return None
    return {"percent": round(b.percent, 1), "plugged_in": b.power_plugged}


def _memory() -> tuple[dict[str, Any], dict[str, Any]]:
    if procfs.ON_LINUX:
        mems = procfs.meminfo()
        memory, swap = procfs.virtual_memory(mems), procfs.swap_memory(mems)
        if memory is not None and swap is not None:
            return memory, swap
    import psutil

    vm, sw = psutil.virtual_memory(), psutil.swap_memory()
    return ({"total_bytes": vm.total, "available_bytes": vm.available, "percent": vm.percent},
            {"total_bytes": sw.total, "used_bytes": sw.used, "percent": sw.percent})


def _cpu_counts() -> dict[str, int | None]:
    if procfs.ON_LINUX:
        logical, physical = procfs.cpu_count_logical(), procfs.cpu_count_cores()
        if logical is not None and physical is not None:
            return {"logical": logical, "physical": physical}
    import psutil

    return {"logical": psutil.cpu_count(logical=True),
            "physical": psutil.cpu_count(logical=False)}


def _boot_time() -> float:
    booted = procfs.boot_time() if procfs.ON_LINUX else None
    if booted is None:
        import psutil

        booted = psutil.boot_time()
    return booted


class SystemCollector(Collector):
    name = "system"
    description = "CPUs, memory, swap, disk usage, load, uptime, resource limits, battery"
    timeout = 5.0

    def collect(self, ctx: Context) -> Any:
        memory, swap = _memory()
        disks = {"cwd": disk_usage(ctx.cwd), "home": disk_usage(Path.home())}
        if ctx.history_root is not None:
            disks["history"] = disk_usage(ctx.history_root)
        try:
            load = [round(x, 2) for x in os.getloadavg()]
        except (OSError, AttributeError):
            load = None
        try:
            affinity = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            affinity = None
        return {
            "cpu": {**_cpu_counts(), "usable": affinity},
            "memory": memory,
            "swap": swap,
            "disk": disks,
            "load_average": load,
            "uptime_s": round(time.time() - _boot_time(), 1),
            "rlimits": rlimits(),
            "battery": battery(),
        }
