"""The end of a recorded run: how the process ended, as a shell sees it, and where that goes.

:func:`finish_run` is what :meth:`rage.integration.recorder.Recorder.finish` does at exit:
it closes the log and the output capture, puts the hooks back, works out the exit code,
signal and status, and writes them into the process's own run, the wrapper's run it joined
(``joined.json``, merged by the wrapper) or, for a child of a recorded run, its
``child.json``. Imported at exit only.
"""

from __future__ import annotations

import os
import sys

from rage.integration.runstate import CHILD, JOINED_FILE, OWN, WRAPPER, RunState, typed_argv

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def outcome(rec: RunState) -> tuple[int | None, int | None, str | None]:
    """(exit_code, signal, status) of this process as a shell would see it."""
    import _signal  # type: ignore[import-not-found]  # signal without its enums

    from rage.integration.hooks import exit_code_of
    from rage.record.store import CRASHED, INTERRUPTED

    if rec._crashed:
        return 1, None, CRASHED
    if rec._interrupted:  # an uncaught KeyboardInterrupt is re-raised as a real SIGINT
        return None, int(_signal.SIGINT), None
    if rec._broken_pipe:
        return None, int(_signal.SIGPIPE), INTERRUPTED
    code = exit_code_of(rec._exit_status) if rec._exit_noted else 0
    return code, None, None


def finish_run(rec: RunState) -> dict[str, Any] | None:
    """Record the end of ``rec``'s run; the final meta.json of its own run, else None."""
    from rage.record.store import status_for

    assert rec.dir is not None and rec.settings is not None
    if not (rec._crashed or rec._interrupted or rec._broken_pipe):
        # an excepthook installed after ours (rich, IPython...) may not chain to it, but
        # Python sets sys.last_value before calling any hook for an uncaught exception
        last = getattr(sys, "last_value", None)
        if isinstance(last, KeyboardInterrupt):
            rec._interrupted = True
        elif isinstance(last, BrokenPipeError):
            rec.on_broken_pipe()
        elif isinstance(last, Exception):
            rec.on_crash(type(last), last, last.__traceback__)
    if not rec._crashed and not rec._interrupted and not stdout_flushes():
        rec._broken_pipe = True  # the interpreter's last flush would fail the same way
    extra: dict[str, Any] = {}
    truncation = []
    if rec._capture is not None:
        rec._capture.stop()
    if rec._handler is not None:
        t = rec._handler.finish()
        if t.dropped_bytes:
            truncation.append(t.to_dict())
        if t.total_bytes == 0:
            _unlink(rec.file("log.jsonl"))
    if rec._output is not None:
        truncation += rec._output.finish()
        for name in ("stdout.log", "stderr.log"):
            _unlink_if_empty(rec.file(name))
    if rec._hooks is not None:
        rec._hooks.uninstall()
    _unlink_if_empty(rec.file("fatal.log"))
    if truncation:
        extra["truncation"] = truncation
    if rec._thread_exceptions:
        extra["thread_exceptions"] = rec._thread_exceptions
    if rec._broken_pipe:
        extra["broken_pipe"] = True
    code, sig, status = outcome(rec)
    from rage.integration.handoff import withdraw

    withdraw(rec._live_entry)
    if rec.mode == CHILD:
        finish_child(rec, code, sig, status or status_for(code, sig), extra)
        return None
    if rec.mode == OWN:
        from rage.integration.handoff import find_wrapper_run

        wrapper = find_wrapper_run(rec.root, rec.started_s)
        if wrapper is None:
            return finish_own(rec, code, sig, status, extra)
        move_to_wrapper(rec, wrapper)
    write_joined(rec, code, sig, status, extra)
    return None


