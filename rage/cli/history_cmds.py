"""`rage list`, `rage show`, `rage forget`, `rage gc`: reading and pruning the history."""

from __future__ import annotations

import os
from pathlib import Path

import click

from rage.cli.render import (
    app_width,
    checked_settings,
    command_line,
    emit_json,
    format_duration,
    format_exit,
    format_started,
    format_status,
    run_header,
    run_rows,
    warn,
)
from rage.cli.termtext import clean, clean_line
from rage.errors import DeclinedError, NotFoundError, UsageError
from rage.fsutil import read_regular, read_tail
from rage.record.history import Run, RunStore

# `rage show --output-log` prints at most this much of each file (the recorder keeps
# output_cap, 8 MiB by default, of each stream)
SHOW_MAX_BYTES = 64 * 1024 * 1024

app_option = click.option("--app", "-a", metavar="NAME", help="Only runs of this app.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


@click.command("list")
@app_option
@click.option("--failed", is_flag=True, help="Only failed, crashed, interrupted or lost runs.")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True,
              metavar="N", help="Show at most N runs.")
@json_option
def list_cmd(app: str | None, failed: bool, limit: int, as_json: bool) -> None:
    """List recorded runs, newest first (`!` marks the ones that went wrong)."""
    from rage.errors import ConfigError

    try:  # listing needs no settings, but a broken config must not go unnoticed
        checked_settings(app)
    except ConfigError as e:
        warn(e.message)
    listing = RunStore().list(app, problems_only=failed, limit=limit + 1)
    for w in listing.warnings:
        warn(w)
    runs, more = listing.runs[:limit], len(listing.runs) > limit
    if as_json:
        emit_json({"runs": [r.to_dict() for r in runs], "more": more,
                   "warnings": listing.warnings})
        return
    if not runs:
        what = "failed runs" if failed else "runs"
        scope = f" of {app}" if app else ""
        click.echo(f"no {what}{scope} recorded yet: try `rage run -- CMD`", err=True)
        return
    show_app = app is None and len({r.app for r in runs}) > 1
    click.echo(run_header(show_app=show_app, width=app_width(runs)))
    for line in run_rows(runs, show_app=show_app):
        click.echo(line)
    if more:
        click.echo(f"(showing the newest {limit}; more with --limit {limit * 5})", err=True)


@click.command()
@click.argument("run_ref", metavar="RUN")
@app_option
@click.option("--output-log", is_flag=True, help="Print the captured output (pager on a terminal).")
@json_option
def show(run_ref: str, app: str | None, output_log: bool, as_json: bool) -> None:
    """Show one run: RUN is an id, a unique prefix, `last` or `last-failed`."""
    skipped: list[str] = []
    run = RunStore().resolve(run_ref, app, warnings=skipped)
    for w in skipped:  # damaged records newer than `last`
        warn(w)
    if run.status == "corrupt":
        warn(f"run {run.app}/{run.id} is broken: {run.problem}")
    if output_log:
        names = ["output.log", "stdout.log", "stderr.log", "traceback.txt", "fatal.log"]
        # a stream that stayed silent has no file (rage run creates one with the first
        # bytes), only its entry in the record: shown empty, as its empty file was
        silent = {t.get("name") for t in run.meta.get("truncation") or []
                  if isinstance(t, dict) and t.get("total_bytes") == 0}
        parts = []
        for n in names:
            p = run.dir / n
            if not os.path.lexists(p):
                if n in silent:
                    parts.append(f"==> {n} <==\n")
                continue
            try:  # a regular file only, within a bound: never a FIFO or a link to a device
                raw = read_regular(p, SHOW_MAX_BYTES + 1)
            except OSError as e:
                warn(f"{n} of run {run.short_id} not shown: {e.strerror or e}")
                continue
            data = raw[:SHOW_MAX_BYTES].decode("utf-8", "replace")
            if len(raw) > SHOW_MAX_BYTES:
                data += f"\n[rage: only the first {SHOW_MAX_BYTES // (1024 * 1024)} MiB shown]\n"
            parts.append(data if n == "output.log" else f"==> {n} <==\n{data}")
        if not parts:
            raise NotFoundError(f"run {run.short_id} has no captured output")
        text = clean("\n".join(parts))
        from rage.termjob import can_page

        if can_page():  # a pager reads keys: not in the background (`rage show ... &`)
            click.echo_via_pager(text)
        else:
            click.echo(text, nl=False)
        return
    if as_json:
        d = run.to_dict()
        d["files"] = [str(p.relative_to(run.dir)) for p in run.files()]
        emit_json(d)
        return
    rows = [
        ("run", f"{run.id}  ({clean_line(run.app)})"),
        ("command", command_line(run.argv)),
        ("cwd", clean_line(run.cwd or "-")),
        ("status", format_status(run.status, pad=False)),
        ("exit", format_exit(run)),
        ("started", format_started(run.started_at)),
        ("duration", format_duration(run.duration_s)),
        ("recorder", clean_line(run.recorder or "-")),
    ]
    exception = _exception_line(run)
    if exception:
        rows.append(("exception", exception))
    if isinstance(run.meta.get("error"), str):  # the command could not start (127, 126)
        rows.append(("error", clean_line(run.meta["error"])[:300]))
    if run.meta.get("peak_rss_bytes") is not None:
        rows.append(("peak memory", _size(run.meta["peak_rss_bytes"])))
    elif run.meta.get("peak_rss_at_most_bytes") is not None:
        # a command smaller than rage's own memory: Linux counts that in (see meta.json)
        rows.append(("peak memory", f"at most {_size(run.meta['peak_rss_at_most_bytes'])}"
                                    " (less than rage's own: not measured exactly)"))
    for key, label in (("cpu_user_s", "cpu user"), ("cpu_sys_s", "cpu system")):
        if isinstance(run.meta.get(key), int | float):
            rows.append((label, format_duration(float(run.meta[key]))))
    if run.meta.get("app_version") is not None:
        rows.append(("app version", clean_line(run.meta["app_version"])))
    for note in run.meta.get("truncation") or []:
        if isinstance(note, dict) and note.get("dropped_bytes"):
            rows.append(("truncated", f"{clean_line(note.get('name'))}: "
                         f"{_size(note['dropped_bytes'])} dropped from the middle "
                         f"(of {_size(note.get('total_bytes'))}; output_cap)"))
    for k, v in rows:
        click.echo(f"{k:>15}: {v}")
    files = run.files()
    if files:
        click.echo(f"{'files':>15}:")
        for p in files:
            size = _size(p.lstat().st_size)  # (a symlink's own: nothing is followed)
            click.echo(f"{'':>17}{clean_line(p.relative_to(run.dir))}  ({size})")


