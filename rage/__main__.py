"""Entry point of the ``rage`` command.

``rage run ...`` takes a fast path that never imports click: the wrapper's start-up time is
part of every recorded command's run time. Every other command goes through the click CLI.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["run"]:
        from rage.record.wrapper import main_exit

        main_exit(args[1:])
    from rage.cli.main import cli

    cli.main(args=args, prog_name="rage")


if __name__ == "__main__":
    main()
