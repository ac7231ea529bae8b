"""The collector contract, discovery through entry points, and the parallel runner.

A collector gathers one kind of fact about the machine a run happened on (platform, Python,
packages, ...). Built-ins and third-party plugins are found the same way: the entry-point
group ``rage.collectors``. Every installed plugin runs unless disabled (``disable`` /
``disable_collectors``); a plugin may declare ``default_enabled = False`` to run only when
named in ``enable`` (``collectors`` setting). A broken plugin is a warning plus an ``error``
section, never a failed report.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from rage.errors import UsageError

GROUP = "rage.collectors"
BUILTIN_DIST = "rage-report"
# Built-ins run and print in this order; plugins follow, sorted by name.
BUILTIN_ORDER = ("platform", "python", "packages", "system", "environment", "git", "tools")
_OUTPUT_CAP = 1024 * 1024  # bytes of a command's stdout/stderr kept in memory


@dataclass(frozen=True)
class CommandResult:
    """What :meth:`Context.run_command` saw: ``returncode`` is None when it timed out."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    truncated: bool = False  # more output than _OUTPUT_CAP came on a stream: the rest dropped

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class _ProcessTracker:
    """The subprocesses of one collector, so the runner can kill them when it gives up."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.cancelled = False
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    def add(self, proc: subprocess.Popen[bytes]) -> bool:
        with self._lock:
            if self.cancelled:
                return False
            self._procs.add(proc)
            return True

    def discard(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.discard(proc)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            procs = list(self._procs)
        for proc in procs:
            _kill_group(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1.0)


class _CappedOutput:
    """A command's stdout and stderr, read as they come: the first :data:`_OUTPUT_CAP`
    bytes of each are kept, the rest read and dropped, so a command (or the data it prints:
    a repository's config, a file list) can neither block on a full pipe nor fill memory."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self._pipes = (proc.stdout, proc.stderr)
        self._fds = (proc.stdout.fileno(), proc.stderr.fileno())
        self._kept = {fd: bytearray() for fd in self._fds}
        self._live = set(self._fds)
        self.truncated = False

    def read_until(self, deadline: float) -> bool:
        """Read until both streams end (True) or ``deadline`` (monotonic) passes (False)."""
        while self._live:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select(list(self._live), [], [], left)
            for fd in ready:
                data = os.read(fd, 1 << 16)
                if not data:
                    self._live.discard(fd)
                    continue
                buf = self._kept[fd]
                room = _OUTPUT_CAP - len(buf)
                if len(data) > room:
                    self.truncated = True
                if room > 0:
                    buf += data[:room]
        return True

    def kept(self) -> tuple[bytes, bytes]:
        """What was kept of stdout and of stderr."""
        return bytes(self._kept[self._fds[0]]), bytes(self._kept[self._fds[1]])

    def close(self) -> None:
        for p in self._pipes:
            p.close()


def _waited(proc: subprocess.Popen[bytes], deadline: float) -> bool:
    try:
        proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
    except subprocess.TimeoutExpired:
        return False
    return True


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if os.name == "posix":
        # The child leads its own session, so its pid is the group id even after it exits
        # while grandchildren live on (the kernel keeps the id reserved until they are gone).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    else:  # pragma: no cover - POSIX is what rage supports first
        with contextlib.suppress(OSError):
            proc.kill()


@dataclass(frozen=True)
class Context:
    """What collectors know about the run being reported and the reporting process."""

    app: str | None = None
    run: Mapping[str, Any] | None = None  # the run's meta.json dict, when reporting a run
    cwd: Path = field(default_factory=Path.cwd)
    python: str | None = None  # interpreter of the run when known (else sys.executable)
    tools: tuple[str, ...] = ()  # executables whose versions to record
    history_root: Path | None = None  # rage's state dir (for disk usage)
    environ: Mapping[str, str] | None = None  # the run's environment, when it was recorded
    _tracker: _ProcessTracker | None = field(default=None, repr=False, compare=False)

    def which(self, name: str) -> str | None:
        """The absolute path of executable ``name`` on PATH, else None.

        Commands run in ``cwd``, the directory of the reported run: a relative PATH entry
        (``.``, an empty one) would find a program planted there, so only absolute entries
        count, and the path is absolute so the child's own PATH lookup is never used.
        """
        path = os.environ.get("PATH", os.defpath)
        safe = os.pathsep.join(p for p in path.split(os.pathsep) if os.path.isabs(p))
        found = shutil.which(name, path=safe) if os.path.basename(name) == name else None
        return os.path.abspath(found) if found else None

    def run_command(
        self, argv: Sequence[str], timeout: float, *,
        env: Mapping[str, str | None] | None = None,
    ) -> CommandResult | None:
        """Run ``argv`` in ``cwd`` with no stdin; None when it cannot be started.

        The command gets its own process group, which is killed when ``timeout`` passes (the
        result then has ``timed_out`` set), when the runner gives up on the collector, and
        when the command returns: nothing it started outlives this call. ``env`` adds to
        the current environment (a None value removes the variable). Output is decoded as
        UTF-8 (errors replaced) and capped.
        """
        tracker = self._tracker
        if tracker is not None:
            timeout = min(timeout, max(tracker.deadline - time.monotonic(), 0.0))
        full_env: dict[str, str] | None = None
        if env:
            full_env = dict(os.environ)
            for key, value in env.items():
                if value is None:
                    full_env.pop(key, None)
                else:
                    full_env[key] = value
        cwd = self.cwd if self.cwd.is_dir() else None
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                list(argv), cwd=cwd, env=full_env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            )
        except OSError:
            return None
        if tracker is not None and not tracker.add(proc):
            _kill_group(proc)
            proc.communicate()
            return None
        timed_out = False
        output = _CappedOutput(proc)
        try:
            if not output.read_until(start + timeout) or not _waited(proc, start + timeout):
                timed_out = True
                _kill_group(proc)
                if not output.read_until(time.monotonic() + 1.0):
                    proc.kill()  # a grandchild escaped the group and holds the pipes open
                proc.wait()
        finally:
            output.close()
            _kill_group(proc)
            if tracker is not None:
                tracker.discard(proc)
        out, err = output.kept()
        return CommandResult(
            argv=tuple(argv),
            returncode=None if timed_out else proc.returncode,
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            duration_s=time.monotonic() - start,
            timed_out=timed_out,
            truncated=output.truncated,
        )


