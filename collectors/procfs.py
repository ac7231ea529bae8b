"""psutil's answers for the ``system`` collector, read from /proc and /sys on Linux without
importing psutil (~60 M instructions, a tenth of a small report).

Each function gives exactly what the psutil call it names gives, by the same arithmetic on
the same files (psutil 7's ``_pslinux``), or None where psutil would take another way (an old
kernel's missing field, a battery's many files): the caller then asks psutil itself.
``tests/test_collectors_procfs.py`` holds them to psutil on the same files.
"""

from __future__ import annotations

import os
import sys
from typing import Any

PROC = "/proc"
CPU_DIR = "/sys/devices/system/cpu"
POWER_SUPPLY = "/sys/class/power_supply"
ON_LINUX = sys.platform.startswith("linux")
DIGITS = frozenset("0123456789")


def percent(used: int, total: int) -> float:
    """psutil's ``usage_percent(used, total, round_=1)``."""
    try:
        return round(float(used) / total * 100, 1)
    except ZeroDivisionError:
        return 0.0


def meminfo(proc: str = PROC) -> dict[bytes, int]:
    with open(f"{proc}/meminfo", "rb") as f:
        return {(fields := line.split())[0]: int(fields[1]) * 1024 for line in f}


def virtual_memory(mems: dict[bytes, int]) -> dict[str, Any] | None:
    """``psutil.virtual_memory()``'s total, available and percent."""
    total, free, avail = (mems.get(k) for k in (b"MemTotal:", b"MemFree:", b"MemAvailable:"))
    if total is None or free is None or not avail:  # psutil estimates it: let it
        return None
    if avail > total:  # as psutil: a container's odd meminfo
        avail = free
    return {"total_bytes": total, "available_bytes": avail, "percent": percent(total - avail,
                                                                               total)}


def swap_memory(mems: dict[bytes, int]) -> dict[str, Any] | None:
    """``psutil.swap_memory()``'s total, used and percent."""
    total, free = mems.get(b"SwapTotal:"), mems.get(b"SwapFree:")
    if total is None or free is None:  # psutil asks sysinfo(2)
        return None
    return {"total_bytes": total, "used_bytes": total - free, "percent": percent(total - free,
                                                                                 total)}


def disk_usage(path: str) -> dict[str, Any]:
    """``psutil.disk_usage(path)`` (POSIX); raises its OSError."""
    st = os.statvfs(path)
    total = st.f_blocks * st.f_frsize
    used = total - st.f_bfree * st.f_frsize
    avail = st.f_bavail * st.f_frsize
    return {"total_bytes": total, "used_bytes": used, "free_bytes": avail,
            "percent": percent(used, used + avail)}


def cpu_count_logical() -> int | None:
    """``psutil.cpu_count(logical=True)``, None for psutil to count itself."""
    try:
        n = os.sysconf("SC_NPROCESSORS_ONLN")
    except ValueError:
        return None
    return n if n >= 1 else None


def cpu_count_cores(cpu_dir: str = CPU_DIR) -> int | None:
    """``psutil.cpu_count(logical=False)`` from sysfs, None for psutil to read cpuinfo."""
    try:
        cpus = [d for d in os.listdir(cpu_dir)
                if d.startswith("cpu") and d[3:4] in DIGITS]  # glob's cpu[0-9]*
    except OSError:
        return None
    for name in ("core_cpus_list", "thread_siblings_list"):  # the second: older kernels
        seen: set[bytes] = set()
        found = False
        for d in cpus:
            try:
                with open(f"{cpu_dir}/{d}/topology/{name}", "rb") as f:
                    seen.add(f.read().strip())
                found = True
            except FileNotFoundError:
                continue
        if found:
            return len(seen) or None
    return None


def boot_time(proc: str = PROC) -> float | None:
    """``psutil.boot_time()``."""
    with open(f"{proc}/stat", "rb") as f:
        for line in f:
            if line.startswith(b"btime"):
                return float(line.strip().split()[1])
    return None


def no_battery(power_supply: str = POWER_SUPPLY) -> bool:
    """True when ``psutil.sensors_battery()`` surely gives None (no battery listed) or
    raises OSError (no power-supply directory): the collector's None either way."""
    try:
        names = os.listdir(power_supply)
    except OSError:
        return True
    return not any(x.startswith("BAT") or "battery" in x.lower() for x in names)
