"""`rage collect` and `rage collectors`: run the collectors here and now, or list them."""

from __future__ import annotations

from typing import Any

import click

from rage.cli.render import emit_json, format_duration, warn
from rage.errors import UsageError

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
app_option = click.option("--app", "-a", metavar="NAME",
                          help="Report as this app: its settings, its package tree first.")


def _discover(app: str | None) -> Any:
    from collectors.base import discover
    from rage.cli.render import checked_settings
    from rage.paths import check_app

    if app:
        check_app(app)
    settings = checked_settings(app)
    return settings, discover(disable=settings.disable_collectors, enable=settings.collectors)


def render_value(value: Any, indent: int = 2) -> list[str]:
    """Human-readable lines for JSON-able data: ``key: value``, nested blocks indented.

    Short lists of scalars fit on one line; ``{"name", "version", ...}`` items (packages,
    dependency trees) read as ``name version`` with their flags and nested ``requires``.
    """
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return [pad + "(none)"]
        if _is_package(value):
            return _render_package(value, indent)
        lines = []
        for k, v in value.items():
            if isinstance(v, dict | list) and v and not _inline_list(v):
                lines.append(f"{pad}{k}:")
                lines.extend(render_value(v, indent + 2))
            else:
                lines.append(f"{pad}{k}: {_scalar(v)}")
        return lines
    if isinstance(value, list):
        if not value:
            return [pad + "(none)"]
        lines = []
        for item in value:
            if isinstance(item, dict | list) and item:
                sub = render_value(item, indent + 2)
                lines.append(f"{pad}- {sub[0].lstrip()}")
                lines.extend(sub[1:])
            else:
                lines.append(f"{pad}- {_scalar(item)}")
        return lines
    return [pad + _scalar(value)]


def _is_package(d: dict[str, Any]) -> bool:
    return isinstance(d.get("name"), str) and "version" in d


def _render_package(d: dict[str, Any], indent: int) -> list[str]:
    flags = [k for k, v in d.items() if v is True]
    line = f"{' ' * indent}{d['name']} {d['version'] or '?'}"
    if flags:
        line += f"  ({', '.join(flags)})"
    lines = [line]
    requires = d.get("requires")
    if isinstance(requires, list):
        for child in requires:
            lines.extend(render_value(child, indent + 2))
    return lines


def _inline_list(v: Any) -> bool:
    return (isinstance(v, list) and all(isinstance(x, int | float | bool) for x in v)
            and len(v) <= 8)


def _scalar(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list) and v:
        return ", ".join(_scalar(x) for x in v)
    if isinstance(v, dict | list):
        return "(none)"
    return str(v)


@click.command()
@click.option("--only", multiple=True, metavar="NAME", help="Run only this collector (repeat).")
@click.option("--skip", multiple=True, metavar="NAME", help="Do not run this collector (repeat).")
@app_option
@click.option("--tool", "tools", multiple=True, metavar="EXE",
              help="Also record `EXE --version` (repeat; adds to the `tools` setting).")
@json_option
def collect(only: tuple[str, ...], skip: tuple[str, ...], app: str | None,
            tools: tuple[str, ...], as_json: bool) -> None:
    """Show what the collectors gather on this machine (what a report would include)."""
    from collectors.base import Context, run_collectors
    from rage.paths import home_root

    settings, found = _discover(app)
    for name in (*only, *skip):
        if name in settings.disable_collectors:
            raise UsageError(f"collector {name!r} is disabled by the disable_collectors setting")
    ctx = Context(app=app, tools=tuple(dict.fromkeys((*settings.tools, *tools))),
                  history_root=home_root())
    sections = run_collectors(found.collectors, ctx, only=only, skip=skip,
                              sources=found.sources)
    if as_json:
        emit_json({
            "sections": {s.name: {"status": s.status, "duration_s": round(s.duration_s, 6),
                                  "data": s.data, "error": s.error, "source": s.source}
                         for s in sections},
            "warnings": found.warnings,
        })
        return
    for w in found.warnings:
        warn(w)
    for s in sections:
        head = click.style(f"== {s.name} ==", bold=True)
        click.echo(f"{head}  ({format_duration(s.duration_s)})")
        if s.status != "ok":
            color = "yellow" if s.status == "skipped" else "red"
            click.echo("  " + click.style(f"status: {s.status}", fg=color)
                       + (f" ({s.error})" if s.error else ""))
        if s.status == "ok":
            for line in render_value(s.data):
                click.echo(line)
        click.echo()


@click.command("collectors")
@app_option
@json_option
def collectors_cmd(app: str | None, as_json: bool) -> None:
    """List the installed collectors, where each comes from and whether it applies here."""
    from collectors.base import Context
    from rage.paths import home_root

    settings, found = _discover(app)
    ctx = Context(app=app, tools=settings.tools, history_root=home_root())
    rows = []
    for c in found.collectors:
        try:
            applies: bool | str = bool(c.applies(ctx))
        except Exception as e:  # a plugin's applies() bug is shown, not raised
            applies = f"error: {type(e).__name__}: {e}"
        rows.append({"name": c.name, "source": found.sources.get(c.name, ""),
                     "description": getattr(c, "description", ""),
                     "timeout_s": float(getattr(c, "timeout", 5.0)), "applies": applies})
    if as_json:
        emit_json({"collectors": rows, "disabled": list(settings.disable_collectors),
                   "warnings": found.warnings})
        return
    for w in found.warnings:
        warn(w)
    width = max((len(r["name"]) for r in rows), default=4)
    for r in rows:
        applies_text = {True: "", False: "  (does not apply here)"}.get(
            r["applies"], f"  ({r['applies']})") if isinstance(r["applies"], bool) \
            else f"  ({r['applies']})"
        click.echo(f"{r['name']:<{width}}  {r['source']:<20}  {r['description']}{applies_text}")
