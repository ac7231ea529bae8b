"""A native backtrace of a wrapped program that crashed (opt-in: ``native_backtrace``).

When the user opts in (``native_backtrace = true``, ``RAGE_NATIVE_BACKTRACE=1``, ``rage run
--backtrace``), the wrapper lets only its child dump core: the soft core limit is raised to
:data:`CORE_MAX` for the spawn and put back at once (``posix_spawn`` has no rlimit
attribute, so the child inherits the wrapper's; the wrapper itself never dumps: it dies of
the child's signal with its own limit at 0). When the child dies of a crash signal, the
core is taken where the kernel's ``core_pattern`` put it: a file (``core``, ``core.PID``,
``/cores/core.%e.%p``...) is moved out of the user's directory at once into the private run
directory; cores piped to ``systemd-coredump`` are asked of ``coredumpctl``. ``gdb -batch``
then writes the crashing thread's backtrace into ``backtrace.txt``, which goes through
redaction like every run file, and the core is deleted (``--keep-core`` keeps it in the run
directory, 0600; it never goes into a bundle). The run's meta says which method ran, or why
none could (``native_backtrace``).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from typing import Any
else:
    import _signal  # the same numbers as signal's, without its enums (~3 ms)

CORE_MAX = 2 * 1024 * 1024 * 1024  # bytes a core may take (the kernel cuts it there)
# SEGV, ABRT, BUS, ILL, FPE, TRAP (_signal: the numbers without the signal module's enums)
CRASH_SIGNALS = frozenset(getattr(_signal, n) for n in (
    "SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP") if hasattr(_signal, n))
FILE = "backtrace.txt"
CORE = "core"  # in the run directory, only with --keep-core
OUTPUT_MAX = 1024 * 1024
GDB_TIMEOUT_S = 60


def raise_core_limit() -> tuple[int, int] | None:
    """Let the next child dump a core of at most :data:`CORE_MAX` bytes; the previous limits,
    for :func:`restore_core_limit`, or None when they could not be changed."""
    import resource

    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
        want = CORE_MAX if hard == resource.RLIM_INFINITY else min(CORE_MAX, hard)
        resource.setrlimit(resource.RLIMIT_CORE, (want, hard))
    except (OSError, ValueError):
        return None
    return soft, hard


def restore_core_limit(previous: tuple[int, int] | None) -> None:
    if previous is None:
        return
    import resource

    try:  # noqa: SIM105 - no contextlib on the recording path
        resource.setrlimit(resource.RLIMIT_CORE, previous)
    except (OSError, ValueError):
        pass


def _core_path(pattern: str, pid: int, executable: str, cwd: str) -> str | None:
    """Where ``core_pattern`` put the core of ``pid`` (None: a pattern rage cannot expand)."""
    import socket

    comm = os.path.basename(executable)[:15]
    table = {"%p": str(pid), "%P": str(pid), "%i": str(pid), "%I": str(pid), "%e": comm,
             "%u": str(os.getuid()), "%g": str(os.getgid()), "%h": socket.gethostname(),
             "%%": "%"}
    out, i = [], 0
    while i < len(pattern):
        two = pattern[i:i + 2]
        if two in table:
            out.append(table[two])
            i += 2
        elif two.startswith("%"):
            return None  # %t, %s, %E...: a time or value rage would have to guess
        else:
            out.append(pattern[i])
            i += 1
    path = "".join(out)
    if "%p" not in pattern and _read("/proc/sys/kernel/core_uses_pid").strip() == "1":
        path += f".{pid}"
    return path if os.path.isabs(path) else os.path.join(cwd, path)


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(4096)
    except OSError:
        return ""


def _take_file(src: str, dest: str, since: float) -> str | None:
    """Move the core at ``src`` to ``dest`` (the run directory) at once; None, with the
    reason, when ``src`` is not a core this user's crash just wrote."""
    try:
        st = os.lstat(src)
    except OSError:
        return "no core was written (the program's directory may not be writable)"
    # (a file's times come from the kernel's coarse clock, up to a tick behind the one the
    # run was dated by: a core written within milliseconds of the start may look older)
    if (st.st_mode & 0o170000) != 0o100000 or st.st_uid != os.getuid() or (
            st.st_mtime < since - 1.0):
        return f"{src} is not this run's core"
    try:
        os.rename(src, dest)
    except OSError:  # another filesystem: copy within the bound, then remove
        import shutil

        try:
            with open(src, "rb") as f, open(dest, "xb") as g:
                shutil.copyfileobj(f, g)
            os.unlink(src)
        except OSError as e:
            return f"cannot move the core out of {os.path.dirname(src)}: {e.strerror or e}"
    os.chmod(dest, 0o600)
    return None


def _coredumpctl(pid: int, dest: str) -> str | None:
    import shutil
    import subprocess

    exe = shutil.which("coredumpctl")
    if exe is None:
        return "cores go to systemd-coredump and coredumpctl is not installed"
    try:
        proc = subprocess.run([exe, "-q", "--no-pager", "dump", str(pid), "-o", dest],
                              capture_output=True, timeout=GDB_TIMEOUT_S, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        return f"coredumpctl failed: {e}"
    return None if proc.returncode == 0 and os.path.exists(dest) else "coredumpctl has no core"


def collect(run_dir: str, pid: int, executable: str, cwd: str, since: float, *,
            keep_core: bool = False) -> dict[str, Any]:
    """After the child ``pid`` died of a crash signal: its backtrace in ``run_dir``'s
    :data:`FILE`, and what was done (``method``, ``reason``, ``core``) for the meta."""
    core = os.path.join(run_dir, CORE)
    pattern = _read("/proc/sys/kernel/core_pattern").strip()
    if not pattern:
        return {"method": None, "reason": "the kernel's core_pattern is not readable here"}
    if pattern.startswith("|"):
        if "systemd-coredump" in pattern:
            why = _coredumpctl(pid, core)
        else:
            why = f"cores go to a program rage does not read ({pattern[1:].split()[0][:80]})"
        source = "systemd-coredump"
    else:
        where = _core_path(pattern, pid, executable, cwd)
        why = (_take_file(where, core, since) if where
               else f"core_pattern {pattern[:80]!r} names the file by values rage cannot know")
        source = "core file"
    if why is not None:
        return {"method": None, "reason": why}
    try:
        info: dict[str, Any] = {"method": f"{source} + gdb", "core": "kept" if keep_core
                                else "deleted"}
        why = _gdb(executable, core, os.path.join(run_dir, FILE))
        if why is not None:
            info = {"method": None, "reason": why, "core": info["core"]}
        return info
    finally:
        if not keep_core:
            try:  # noqa: SIM105
                os.unlink(core)
            except OSError:
                pass


def _gdb(executable: str, core: str, out: str) -> str | None:
    import shutil
    import subprocess

    gdb = shutil.which("gdb")
    if gdb is None:
        return "no debugger: install gdb for a symbolised backtrace"
    try:
        proc = subprocess.run(
            [gdb, "-batch", "-nx", "-q", "-ex", "set pagination off", "-ex",
             "thread apply 1 bt 64", executable, core],
            capture_output=True, timeout=GDB_TIMEOUT_S, check=False,
            stdin=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C", "TERM": "dumb"})
    except (OSError, subprocess.SubprocessError) as e:
        return f"gdb failed: {e}"
    text = proc.stdout[:OUTPUT_MAX]
    if b"#0" not in text:
        return "gdb printed no backtrace"
    from rage.fsutil import open_private

    with open_private(out, "wb") as f:
        f.write(text)
    return None
