#!/usr/bin/env python3
"""A plain click command (no subcommands) recorded by rage: its report command is ``--rage``.

    python3 examples/plain_click_tool.py World
    python3 examples/plain_click_tool.py --shout fail    # exits 1 with an error message
    python3 examples/plain_click_tool.py --rage --last --preview
"""

from __future__ import annotations

import click

import rage.click


@click.command()
@click.option("--shout", is_flag=True, help="Greet in capitals.")
@click.argument("name", default="world")
def cli(shout: bool, name: str) -> None:
    """Greet NAME (the name `fail` is refused)."""
    if name == "fail":
        raise click.ClickException("refusing to greet 'fail'")
    greeting = f"hello, {name}"
    click.echo(greeting.upper() if shout else greeting)


# `plain_click_tool rage` would greet someone called "rage": the report command is an option
rage.click.attach(cli, "plain_click_tool", version="0.1")

if __name__ == "__main__":
    cli()
