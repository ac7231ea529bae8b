"""What to paste after an upload: one format for `rage report --to` and `rage send`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


def shared(path: Path, url: str, issues_url: str | None) -> tuple[str, str | None]:
    """``(markdown line, pre-filled new-issue URL or None)`` for the bundle at ``path``,
    uploaded to ``url``. Both come from the bundle's manifest and summary (redacted: the
    issue page is public), never from the run store."""
    from rage.cli.termtext import clean, clean_line
    from rage.errors import RageError
    from rage.issue_link import issue_body, issue_title, markdown_line, new_issue_url
    from rage.upload.members import describe, read_manifest, text_members

    try:
        manifest = read_manifest(path)
    except (RageError, OSError):  # the link matters more than its words
        manifest = None
    info = {k: clean_line(v) if isinstance(v, str) else v for k, v in describe(manifest).items()}
    link = markdown_line(url, info)
    if not issues_url:
        return link, None
    summary: str | None = None
    try:
        summary = text_members(path)[0].get("summary.md")
    except (RageError, OSError):
        summary = None
    body = issue_body(url, clean(summary) if summary else None)
    note = (manifest or {}).get("note")
    if isinstance(note, str) and note.strip():
        body = f"{clean(note.strip())}\n\n{body}"
    return link, new_issue_url(issues_url, issue_title(info), body)


def say_shared(result: Any, link: str, issue_url: str | None) -> None:
    """Print where the bundle went and what to paste (stdout: these are the results)."""
    from rage.cli.termtext import clean_line

    click.echo(f"uploaded: {clean_line(result.url)}")
    if result.delete_url:
        click.echo(f"delete it with: {clean_line(result.delete_url)}")
    click.echo("paste this into the bug report:")
    click.echo(f"  {clean_line(link)}")
    if issue_url:
        click.echo("or open a new issue:")
        click.echo(f"  {clean_line(issue_url)}")
