"""Entry point of the ``rage`` command.

``rage run ...`` takes a fast path that never imports click: the wrapper's start-up time is
part of every recorded command's run time. Every other command goes through the click CLI.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # (no typing import: `rage run` starts without it)
if TYPE_CHECKING:
    from typing import NoReturn


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["run"]:
        from rage.record.wrapper import main_exit

        main_exit(args[1:])
    if args[:1] == ["report"]:
        import gc

        # the cyclic collector's passes over what the imports and the engine's build make
        # (all of it kept): ~20M instructions, 4% of a small report, whose garbage the
        # reference counts free. A pass after each 50,000 new objects, not 700, still
        # bounds what a long report could leave in cycles.
        gc.set_threshold(50_000, *gc.get_threshold()[1:])
    from rage.cli.main import cli

    try:
        cli.main(args=args, prog_name="rage")
    except SystemExit as e:
        if args[:1] != ["report"] or not isinstance(e.code, int | None):
            raise  # (a message: Python prints it)
        _exit_now(e.code or 0)


def _exit_now(code: int) -> NoReturn:
    """End `rage report` with ``code`` at once, as `rage run` ends
    (:func:`rage.record.wrapper.exit_flushed`): the interpreter's teardown skipped (freeing
    ~240 modules and their objects one by one: ~35M instructions, 7% of a small report).
    Nothing is left to tear down by then: the bundle is written and its temporary directory
    gone, every thread of the report joined (a collector that overran its deadline is a
    daemon, which an exit ends anyway) and rage registers no exit handlers on this path."""
    from rage.record.wrapper import exit_flushed

    exit_flushed(code)


if __name__ == "__main__":
    main()
