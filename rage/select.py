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


def _resolve_last(store: RunStore, app: str | None, ref: str) -> Run:
    try:
        return store.resolve(ref, app)
    except NotFoundError as e:
        if ref == "last" or not candidates(store, app, limit=1):
            raise nothing_recorded(app) from None
        raise NotFoundError(e.message, hint="pick another run: `rage list` lists them") from None


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
