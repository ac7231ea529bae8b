"""Write rage's man pages (``rage.1``, ``rage-report.1``, ...) from its click commands.

    python3 docs/gen_man.py DIR      # needs the `docs` extra (click-man)
    man -l DIR/rage.1

click-man walks a group's ``commands`` mapping, and rage's group imports each subcommand
only when it is run (start-up time), so its mapping is empty: the pages are made from a
plain group holding every resolved subcommand instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click


def resolved_cli() -> click.Group:
    """rage's group with every subcommand imported, under the same name and help."""
    from rage.cli.main import cli

    ctx = click.Context(cli, info_name="rage")
    commands: dict[str, click.Command] = {}
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        if command is not None:
            commands[name] = command
    return click.Group(name="rage", commands=commands, help=cli.help, params=cli.params,
                       epilog=cli.epilog, short_help=cli.short_help)


def write(target: Path) -> list[Path]:
    """Write one page per command into ``target``; the paths written."""
    from click_man.core import write_man_pages

    from rage._version import __version__

    target.mkdir(parents=True, exist_ok=True)
    write_man_pages("rage", resolved_cli(), version=__version__, target_dir=str(target))
    return sorted(target.glob("rage*.1"))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 docs/gen_man.py DIR", file=sys.stderr)
        return 2
    for path in write(Path(argv[0])):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
