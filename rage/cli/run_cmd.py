"""`rage run` through the click group (`rage --debug run ...`).

Plain `rage run ...` never gets here: rage/__main__.py sends it straight to rage.record.wrapper
without importing click. This command only hands its raw arguments to the same function.
"""

from __future__ import annotations

import sys

import click


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False,
                      "help_option_names": []},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(args: tuple[str, ...]) -> None:
    """Run a command and record it: rage run [--app NAME] [--attach GLOB]... [--] CMD ARGS."""
    from rage.record.wrapper import main

    sys.exit(main(list(args)))
