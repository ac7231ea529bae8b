"""The ``platform`` collector: OS, kernel, architecture, libc, locale, time zone, where we run.

Everything here is a file read or a library call: no subprocesses.
"""

from __future__ import annotations

import os
import platform
import struct
import sys
import time
from pathlib import Path
from typing import Any

from collectors.base import Collector, Context

# Environment variables that identify a CI service (value: its display name).
_CI_VARS = {
    "GITHUB_ACTIONS": "github-actions", "GITLAB_CI": "gitlab-ci", "CIRCLECI": "circleci",
    "TRAVIS": "travis", "JENKINS_URL": "jenkins", "BUILDKITE": "buildkite",
    "TF_BUILD": "azure-pipelines", "TEAMCITY_VERSION": "teamcity", "APPVEYOR": "appveyor",
    "DRONE": "drone", "BITBUCKET_BUILD_NUMBER": "bitbucket", "CODEBUILD_BUILD_ID": "codebuild",
}
_HYPERVISORS = ("kvm", "qemu", "vmware", "virtualbox", "xen", "hyper-v", "microsoft corporation",
                "parallels", "bochs", "amazon ec2", "google compute engine", "openstack")


def _read(path: str, limit: int = 65536) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return None


def os_release() -> dict[str, Any]:
    """Name and version of the operating system (os-release on Linux)."""
    system = platform.system()
    if system == "Linux":
        try:
            rel = platform.freedesktop_os_release()
        except OSError:
            return {"name": "Linux"}
        keys = ("NAME", "VERSION", "ID", "VERSION_ID", "PRETTY_NAME", "ID_LIKE")
        return {k.lower(): rel[k] for k in keys if k in rel}
    if system == "Darwin":
        return {"name": "macOS", "version_id": platform.mac_ver()[0]}
    if system == "Windows":
        release, version, _, _ = platform.win32_ver()
        return {"name": "Windows", "version": version, "release": release,
                "edition": platform.win32_edition()}
    return {"name": system}


def libc() -> str | None:
    try:
        found = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):
        found = None
    if found:
        return found
    lib = Path("/lib")
    if lib.is_dir() and any(lib.glob("ld-musl-*")):
        return "musl"
    return None


def detect_container() -> str | None:
    if os.path.exists("/.dockerenv"):
        return "docker"
    if os.path.exists("/run/.containerenv"):
        return "podman"
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    env = os.environ.get("container")  # noqa: SIM112 - systemd-nspawn and podman set it lowercase
    if env:
        return env
    cgroup = _read("/proc/1/cgroup") or ""
    for word in ("docker", "kubepods", "containerd", "lxc", "libpod"):
        if word in cgroup:
            return word
    return None


def detect_wsl() -> str | None:
    if os.environ.get("WSL_DISTRO_NAME"):
        return "wsl2" if os.environ.get("WSL_INTEROP") else "wsl"
    rel = platform.release().lower()
    if "microsoft" in rel:
        return "wsl2" if "wsl2" in rel else "wsl"
    return None


def detect_ci() -> str | None:
    for var, name in _CI_VARS.items():
        if os.environ.get(var):
            return name
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        return "ci"
    return None


def detect_vm() -> str | None:
    """The hypervisor from DMI, or "unknown" when the CPU says it runs under one."""
    for f in ("/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name"):
        text = (_read(f, 256) or "").strip().lower()
        for name in _HYPERVISORS:
            if name in text:
                return name
    cpuinfo = _read("/proc/cpuinfo", 8192) or ""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return "unknown" if " hypervisor" in line else None
    return None


def time_zone() -> dict[str, Any]:
    offset = -time.altzone if time.localtime().tm_isdst > 0 else -time.timezone
    zone = os.environ.get("TZ")
    if not zone:
        try:
            target = os.readlink("/etc/localtime")
            zone = target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else target
        except OSError:
            zone = (_read("/etc/timezone", 256) or "").strip() or None
    sign = "+" if offset >= 0 else "-"
    hours, minutes = divmod(abs(offset) // 60, 60)
    return {"name": zone, "abbreviation": time.tzname[time.localtime().tm_isdst > 0],
            "utc_offset": f"{sign}{hours:02d}:{minutes:02d}"}


def locale_info() -> dict[str, Any]:
    import locale

    env = {k: os.environ[k] for k in ("LC_ALL", "LC_CTYPE", "LANG", "LANGUAGE") if k in os.environ}
    return {"env": env, "preferred_encoding": locale.getpreferredencoding(False),
            "filesystem_encoding": sys.getfilesystemencoding()}


def terminal() -> dict[str, Any]:
    """The terminal rage's own output goes to (a recorded run may have had another)."""
    import shutil

    size = shutil.get_terminal_size((0, 0))
    return {
        "term": os.environ.get("TERM"), "colorterm": os.environ.get("COLORTERM"),
        "term_program": os.environ.get("TERM_PROGRAM"),
        "multiplexer": "tmux" if os.environ.get("TMUX") else
        ("screen" if os.environ.get("STY") else None),
        "stdin_tty": sys.stdin is not None and sys.stdin.isatty(),
        "stdout_tty": sys.stdout is not None and sys.stdout.isatty(),
        "size": f"{size.columns}x{size.lines}" if size.columns else None,
    }


class PlatformCollector(Collector):
    name = "platform"
    description = "OS, kernel, architecture, libc, locale, time zone, container/WSL/CI/VM, terminal"
    timeout = 3.0

    def collect(self, ctx: Context) -> Any:
        uname = platform.uname()
        return {
            "os": os_release(),
            "system": uname.system,
            "kernel": uname.release,
            "kernel_version": uname.version,
            "machine": uname.machine,
            "hostname_set": bool(uname.node),  # the name itself can identify the user
            "bits": struct.calcsize("P") * 8,  # platform.architecture() may spawn `file`
            "libc": libc(),
            "locale": locale_info(),
            "time_zone": time_zone(),
            "container": detect_container(),
            "wsl": detect_wsl(),
            "ci": detect_ci(),
            "vm": detect_vm(),
            "terminal": terminal(),
        }
