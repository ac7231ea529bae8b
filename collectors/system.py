"""The ``system`` collector: CPUs, memory, disks, load, uptime, limits, battery (psutil)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from collectors.base import Collector, Context


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (the history root may not exist yet)."""
    for p in (path, *path.parents):
        if p.exists():
            return p
    return path


def disk_usage(path: Path) -> dict[str, Any]:
    import psutil

    target = _existing(path)
    try:
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


class SystemCollector(Collector):
    name = "system"
    description = "CPUs, memory, swap, disk usage, load, uptime, resource limits, battery"
    timeout = 5.0

    def collect(self, ctx: Context) -> Any:
        import psutil

        vm = psutil.virtual_memory()
        sw = psutil.swap_memory()
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
            "cpu": {"logical": psutil.cpu_count(logical=True),
                    "physical": psutil.cpu_count(logical=False),
                    "usable": affinity},
            "memory": {"total_bytes": vm.total, "available_bytes": vm.available,
                       "percent": vm.percent},
            "swap": {"total_bytes": sw.total, "used_bytes": sw.used, "percent": sw.percent},
            "disk": disks,
            "load_average": load,
            "uptime_s": round(time.time() - psutil.boot_time(), 1),
            "rlimits": rlimits(),
            "battery": battery(),
        }