@dataclass(frozen=True)
class CollectorOutput:
    """Data plus small text files (``{name: text}``) a collector wants in the bundle."""

    data: Any
    files: Mapping[str, str] = field(default_factory=dict)


class Collector:
    """Base class of collectors. Subclasses set the class attributes and ``collect``.

    - ``name``: unique, short, lowercase; it names the section and ``collectors/<name>.json``.
    - ``description``: one line for ``rage collectors``.
    - ``timeout``: seconds the runner waits before marking the section ``timeout``.
    - ``default_enabled``: False for plugins that run only when named in ``enable``.
    - ``applies(ctx)``: False marks the section ``skipped`` (keep it cheap: no subprocesses).
    - ``collect(ctx)``: return JSON-able data (dicts, lists, str, numbers, None) or a
      :class:`CollectorOutput`. Raise on failure: the runner records the error text. Start
      subprocesses only through ``ctx.run_command`` so a timeout can kill them.

    Collectors run in threads, concurrently with each other: do not mutate shared state.
    """

    name: ClassVar[str]
    description: ClassVar[str] = ""
    timeout: ClassVar[float] = 5.0
    default_enabled: ClassVar[bool] = True

    def applies(self, ctx: Context) -> bool:
        return True

    def collect(self, ctx: Context) -> Any:
        raise NotImplementedError


class _BrokenCollector(Collector):
    """Stands in for a plugin that failed to load, so the report shows an error section."""

    description = "(failed to load)"

    def __init__(self, error: str) -> None:
        self.error = error

    def collect(self, ctx: Context) -> Any:
        raise RuntimeError(self.error)


