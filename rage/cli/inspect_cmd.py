"""`rage inspect BUNDLE`: read a bundle safely, show it, verify it, extract it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rage.cli.render import emit_json
from rage.cli.termtext import clean, clean_line
from rage.config import format_size
from rage.errors import BadInputError, NotFoundError, UsageError


def _redaction_counts(manifest: dict[str, Any]) -> dict[str, int]:
    red = manifest.get("redaction")
    counts = red.get("counts") if isinstance(red, dict) else None
    if not isinstance(counts, dict):
        return {}
    return {str(k): v for k, v in counts.items() if isinstance(v, int) and v > 0}


def _parse_max(value: str | None) -> int:
    from rage.bundle import DEFAULT_MAX_DECOMPRESSED
    from rage.config import parse_size

    if value is None:
        return DEFAULT_MAX_DECOMPRESSED
    try:
        n = parse_size(value)
    except ValueError as e:
        raise UsageError(f"--max-size: {e}") from None
    if n <= 0:
        raise UsageError("--max-size must be positive")
    return n


@click.command()
@click.argument("bundle_path", metavar="BUNDLE", type=click.Path(path_type=Path))
@click.option("--extract", "-x", "extract_dir", type=click.Path(path_type=Path), metavar="DIR",
              help="Extract the members into DIR (created 0700; existing files are an error).")
@click.option("--max-size", metavar="SIZE",
              help="Refuse bundles that inflate beyond SIZE (default 1GiB).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
def inspect(bundle_path: Path, extract_dir: Path | None, max_size: str | None,
            as_json: bool) -> None:
    """Show a bundle's summary and members, verify its checksums, optionally extract it.

    Exits 3 if there is no such file, 6 if the bundle is unsafe, corrupt or fails
    verification (one line per problem).
    """
    from rage.bundle import MANIFEST, open_bundle

    if not bundle_path.exists():
        raise NotFoundError(f"no such bundle file: {clean_line(bundle_path)}")
    if not bundle_path.is_file():
        raise BadInputError(f"not a bundle file: {clean_line(bundle_path)}")
    reader = open_bundle(bundle_path, max_decompressed=_parse_max(max_size))
    problems = reader.verify()
    extracted: list[Path] = []
    if extract_dir is not None and not problems:
        extracted = reader.extract(extract_dir)
    if as_json:
        emit_json({"path": str(bundle_path), "manifest": reader.manifest,
                   "members": [m.to_dict() for m in reader.members],
                   "problems": problems, "extracted": [str(p) for p in extracted]})
    else:
        # everything below comes from the bundle: made inert before it reaches the terminal
        click.echo(clean(reader.summary).rstrip("\n"))
        click.echo("")
        counts = _redaction_counts(reader.manifest)
        if counts:
            kinds = ", ".join(f"{clean_line(k)}: {v}" for k, v in sorted(counts.items()))
            click.echo(f"Redacted before bundling: {sum(counts.values())} value(s) ({kinds})")
        else:
            click.echo("Redacted before bundling: nothing (or not recorded in the manifest)")
        click.echo("")
        members = reader.members
        click.echo(f"Members of {clean_line(bundle_path.name)} ({len(members) + 1}):")
        click.echo(f"  {MANIFEST:<48} {'':>12}")
        for m in members:
            click.echo(f"  {clean_line(m.name):<48} {format_size(m.size):>12}")
        if extracted:
            click.echo(f"extracted {len(extracted)} file(s) into {clean_line(extract_dir)}")
    if problems:
        for p in problems:
            click.echo(f"rage: verification failed: {clean_line(p)}", err=True)
        what = "nothing extracted" if extract_dir is not None else "do not trust its contents"
        raise BadInputError(f"bundle failed verification ({len(problems)} problem(s)): {what}")
    if not as_json:
        click.echo("checksums: ok")
