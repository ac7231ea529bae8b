"""What a report would otherwise build first, built ahead by a recording: a detached,
idle-priority child started after the recorded command ended, once per rage home, rage
version, interpreter, user, host and home directory.

A report in a new rage home compiled its redaction engine (four Hyperscan databases,
~200 ms; the ~160 regular expressions it uses, ~100 ms: :mod:`rage.redact.dbcache`,
:mod:`rage.redact.regexcache`) and read the installed distributions
(:mod:`collectors.distcache`, ~40 ms) before it could start: 0.5-1.0 s for the first
report of a two-line run. They hold the user's, host's and home's names, and the compiled
databases the CPU's features, so they cannot come with the package: they are built on
the machine, by the user's first recording.

The recorder's only cost is :func:`rage.record.store.prebuild_after_run`: one ``stat`` of
the stamp :func:`rage.paths.prebuild_stamp` names; on the first recording of a home, this
module's :func:`spawn_if_needed`, a ``posix_spawn`` (no wait). The child (:func:`main`) lowers its
priority (nice 19, ``SCHED_IDLE`` where Linux has it), takes a lock so two recordings
starting at once build once, reads the distributions and the app's dependency tree, and
prepares a report of the run just recorded (collected and redacted into a temporary
directory and thrown away: the same code paths, and so the same databases and patterns,
as the user's report; nothing is written but the caches; a run of more than a MiB is not
prepared, the engine alone is built), and leaves the stamp. Any failure only leaves
the work to the first report, as before.
"""

from __future__ import annotations

import os
import sys

from rage.paths import prebuild_needed, prebuild_stamp

TYPE_CHECKING = False  # (no typing import: recorders import this module)
if TYPE_CHECKING:
    from rage.record.history import Run

_STAMP = "prebuilt-"  # (rage.paths.prebuild_stamp names them)
KEEP = 4  # stamps kept, the newest (one per rage version, interpreter, user, host, home)


def spawn_if_needed(root: str, app: str | None) -> int | None:
    """Start the prebuild in the background unless it ran already (see the module's text);
    for recorders, once the recorded command has ended. Never raises; the child's pid if
    one was started (not waited for: a recorder exits, init reaps it)."""
    try:
        if not prebuild_needed(root):
            return None
        rage_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        # `-c` puts the working directory (the recorded command's) first on sys.path: out,
        # before any import. rage as the user's reports import it; from the directory it
        # was found in only when it is not there (a shim's `python -I -S`)
        code = ("import sys\nif sys.path[:1] == ['']: del sys.path[0]\ntry:\n"
                "    import rage\nexcept ImportError:\n    sys.path.append(sys.argv[1])\n"
                "from rage.report.prebuild import main\nsys.exit(main(sys.argv[2:]))")
        argv = [sys.executable, "-c", code, rage_dir, root, *([app] if app else [])]
        null = os.devnull
        # its own session, no terminal; none of the recorder's blocked signals (its
        # supervisor waits for them), SIGHUP and SIGTERM (1, 15 everywhere) not ignored:
        # `kill` stops it (no `signal` import: recorders leave it out of their start-up)
        # nor any descriptor the recorder inherited (a pipe a shell passed as fd 3, make's
        # jobserver): whoever reads it to its end would wait for the prebuild too
        closes = [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited_fds()]
        return os.posix_spawn(sys.executable, argv, os.environ, setsid=True, setsigmask=(),
                       setsigdef=(1, 15), file_actions=[
                           (os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
                           (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
                           (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0), *closes])
    except Exception:  # the first report builds them instead
        return None


def _inherited_fds() -> list[int]:
    """This process's open descriptors above 2 that an exec keeps (not close-on-exec)."""
    where = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"
    try:
        names = os.listdir(where)
    except OSError:
        return []
    fds = []
    for name in names:
        if name.isdigit() and int(name) > 2:
            try:  # (the listing's own descriptor is closed by now)
                if os.get_inheritable(int(name)):
                    fds.append(int(name))
            except OSError:
                continue
    return fds


def _idle() -> None:
    import contextlib

    with contextlib.suppress(OSError):
        os.nice(19)
    policy = getattr(os, "SCHED_IDLE", None)
    if policy is not None:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, policy, os.sched_param(0))


SMALL = 1 << 20  # a run with more bytes than this is not prepared (its redaction is work)


def _small(run: Run) -> bool:
    total = 0
    for f in run.files():
        try:
            total += f.lstat().st_size
        except OSError:
            continue
    return total <= SMALL


def build(root: str, app: str | None) -> None:
    """Build the caches a report of ``app``'s last run would build (see the module's text)."""
    from pathlib import Path

    from collectors.distcache import build as build_dists

    build_dists(root, (app,) if app else ())
    run = None
    if app:
        from rage.errors import RageError
        from rage.record.history import RunStore

        try:
            run = RunStore(Path(root)).resolve("last", app)
        except RageError:
            run = None
    if run is not None and _small(run):
        from rage.config import load_settings_lenient
        from rage.report.model import ReportRequest
        from rage.report.pipeline import prepare

        settings, _warning = load_settings_lenient(run.app)
        with prepare(ReportRequest(run=run, settings=settings)):
            pass  # (thrown away: only the caches it filled stay)
        return
    # no run to prepare, or a large one: the engine as any report builds it
    from collectors.distcache import current
    from rage.redact import Redactor

    redactor = Redactor(pseudonymize=True)
    redactor.learn([os.environ], [])
    redactor.start_learning()
    redactor.bytes(b"token=abc\n-----BEGIN RSA PRIVATE KEY-----\n")
    redactor.learned()
    redactor.data({"distributions": current(root)["distributions"],
                   "environ": dict(os.environ)})


def _create(path: str) -> int:
    """A 0600 file of ours, opened without following a symlink."""
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def main(argv: list[str]) -> int:
    """``<root> [app]``: the detached child of :func:`spawn_if_needed`."""
    import fcntl

    from rage.fsutil import is_own_dir, private_dir

    root, app = argv[0], (argv[1] if len(argv) > 1 else None)
    _idle()
    os.environ["RAGE_HOME"] = root  # (the caches go where the run is)
    cache = os.path.join(root, ".cache")
    private_dir(cache)
    if not is_own_dir(cache):  # never into a planted symlink's target
        return 1
    os.chdir(root)  # (not holding the recorded command's directory busy)
    lock = _create(os.path.join(cache, "prebuild.lock"))
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return 0  # another recording's child is building them
        if not prebuild_needed(root):
            return 0
        build(root, app)
        os.close(_create(prebuild_stamp(root)))
        from rage.redact.dbcache import prune

        prune(cache, _STAMP, KEEP)
    finally:
        os.close(lock)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
