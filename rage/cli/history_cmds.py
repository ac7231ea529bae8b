"""`rage list`, `rage show`, `rage forget`, `rage gc`: reading and pruning the history."""

from __future__ import annotations

import sys

import click

from rage.cli.render import (
    command_line,
    emit_json,
    format_duration,
    format_exit,
    format_status,
    format_when,
    run_rows,
    warn,
)
from rage.config import load_settings
from rage.errors import NotFoundError, UsageError
from rage.record.history import RunStore

app_option = click.option("--app", "-a", metavar="NAME", help="Only runs of this app.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


@click.command("list")
@app_option
@click.option("--failed", is_flag=True, help="Only failed, crashed, interrupted or lost runs.")
@click.option("--limit", "-n", type=click.IntRange(min=1), default=20, show_default=True)
@json_option
def list_cmd(app: str | None, failed: bool, limit: int, as_json: bool) -> None:
    """List recorded runs, newest first (`!` marks the ones that went wrong)."""
    listing = RunStore().list(app, problems_only=failed, limit=limit)
    for w in listing.warnings:
        warn(w)
    if as_json:
        emit_json({"runs": [r.to_dict() for r in listing.runs], "warnings": listing.warnings})
        return
    if not listing.runs:
        click.echo("no runs recorded yet: try `rage run -- CMD`", err=True)
        return
    show_app = app is None and len({r.app for r in listing.runs}) > 1
    for line in run_rows(listing.runs, show_app=show_app):
        click.echo(line)


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
        names = ["output.log", "stdout.log", "stderr.log"]
        parts = []
        for n in names:
            p = run.dir / n
            if p.is_file() and not p.is_symlink():  # never a planted link to a device
                data = p.read_bytes().decode("utf-8", "replace")
                parts.append(data if n == "output.log" else f"==> {n} <==\n{data}")
        if not parts:
            raise NotFoundError(f"run {run.short_id} has no captured output")
        text = "\n".join(parts)
        if sys.stdout.isatty():
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
        ("run", f"{run.id}  ({run.app})"),
        ("command", command_line(run.argv)),
        ("cwd", run.cwd or "-"),
        ("status", format_status(run.status).rstrip()),
        ("exit", format_exit(run)),
        ("started", format_when(run.started_at)),
        ("duration", format_duration(run.duration_s)),
        ("recorder", run.recorder or "-"),
    ]
    for key in ("peak_rss_bytes", "cpu_user_s", "cpu_sys_s", "app_version"):
        if run.meta.get(key) is not None:
            rows.append((key, str(run.meta[key])))
    for k, v in rows:
        click.echo(f"{k:>15}: {v}")
    files = run.files()
    if files:
        click.echo(f"{'files':>15}:")
        for p in files:
            click.echo(f"{'':>17}{p.relative_to(run.dir)}  ({p.stat().st_size} bytes)")


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
        if not yes and sys.stdin.isatty():
            click.confirm(f"forget every run of {app}?", abort=True)
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
        s = load_settings(a)
        results[a] = store.prune(a, max_runs=s.max_runs, max_bytes=s.max_bytes,
                                 max_age_days=s.max_age_days)
    if as_json:
        emit_json(results)
        return
    for a, r in results.items():
        click.echo(f"{a}: removed {len(r.removed)}, kept {r.kept} run(s), {r.bytes_kept} bytes")
