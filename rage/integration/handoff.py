"""Which run this process belongs to, when it is not a user's invocation of its own.

Two cases, both found through the parent process, never through an inherited environment
variable (which would also reach unrelated programs the tool starts):

- **A child of a recorded Python run of the same app** (flask's debug reloader re-runs the
  tool as a child on every reload, ``multiprocessing`` spawns interpreters): every recorder
  leaves ``<root>/<app>/live/<pid>``, a symlink to its run directory, for its lifetime. A
  process whose parent has a live entry there (the run's lock is still held) records into
  ``<run>/children/<pid>/`` of that run instead of creating a run of its own.
- **Started by the ``rage run`` wrapper** (a shim): the wrapper spawns the command first and
  writes its run record just after, so the record may not exist yet when the tool starts.
  :func:`find_wrapper_run` looks for the live wrapper run whose ``pid`` is this process and
  whose ``wrapper_pid`` is its parent; the recorder asks once at start (usually the record
  is there: the interpreter takes longer to start than the wrapper takes to write it) and
  again at exit, when it must be there, and then moves what it recorded into that run.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LIVE = "live"
CHILDREN = "children"


def lock_is_held(run_dir: str) -> bool:
    """:func:`rage.record.runlock.lock_is_held`, imported only when a run is asked about
    (not on every tool's start-up)."""
    from rage.record.runlock import lock_is_held as held

    return held(run_dir)

def process_start() -> tuple[int, float] | None:
    """This process's start as (``time.time_ns()``, ``time.monotonic()``) values, from
    ``/proc`` (Linux; 10 ms resolution); None where that is not available."""
    try:
        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        ticks = int(stat[stat.rindex(b")") + 2:].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    if not 0 <= age < 365 * 86400:
        return None
    return time.time_ns() - int(age * 1e9), time.monotonic() - age


def live_entry(root: str, app: str, pid: int) -> str:
    return os.path.join(root, app, LIVE, str(pid))


def announce(root: str, app: str, run_dir: str) -> str | None:
    """Leave ``live/<pid>`` pointing at ``run_dir``; returns its path (None if it failed)."""
    from rage.fsutil import private_dir

    entry = live_entry(root, app, os.getpid())
    try:
        private_dir(os.path.dirname(entry))
        try:
            os.symlink(run_dir, entry)
        except FileExistsError:  # left by a dead process with this pid
            os.unlink(entry)
            os.symlink(run_dir, entry)
    except OSError:
        return None
    return entry


def withdraw(entry: str | None) -> None:
    if entry is not None:
        try:  # noqa: SIM105 - no contextlib on the start-up path
            os.unlink(entry)
        except OSError:
            pass


def parent_run(root: str, app: str) -> str | None:
    """The live run directory of this process's parent, if the parent records ``app``."""
    try:
        target = os.readlink(live_entry(root, app, os.getppid()))
    except OSError:
        return None
    return target if lock_is_held(target) else None


def earlier_crashes(root: str, app: str) -> list[tuple[str, str]]:
    """Runs of ``app`` whose recorder died of a fatal signal since the last look, as
    (run id, what faulthandler called it), oldest first; their ``live/`` entries are removed
    so each is reported once. A dead process can print nothing: the next run says it.

    An entry whose run is no longer locked belongs to a process that never reached its
    ``atexit`` (which removes the entry): killed, or crashed with a dump in ``fatal.log``.
    """
    live = os.path.join(root, app, LIVE)
    try:
        names = os.listdir(live)
    except OSError:
        return []
    me = str(os.getpid())
    found: dict[str, str] = {}
    for name in names:
        if name == me:
            continue
        entry = os.path.join(live, name)
        try:
            target = os.readlink(entry)
        except OSError:
            continue
        if lock_is_held(target):
            continue
        withdraw(entry)
        what = _fatal_error(os.path.join(target, "fatal.log"))
        meta = _read_meta(target) if what is not None else None
        # a run someone finished (the rage run wrapper, which printed its own hint) is not
        # one whose recorder died
        if what is not None and meta is not None and meta.get("status") == "running":
            found[os.path.basename(target)] = what
    return sorted(found.items())


def _fatal_error(path: str) -> str | None:
    """``Segmentation fault`` from faulthandler's ``Fatal Python error: ...`` line."""
    from rage.fsutil import read_regular  # never a FIFO or device left in the history

    try:
        head = read_regular(path, 512).decode("utf-8", "replace")
    except OSError:
        return None
    if not head.strip():
        return None
    marker = "Fatal Python error: "
    i = head.find(marker)
    return head[i + len(marker):].split("\n", 1)[0].strip() if i >= 0 else "fatal error"


def _parent_is_wrapper(at_start: bool) -> tuple[bool, str | None]:
    """Whether the parent looks like ``rage run`` (and its ``--app``). Without ``/proc``
    the answer is "maybe" at exit, so the caller looks then, and "no" at start, which every
    run pays for."""
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except OSError:
        return not at_start, None
    if b"run" not in args or not any(b"rage" in a for a in args):
        return _parent_is_shim(args)
    app = None
    for i, a in enumerate(args):
        if a == b"--app" and i + 1 < len(args):
            app = args[i + 1].decode("utf-8", "surrogateescape")
        elif a.startswith(b"--app="):
            app = a[6:].decode("utf-8", "surrogateescape")
    return True, app


def _parent_is_shim(args: list[bytes]) -> tuple[bool, str | None]:
    """A rage shim runs the wrapper in-process (``python -I -S -c CODE SHIM ARGS``): one of
    the parent's first arguments is then the shim, which says so on its second line
    (``# rage-shim: NAME ...``, see rage.record.shims)."""
    # exactly the shape the shim execs (rage.record.shims.render): PYTHON -I -S -c CODE SHIM;
    # any other parent is not a shim, and no file of it is opened
    if len(args) < 6 or args[1:4] != [b"-I", b"-S", b"-c"] or not args[5]:
        return False, None
    arg = args[5]
    # `./mytool`: relative to the shim's working directory
    path = arg if arg.startswith(b"/") else b"/proc/%d/cwd/%s" % (os.getppid(), arg)
    try:
        with open(path, "rb") as f:
            lines = f.read(512).split(b"\n", 2)
    except OSError:
        return False, None
    # the marker line, as rage.record.shims.is_shim reads it (not imported: start-up path)
    if len(lines) > 1 and lines[1].startswith(b"# rage-shim: "):
        name = lines[1][len(b"# rage-shim: "):].split(b" ", 1)[0]
        return True, name.decode("utf-8", "surrogateescape") or None
    return False, None


def find_wrapper_run(root: str, started_s: float, *, at_start: bool = False) -> str | None:
    """The live ``rage run`` record whose child is this process, or None.

    Only records dated within a few seconds of this process's start are read (the wrapper
    dates its run from the spawn), so this costs a directory listing or two.
    """
    maybe, app = _parent_is_wrapper(at_start)
    if not maybe:
        return None
    from rage.record.runid import is_run_id

    lo = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started_s - 5))
    hi = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started_s + 2))
    if app is not None:
        apps = [app]
    else:
        try:
            apps = [e.name for e in os.scandir(root) if e.is_dir()]
        except OSError:
            return None
    pid, ppid = os.getpid(), os.getppid()
    for a in apps:
        runs = os.path.join(root, a, "runs")
        try:
            names = [n for n in os.listdir(runs) if is_run_id(n) and lo <= n[:16] <= hi]
        except OSError:
            continue
        for name in sorted(names, reverse=True):
            run_dir = os.path.join(runs, name)
            meta = _read_meta(run_dir)
            if (meta is not None and meta.get("recorder") == "wrapper"
                    and meta.get("pid") == pid and meta.get("wrapper_pid") == ppid
                    and meta.get("status") == "running" and lock_is_held(run_dir)):
                return run_dir
    return None


def _read_meta(run_dir: str) -> dict[str, Any] | None:
    import json

    from rage.fsutil import read_regular  # never a FIFO or device left in the history

    try:
        meta = json.loads(read_regular(os.path.join(run_dir, "meta.json"), 4 << 20))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def move_into(src_dir: str, dst_dir: str, names: list[str]) -> list[str]:
    """Move the files ``names`` of ``src_dir`` into ``dst_dir`` where that has none of the
    same name; returns the names moved."""
    moved = []
    for name in names:
        src, dst = os.path.join(src_dir, name), os.path.join(dst_dir, name)
        if not os.path.exists(src) or os.path.lexists(dst):
            continue
        try:
            os.rename(src, dst)
        except OSError:
            continue
        moved.append(name)
    return moved