def stdout_flushes() -> bool:
    """False if flushing the tool's stdout fails for a closed pipe (`tool | head`)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return False
    except Exception:
        pass
    return True


def finish_own(rec: RunState, code: int | None, sig: int | None, status: str | None,
               extra: dict[str, Any]) -> dict[str, Any]:
    run = rec.run
    assert run is not None and rec.settings is not None
    extra.update(_usage())
    meta = run.finish_meta(exit_code=code, signal=sig, status=status, **extra)
    if code and status is None and rec.settings.hint_on_failure:
        try:
            sys.stderr.write(f"{rec.app}: this run failed (exit {code}); to report it"
                             f" run: {rec.hint_command()}\n")
            sys.stderr.flush()
        except Exception:
            pass
    hint_earlier_crashes(rec)
    if not rec._interrupted:
        # retention may import dataclasses, whose exec() of generated code clears the
        # interpreter's "uncaught KeyboardInterrupt" flag: the tool would exit 1
        # instead of dying of SIGINT; the next run prunes instead
        retention(rec, run.id)
        from rage.record.store import prebuild_after_run

        prebuild_after_run(rec.root, rec.app)
    return meta


def hint_earlier_crashes(rec: RunState) -> None:
    """A run killed by a fatal signal could print no hint: say it now, once."""
    if not rec.earlier_crashes:
        return
    base = rec.report_command
    try:
        for run_id, what in rec.earlier_crashes:
            short = run_id.rsplit("-", 1)[-1]
            sys.stderr.write(f"{rec.app}: an earlier run crashed ({what}); to report it"
                             f" run: {base} {short}\n")
        sys.stderr.flush()
    except Exception:
        pass


def retention(rec: RunState, run_id: str) -> None:
    """Prune old runs when the cheap check says so (the wrapper's rule); best effort. The
    check is the run store's (loaded already): the retention modules load only when due."""
    from rage.record.store import prune_due

    s = rec.settings
    assert s is not None
    try:
        if not prune_due(os.path.join(rec.root, rec.app), s.max_runs, 3600.0):
            return
        from pathlib import Path

        from rage.record.history import RunStore

        RunStore(Path(rec.root)).maybe_prune(
            rec.app, max_runs=s.max_runs, max_bytes=s.max_bytes,
            max_age_days=s.max_age_days, keep=[run_id], interval_s=3600.0)
    except Exception:
        pass


def move_to_wrapper(rec: RunState, wrapper: str) -> None:
    """Found the wrapper's run at exit: move what this process recorded into it and
    drop this process's own run (the wrapper's output capture is the complete one)."""
    import shutil

    from rage.integration.handoff import move_into

    run = rec.run
    assert run is not None and rec.dir is not None
    move_into(rec.dir, wrapper, ["log.jsonl", "traceback.txt", "fatal.log"])
    shutil.rmtree(rec.dir, ignore_errors=True)
    run.release()
    rec.run, rec.dir, rec.mode = None, wrapper, WRAPPER


def write_joined(rec: RunState, code: int | None, sig: int | None, status: str | None,
                 extra: dict[str, Any]) -> None:
    """Leave what only this process knows for the wrapper to merge into its meta.json
    when it finishes (it owns that file until then)."""
    from rage.fsutil import write_json_atomic

    if rec._broken_pipe:  # the status the wrapper sees: 1 (uncaught), 120 (last flush)
        code = 1 if rec._broken_pipe_raised else 120
    joined: dict[str, Any] = {"app_version": rec.version, "python_app": rec.app,
                              "python_pid": rec._pid, "exit_code": code}
    if status is not None and sig is None:  # crashed (uncaught exception), broken pipe
        joined["status"] = status
    if rec._report_command_run:
        joined["report_command"] = True
    for key in ("thread_exceptions", "broken_pipe"):
        if key in extra:
            joined[key] = extra[key]
    if "truncation" in extra:
        joined["python_truncation"] = extra["truncation"]
    try:  # noqa: SIM105 - no contextlib on the start-up path
        write_json_atomic(rec.file(JOINED_FILE), joined)
    except OSError:
        pass


def finish_child(rec: RunState, code: int | None, sig: int | None, status: str,
                 extra: dict[str, Any]) -> None:
    write_child_info(rec, status, code, sig, extra)


def write_child_info(rec: RunState, status: str, code: int | None, sig: int | None,
                     extra: dict[str, Any]) -> None:
    from rage.fsutil import write_json_atomic
    from rage.record.store import now_iso

    info = {"pid": rec._pid, "ppid": os.getppid(), "argv": typed_argv(),
            "status": status, "exit_code": code, "signal": sig,
            "ended_at": None if status == "running" else now_iso(), **extra}
    try:  # noqa: SIM105 - no contextlib on the start-up path
        write_json_atomic(rec.file("child.json"), info)
    except OSError:
        pass



def _unlink(path: str) -> None:
    try:  # noqa: SIM105 - no contextlib on the start-up path
        os.unlink(path)
    except OSError:
        pass


def _unlink_if_empty(path: str) -> None:
    try:
        if os.stat(path).st_size == 0:
            os.unlink(path)
    except OSError:
        pass


def _usage() -> dict[str, Any]:
    try:
        import resource

        ru = resource.getrusage(resource.RUSAGE_SELF)
    except (ImportError, OSError):
        return {}
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB elsewhere
    peak = _own_peak_rss()
    return {
        "cpu_user_s": round(ru.ru_utime, 6),
        "cpu_sys_s": round(ru.ru_stime, 6),
        "peak_rss_bytes": int(ru.ru_maxrss) * scale if peak is None else peak,
    }


def _own_peak_rss() -> int | None:
    """This process's own peak RSS in bytes (``VmHWM``, Linux), None where unknown.

    ``ru_maxrss`` also counts the memory this process was exec'd from: a tool started by a
    large parent through vfork (Python's subprocess, posix_spawn) would report the
    parent's peak as its own."""
    from rage.record.peakrss import own_peak_rss_kib

    kib = own_peak_rss_kib()
    return None if kib is None else kib * 1024