def _broken(name: str, error: str) -> Collector:
    cls = type("BrokenCollector", (_BrokenCollector,), {"name": name})
    return cls(error)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Section:
    """One collector's result. ``status``: ok | error | timeout | skipped."""

    name: str
    status: str
    duration_s: float
    data: Any = None
    error: str | None = None
    files: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "status": self.status, "duration_s": round(self.duration_s, 6),
            "data": self.data, "error": self.error, "files": dict(self.files),
            "description": self.description, "source": self.source,
        }


@dataclass(frozen=True)
class Discovery:
    """The collectors to run (in order), where each came from, and what went wrong."""

    collectors: list[Collector]
    sources: dict[str, str]
    warnings: list[str]


def _describe_error(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def _instantiate(obj: Any) -> Collector:
    inst = obj() if isinstance(obj, type) else obj
    name = getattr(inst, "name", None)
    if not isinstance(name, str) or not name or not callable(getattr(inst, "collect", None)):
        raise TypeError(f"{obj!r} is not a collector (needs a name and collect())")
    return inst  # type: ignore[no-any-return]


class _CachedEntryPoint:
    """An entry point as :mod:`collectors.distcache` keeps it: loaded as
    ``importlib.metadata`` loads one, without importing it."""

    def __init__(self, value: str) -> None:
        self.value = value

    def load(self) -> Any:
        from collectors.distcache import load_entry_point

        return load_entry_point(self.value)


def _entry_points() -> list[tuple[str, str, Any]]:
    """(name, source, entry point) for the group, built-ins first in their fixed order."""
    from collectors.distcache import current

    found: list[tuple[int, str, str, Any]] = []
    for name, value, dist_name, dist_version in current()["entry_points"]:
        if dist_name == BUILTIN_DIST:
            source = "built-in"
            rank = BUILTIN_ORDER.index(name) if name in BUILTIN_ORDER else len(BUILTIN_ORDER)
        else:
            source = (f"{dist_name} {dist_version}" if dist_name is not None
                      else f"path {value}")
            rank = len(BUILTIN_ORDER) + 1
        found.append((rank, name, source, _CachedEntryPoint(value)))
    found.sort(key=lambda t: (t[0], t[1]))
    return [(name, source, ep) for _, name, source, ep in found]


def discover(
    *,
    extra: Iterable[Collector | type[Collector]] = (),
    disable: Iterable[str] = (),
    enable: Iterable[str] = (),
) -> Discovery:
    """Find the collectors to run: entry points (built-ins first), then ``extra``.

    Names in ``disable`` are dropped; plugins with ``default_enabled = False`` are kept only
    when named in ``enable``. The first collector with a given name wins; later ones become a
    warning naming both sources. A plugin that fails to load becomes a warning and a stand-in
    whose section reports the error. Never raises for a broken plugin.
    """
    disabled, enabled = set(disable), set(enable)
    collectors: list[Collector] = []
    sources: dict[str, str] = {}
    warnings: list[str] = []
    seen_names: set[str] = set()

    def add(inst: Collector, source: str) -> None:
        name = inst.name
        seen_names.add(name)
        if name in disabled:
            return
        if name in sources:
            warnings.append(
                f"collector {name!r} from {source} ignored: the name is taken by {sources[name]}"
            )
            return
        if not getattr(inst, "default_enabled", True) and name not in enabled:
            return
        sources[name] = source
        # remembered on the instance so sections name their source without extra plumbing
        with contextlib.suppress(AttributeError, TypeError):
            inst._rage_source = source  # type: ignore[attr-defined]
        collectors.append(inst)

    for ep_name, source, ep in _entry_points():
        if ep_name in disabled:
            seen_names.add(ep_name)
            continue
        try:
            inst = _instantiate(ep.load())
        except Exception as e:  # a plugin's bug must not break the report
            err = f"cannot load collector {ep_name!r} from {source}: {_describe_error(e)}"
            warnings.append(err)
            if ep_name not in sources:
                add(_broken(ep_name, err), source)
            continue
        add(inst, source)
    for obj in extra:
        try:
            inst = _instantiate(obj)
        except Exception as e:
            warnings.append(f"cannot use collector {obj!r}: {_describe_error(e)}")
            continue
        add(inst, f"app ({type(inst).__module__})")
    for name in sorted((disabled | enabled) - seen_names):
        warnings.append(f"no collector named {name!r} is installed")
    return Discovery(collectors=collectors, sources=sources, warnings=warnings)


class _Slot:
    """Where a collector's thread leaves its result; ``abandoned`` once the runner moves on."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.abandoned = False
        self.status = "error"
        self.data: Any = None
        self.error: str | None = None
        self.files: Mapping[str, str] = {}
        self.duration = 0.0


def _run_one(collector: Collector, ctx: Context, slot: _Slot) -> None:
    start = time.monotonic()
    status, data, error, files = "ok", None, None, {}
    try:
        if not collector.applies(ctx):
            status, error = "skipped", "does not apply here"
        else:
            out = collector.collect(ctx)
            if isinstance(out, CollectorOutput):
                data, files = out.data, dict(out.files)
            else:
                data = out
    except Exception as e:  # the contract: a collector's failure is its section's error
        status, error = "error", _describe_error(e)
    with slot.lock:
        if slot.abandoned:
            return
        slot.status, slot.data, slot.error, slot.files = status, data, error, files
        slot.duration = time.monotonic() - start
        slot.done.set()


def run_collectors(
    collectors: Sequence[Collector],
    ctx: Context,
    *,
    only: Iterable[str] = (),
    skip: Iterable[str] = (),
    deadline_s: float = 10.0,
    sources: Mapping[str, str] | None = None,
) -> list[Section]:
    """Run ``collectors`` in parallel threads; one Section each, in the order given.

    ``only`` / ``skip`` select by name (unknown names raise :class:`UsageError`); collectors
    left out produce no section. Each collector gets its own ``timeout`` and all share
    ``deadline_s``; one that overruns is marked ``timeout``, its subprocesses are killed and
    its thread is abandoned (a daemon), so this returns within the deadline plus a little.
    """
    only_set, skip_set = set(only), set(skip)
    known = {c.name for c in collectors}
    unknown = sorted((only_set | skip_set) - known)
    if unknown:
        raise UsageError(
            f"unknown collector {', '.join(map(repr, unknown))}",
            hint=f"available: {', '.join(sorted(known))}",
        )
    chosen = [
        c for c in collectors
        if (not only_set or c.name in only_set) and c.name not in skip_set
    ]
    start = time.monotonic()
    overall = start + deadline_s
    jobs: list[tuple[Collector, _Slot, _ProcessTracker, float]] = []
    for c in chosen:
        limit = min(start + float(getattr(c, "timeout", 5.0)), overall)
        tracker = _ProcessTracker(limit)
        slot = _Slot()
        t = threading.Thread(
            target=_run_one, args=(c, replace(ctx, _tracker=tracker), slot),
            name=f"rage-collector-{c.name}", daemon=True,
        )
        t.start()
        jobs.append((c, slot, tracker, limit))
    sections = []
    for c, slot, tracker, limit in jobs:
        slot.done.wait(max(limit - time.monotonic(), 0.0))
        with slot.lock:
            if not slot.done.is_set():
                slot.abandoned = True
                slot.status = "timeout"
                slot.duration = time.monotonic() - start
                slot.error = f"gave up after {slot.duration:.1f}s"
        if slot.abandoned:
            tracker.cancel()
        src = sources.get(c.name, "") if sources else getattr(c, "_rage_source", "")
        sections.append(Section(
            name=c.name, status=slot.status, duration_s=slot.duration, data=slot.data,
            error=slot.error, files=slot.files, description=getattr(c, "description", ""),
            source=src,
        ))
    return sections