def _size(n: object) -> str:
    from rage.config import format_size

    return format_size(n) if isinstance(n, int) else "?"


def _exception_line(run: Run) -> str | None:
    """The last line of the run's traceback (``ValueError: ...``), if it has one: the
    recorder's ``traceback.txt``, else (a wrapped ``python3 crash.py``) the last traceback
    its output shows, as the receiver finds it."""
    tail = _tail(run.dir / "traceback.txt")
    if tail is not None:
        lines = [ln for ln in tail.splitlines() if ln.strip()]
        return clean_line(lines[-1].strip())[:300] if lines else None
    for name in ("stderr.log", "output.log"):
        text = _tail(run.dir / name)
        line = _exception_in_output(text) if text else None
        if line:
            return clean_line(line)[:300]
    return None


def _tail(path: Path, size: int = 16384) -> str | None:
    try:  # regular files only: never a FIFO or a link to a device planted in the history
        return read_tail(path, size).decode("utf-8", "replace")
    except OSError:
        return None


_TB_START = "Traceback (most recent call last):"
_CHAINED = ("During handling of the above exception", "The above exception was the direct")


def _exception_in_output(text: str) -> str | None:
    """The exception line of the last Python traceback in ``text``: the first line after
    ``Traceback (most recent call last):`` that is not indented (a frame or its source)."""
    at = text.rfind(_TB_START)
    if at < 0:
        return None
    for line in text[at:].splitlines()[1:]:
        plain = line.rstrip("\r")
        if plain.strip() and not plain[0].isspace() and not plain.startswith(_CHAINED):
            return plain.strip()
    return None


@click.command()
@click.argument("run_ref", metavar="RUN", required=False)
@app_option
@click.option("--all", "all_runs", is_flag=True, help="Forget every run of --app.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation with --all.")
def forget(run_ref: str | None, app: str | None, all_runs: bool, yes: bool) -> None:
    """Delete one run, or every run of an app with --all."""
    store = RunStore()
    if all_runs:
        if run_ref or not app:
            raise UsageError("use either RUN or --all --app NAME")
        count = len(store.run_dirs(app))
        if not count:
            raise NotFoundError(f"no runs of {app} recorded",
                                hint="`rage list` shows the apps that have runs")
        if not yes:
            from rage.termjob import can_ask

            if not can_ask():
                raise UsageError(f"not a terminal: pass --yes to forget all {count} run(s) "
                                 f"of {app} without confirmation")
            if not click.confirm(f"forget all {count} run(s) of {app}?", err=True):
                raise DeclinedError("nothing forgotten")
        n = store.forget_all(app)
        click.echo(f"forgot {n} run(s) of {app}")
        return
    if not run_ref:
        raise UsageError("name a RUN to forget (or --all --app NAME)")
    run = store.resolve(run_ref, app)
    store.forget(run)
    click.echo(f"forgot run {run.short_id} ({run.app})")


@click.command()
@app_option
@json_option
def gc(app: str | None, as_json: bool) -> None:
    """Apply retention now (max_runs, max_bytes, max_age_days from the config)."""
    store = RunStore()
    results = {}
    for a in [app] if app else store.apps():
        s = checked_settings(a)
        results[a] = store.prune(a, max_runs=s.max_runs, max_bytes=s.max_bytes,
                                 max_age_days=s.max_age_days)
    if as_json:
        emit_json(results)
        return
    for a, r in results.items():
        click.echo(f"{a}: removed {len(r.removed)}, kept {r.kept} run(s), {r.bytes_kept} bytes")
