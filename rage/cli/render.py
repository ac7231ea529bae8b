"""Rendering helpers shared by commands: JSON output, durations, times, run rows."""

from __future__ import annotations

import dataclasses
import json
import shutil
import signal as _signal
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from rage.cli.termtext import clean_line, style
from rage.record.history import Run, parse_iso

STATUS_COLORS = {
    "ok": "green", "failed": "red", "crashed": "red", "lost": "yellow",
    "interrupted": "yellow", "running": "cyan", "corrupt": "magenta",
}


def _default(o: Any) -> Any:
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    to_dict = getattr(o, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return str(o)


def emit_json(obj: Any) -> None:
    """Print ``obj`` (dataclasses, paths and ``to_dict`` objects included) as JSON."""
    click.echo(json.dumps(obj, indent=2, default=_default))


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    m, s = divmod(int(seconds), 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


def format_when(iso: str | None) -> str:
    """Local time, with the date only when it is not today."""
    if not iso:
        return "-"
    try:
        t = parse_iso(iso).astimezone()
    except ValueError:
        return iso
    today = datetime.now().astimezone().date()
    return t.strftime("%H:%M:%S") if t.date() == today else t.strftime("%Y-%m-%d %H:%M")


def format_exit(run: Run) -> str:
    if run.signal:
        try:
            return _signal.Signals(run.signal).name
        except ValueError:
            return f"signal {run.signal}"
    return "-" if run.exit_code is None else str(run.exit_code)


def format_status(status: str, *, pad: bool = True) -> str:
    text = f"{status:<11}" if pad else status
    return style(text, fg=STATUS_COLORS.get(status), bold=status != "ok")


def command_line(argv: tuple[str, ...] | list[str]) -> str:
    """The command as one inert line (quoted as a shell would; controls escaped)."""
    import shlex

    return clean_line(shlex.join(argv))


def format_started(iso: str | None) -> str:
    """Local date and time of a run's start (always with the date: runs span days)."""
    if not iso:
        return "-"
    try:
        return parse_iso(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return clean_line(iso)


APP_WIDTH_MAX = 24  # a longer app name is cut with an ellipsis


def app_width(runs: list[Run]) -> int:
    """The APP column's width for ``runs``: their longest name (12 at least, 24 at most),
    so every command starts in one column."""
    return min(max([12, *(len(clean_line(r.app)) for r in runs)]), APP_WIDTH_MAX)


def _app_cell(name: str, width: int) -> str:
    name = clean_line(name)
    return f"{name if len(name) <= width else name[:width - 1] + '…':<{width}} "


def run_header(*, numbered: bool = False, show_app: bool = False, width: int = 12) -> str:
    """The header of :func:`run_rows`; ``width``: the APP column's (:func:`app_width`)."""
    prefix = "     " if numbered else ""
    app = _app_cell("APP", width) if show_app else ""
    return (f"{prefix}  {'ID':<8}  {'STARTED':<19} {'STATUS':<11} {'EXIT':>7} {'TIME':>7}  "
            f"{app}COMMAND")


def run_rows(runs: list[Run], *, numbered: bool = False, show_app: bool = False,
             start: int = 1, fit: bool | None = None) -> list[str]:
    """One line per run. With ``fit`` (default: stdout is a terminal) the command is
    shortened to the terminal width; in a pipe it is whole, so grep sees all of it. The
    APP column is :func:`app_width` wide (give the header the same)."""
    if fit is None:
        fit = sys.stdout.isatty()
    width = shutil.get_terminal_size((100, 24)).columns
    column = app_width(runs)
    lines = []
    for i, run in enumerate(runs, start):
        mark = "!" if run.is_problem else " "
        prefix = f"{i:>3}) " if numbered else ""
        app = _app_cell(run.app, column) if show_app else ""
        head = (
            f"{prefix}{mark} {run.short_id}  {format_started(run.started_at):<19} "
            f"{run.status:<11} {format_exit(run):>7} {format_duration(run.duration_s):>7}  {app}"
        )
        cmd = command_line(run.argv)
        room = max(width - len(head) - 1, 20)
        if fit and len(cmd) > room:
            cmd = cmd[: room - 1] + "…"
        styled = head.replace(f"{run.status:<11}", format_status(run.status), 1)
        lines.append(styled + cmd)
    return lines


def warn(message: str) -> None:
    click.echo(f"rage: warning: {message}", err=True)


def checked_settings(app: str | None, **kwargs: Any) -> Any:
    """The settings for ``app``; a broken config (a bad value, a missing RAGE_CONFIG file)
    is :class:`rage.errors.ConfigError` (exit 6), as documented: a retention limit or an
    upload target silently replaced by its default would surprise."""
    from rage.config import load_settings

    return load_settings(app, **kwargs)
