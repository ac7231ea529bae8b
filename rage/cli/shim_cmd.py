"""`rage shim install|list|remove`: route a program through `rage run` transparently."""

from __future__ import annotations

from pathlib import Path

import click

from rage.cli.render import emit_json, warn

dir_option = click.option(
    "--dir", "shim_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Directory of the shims (install: default ~/.local/bin, which must come before the "
         "real program on PATH; list and remove: default wherever rage installed shims, "
         "and PATH).",
)


@click.group()
def shim() -> None:
    """Record every run of a program: `rage shim install mytool`."""


@shim.command()
@click.argument("name")
@dir_option
@click.option("--report-subcommand", is_flag=True,
              help="Make `NAME rage ARGS` open `rage report --app NAME ARGS` instead of running "
                   "NAME (only for your own tools, which never take `rage` as an argument).")
@click.option("--no-version", "no_version", is_flag=True,
              help="Do not run `NAME --version` (by default once per change of the program, "
                   "so reports say which version ran).")
def install(name: str, shim_dir: Path | None, report_subcommand: bool, no_version: bool
            ) -> None:
    """Install a shim so that running NAME records it (`rage report --app NAME` reports it)."""
    from rage.record.shims import install as do_install

    result = do_install(name, shim_dir, report_subcommand=report_subcommand,
                        version_probe=not no_version)
    for w in result.warnings:
        warn(w)
    verb = "updated" if result.replaced else "installed"
    target = result.shim.target or "(no real program found yet)"
    click.echo(f"{verb} {result.shim.path} -> {target}")


@shim.command("list")
@dir_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
def list_cmd(shim_dir: Path | None, as_json: bool) -> None:
    """List the shims rage installed (wherever it did, and on PATH) and what each runs."""
    from rage.record.shims import list_shims

    shims = list_shims(shim_dir)
    if as_json:
        emit_json({"shims": shims})
        return
    if not shims:
        click.echo("no shims installed: try `rage shim install NAME`", err=True)
        return
    for s in shims:
        note = f"  (outdated: run `rage shim install {s.name}` again)" if s.outdated else ""
        click.echo(f"{s.name}\t{s.path} -> {s.target or '(not found on PATH)'}{note}")


@shim.command()
@click.argument("name")
@dir_option
def remove(name: str, shim_dir: Path | None) -> None:
    """Remove the shim NAME wherever rage installed it (only files rage created are ever
    removed)."""
    from rage.record.shims import remove as do_remove

    for path in do_remove(name, shim_dir):
        click.echo(f"removed {path}")
