#!/usr/bin/env python3
"""A small click tool recorded by rage: try `hello`, `fail`, `chatty`, then `rage`.

    python3 examples/click_tool.py hello World
    python3 examples/click_tool.py fail          # crashes; the hint says how to report it
    python3 examples/click_tool.py chatty        # logs at every level; DEBUG is recorded only
    python3 examples/click_tool.py rage --last --preview
"""

from __future__ import annotations

import logging

import click

import rage.click

log = logging.getLogger("click_tool")


@click.group()
@click.option("-v", "--verbose", is_flag=True, help="Show INFO messages.")
def cli(verbose: bool) -> None:
    """An example tool with rage bug reporting."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s: %(message)s")


@cli.command()
@click.argument("name", default="world")
def hello(name: str) -> None:
    """Greet NAME."""
    log.debug("greeting %s", name)
    click.echo(f"hello, {name}")


@cli.command()
def fail() -> None:
    """Fail with an uncaught exception."""
    config = {"retries": 3}
    log.info("loaded config %s", config)
    raise KeyError("timeout")


@cli.command()
def chatty() -> None:
    """Log at several levels."""
    log.debug("a detail only the bug report needs")
    log.info("progress: halfway")
    log.warning("disk is 91% full")
    log.error("could not reach the mirror, using the cache")


rage.click.attach(cli, "click_tool", version="0.1",
                  issues_url="https://github.com/example/click_tool/issues/new")

if __name__ == "__main__":
    cli()
