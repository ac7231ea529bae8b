"""Choosing the run to report: from a reference, from --last/--last-failed, or by asking.

The asking part takes its input and output as callables so it can be driven by a terminal
(the CLI passes click's prompt functions) and by tests alike; it never reads stdin itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from rage.errors import DeclinedError, NotFoundError, UsageError
from rage.record.history import RUNNING, Run, RunStore

CHOOSER_LIMIT = 15
NOTHING_RECORDED_HINT = "record a run first: `rage run -- CMD`"


def is_own_live_run(run: Run) -> bool:
    """The run this very process is recording (e.g. `mytool rage` inside mytool)."""
    return run.status == RUNNING and run.pid == os.getpid()


def candidates(store: RunStore, app: str | None, *, limit: int | None = None) -> list[Run]:
    """Runs worth offering, newest first: no report commands, not this process's own run."""
    listing = store.list(app, include_report_commands=False)
    runs = [r for r in listing.runs if not is_own_live_run(r)]
    return runs if limit is None else runs[:limit]


def nothing_recorded(app: str | None) -> NotFoundError:
    scope = f" for app {app!r}" if app else ""
    return NotFoundError(f"no runs recorded{scope}", hint=NOTHING_RECORDED_HINT)


def resolve_flags(
    store: RunStore, app: str | None, ref: str | None, *, last: bool, last_failed: bool
) -> Run | None:
    """The run named by RUN / --last / --last-failed, or None when none of them was given."""
    given = [x for x in (ref is not None, last, last_failed) if x]
    if len(given) > 1:
        raise UsageError("give only one of RUN, --last and --last-failed")
    if ref is not None:
        ref_norm = ref.strip()
        if ref_norm in {"last", "last-failed"}:
            return _resolve_last(store, app, ref_norm)
        run = store.resolve(ref_norm, app)
        if is_own_live_run(run):
            raise UsageError("that is this process's own run, still in progress")
        return run
    if last or last_failed:
        return _resolve_last(store, app, "last-failed" if last_failed else "last")
    return None


# How far a run's ``started_at`` may be after the second its id names: both are taken from
# one clock reading by `rage run`, from two readings a moment apart by older recorders.
ID_SLACK_S = 2.0


def id_second(run_id: str) -> str:
    """The second a run id names, written as ``started_at`` writes it (they sort alike)."""
    d = run_id
    return f"{d[0:4]}-{d[4:6]}-{d[6:8]}T{d[9:11]}:{d[11:13]}:{d[13:15]}"


def stop_before(found: Run) -> str | None:
    """Ids dated before this second cannot sort after ``found`` (None: any may, ``found``
    having no valid ``started_at``)."""
    if not found.started_at:
        return None
    from datetime import timedelta

    from rage.record.history import parse_iso

    then = parse_iso(found.started_at) - timedelta(seconds=ID_SLACK_S)
    return then.strftime("%Y-%m-%dT%H:%M:%S")


def newest(store: RunStore, app: str | None, *, problems_only: bool) -> Run | None:
    """What ``store.resolve("last" / "last-failed", app)`` picks, reading the history
    newest first: ``meta.json`` only back to the pick (and the runs of its last seconds),
    not every run of every app. Report commands, this process's own live run and damaged
    records are passed over, as there."""
    from rage.paths import check_app
    from rage.record.history import CORRUPT, load_run

    apps = [check_app(app)] if app else store.apps()
    dirs = sorted(((d.name, a, d) for a in apps for d in store.run_dirs(a)), reverse=True)
    best: Run | None = None
    stop: str | None = None
    for name, a, d in dirs:
        if stop is not None and id_second(name) < stop:
            break
        run = load_run(a, d)
        if run.status == CORRUPT or (problems_only and not run.is_problem) \
                or run.is_report_command or is_own_live_run(run):
            continue
        if best is None or (run.started_at or "", run.id) > (best.started_at or "", best.id):
            best = run
            stop = stop_before(best)
    return best


def _resolve_last(store: RunStore, app: str | None, ref: str) -> Run:
    run = newest(store, app, problems_only=ref == "last-failed")
    if run is not None:
        return run
    if ref == "last" or newest(store, app, problems_only=False) is None:
        raise nothing_recorded(app)
    scope = f" for app {app!r}" if app else ""
    raise NotFoundError(f"no failed run recorded{scope}",
                        hint="pick another run: `rage list` lists them")


def prompt_for_run(
    runs: list[Run],
    rows: list[str],
    ask: Callable[[str], str | None],
    say: Callable[[str], None],
    *,
    page_size: int = CHOOSER_LIMIT,
    header: str | None = None,
) -> Run:
    """Show ``rows`` (one per run) a page at a time and ask until the answer names a run.

    An answer is a row number, a run id (or a unique prefix of it or of its short form),
    ``m`` (or Enter) for the next page, or ``q``. ``ask`` returns the user's line, or None at
    end of input; ``q`` or end of input raises DeclinedError.
    """
    if not runs:
        raise NotFoundError("no runs to choose from", hint=NOTHING_RECORDED_HINT)
    n = len(runs)
    shown = 0

    def show_page() -> None:
        nonlocal shown
        if shown == 0:
            say("Recent runs (newest first, ! marks the ones that went wrong):")
            if header:
                say(header)
        end = min(shown + page_size, n)
        for row in rows[shown:end]:
            say(row)
        shown = end

    show_page()
    while True:
        more = shown < n
        extra = f", m for {min(page_size, n - shown)} more" if more else ""
        answer = ask(f"Which run do you want to report? [1-{shown}, or a run id{extra}, "
                     "q to quit]")
        if answer is None:
            raise DeclinedError("no run chosen")
        answer = answer.strip().lower()
        if answer in {"q", "quit", "exit"}:
            raise DeclinedError("no run chosen")
        if answer in {"", "m", "more"} and more:
            show_page()
            continue
        if answer.isdigit() and 1 <= int(answer) <= shown:
            return runs[int(answer) - 1]
        if len(answer) >= 4:  # shorter ones are typos of numbers, not ids
            matches = [r for r in runs if r.id.lower().startswith(answer)
                       or r.short_id.lower().startswith(answer)]
            if len(matches) == 1:
                return matches[0]
            if len(matches) > 1:
                say(f"{answer!r} matches {len(matches)} runs: type more of the id")
                continue
        say(f"pick a number 1-{shown}, a run id" + (", m for more" if more else "")
            + ", or q to quit")


def no_terminal_error() -> UsageError:
    return UsageError(
        "which run? there is no terminal to ask on: pass RUN, --last or --last-failed",
        hint="`rage list` shows the recorded runs and their ids",
    )
