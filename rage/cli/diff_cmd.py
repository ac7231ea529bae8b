"""`rage diff`: what changed between two runs, or since a run's app last worked."""

from __future__ import annotations

import click

from rage.cli.render import emit_json, warn
from rage.cli.termtext import clean_line
from rage.errors import NotFoundError


@click.command("diff")
@click.argument("run_ref", metavar="RUN", default="last-failed")
@click.argument("other_ref", metavar="[RUN2]", required=False)
@click.option("--app", "-a", metavar="NAME", help="Look for the runs in this app only.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
def diff(run_ref: str, other_ref: str | None, app: str | None, as_json: bool) -> None:
    """What changed since RUN's app last worked (RUN: default last-failed); with RUN2, from
    RUN to RUN2. Values of environment variables are never shown; options, arguments and
    paths are redacted as a report would send them."""
    from rage.paths import home_root
    from rage.record.history import RunStore
    from rage.redact import Redactor
    from rage.report import changes

    store = RunStore()
    said: list[str] = []
    run = store.resolve(run_ref, app, said)
    for w in said:
        warn(w)
    redactor = Redactor(pseudonymize=True)
    if other_ref is None:
        found = changes.for_run(run, redactor)
        if found is None:
            raise NotFoundError(f"no earlier successful run of {run.app} to compare "
                                f"run {run.short_id} with")
    else:
        other = store.resolve(other_ref, app)
        found = changes.compare(run, other, redactor, str(home_root() / ".cache"))
    if as_json:
        emit_json(found)
        return
    click.echo(clean_line(changes.headline(found)))
    for item in changes.items(found):
        click.echo(f"  - {clean_line(item)}")
    a, b = found.get("exit") or ("?", "?")
    click.echo(f"  ({a} -> {b})")
