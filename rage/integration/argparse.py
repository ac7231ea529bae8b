"""rage for argparse apps: a ``rage`` subcommand that runs ``rage report`` for the app.

Three lines::

    rage.install("mytool", version=__version__)
    add_rage_subparser(subparsers, "mytool")
    args = parser.parse_args(); dispatch_rage(args)   # runs `mytool rage ...` and exits

Everything after ``mytool rage`` goes to the report command unchanged (``--last``,
``--yes``, ``--output F``, ``--help``...), so its options never have to be mirrored in
argparse. click and the report machinery are imported only when ``mytool rage`` runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from rage.integration.recorder import current, split_options
from rage.integration.runstate import command_of

RAGE_HELP = "report a problem: pick a recorded run and send a bug report"
_DEST = "_rage_report_args"


def add_rage_subparser(
    subparsers: Any,
    app: str,
    *,
    name: str = "rage",
    help: str = RAGE_HELP,  # mirrors argparse's parameter name
    prog: str | None = None,
    **options: Any,
) -> argparse.ArgumentParser:
    """Add ``name`` to ``subparsers`` (from ``parser.add_subparsers()``).

    ``options`` are :func:`rage.install` options (upload_url, issues_url, ...), used as the
    report's app defaults when no Recorder is installed. Returns the new subparser.
    """
    split_options(options)  # unknown option -> TypeError now, not when a user reports
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=help, add_help=False)
    parser.set_defaults(**{_DEST: None})
    report_prog = prog or f"{app} {name}"
    rec = current()
    if rec is not None and rec.app == app:  # the hint: as the user's shell starts the tool
        rec.set_report_command(prog or f"{command_of(app)} {name}")

    def parse_known_args(
        args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        # argparse.REMAINDER refuses a first argument that looks like an option
        # ("mytool rage --last"), so this subparser takes every remaining argument itself.
        ns = namespace if namespace is not None else argparse.Namespace()
        setattr(ns, _DEST, {"args": list(args or []), "app": app, "prog": report_prog,
                            "options": dict(options)})
        return ns, []

    setattr(parser, "parse_known_args", parse_known_args)  # noqa: B010
    return parser


def is_rage(args: argparse.Namespace) -> bool:
    """True when ``args`` came from ``mytool rage ...``."""
    return getattr(args, _DEST, None) is not None


def run_rage(args: argparse.Namespace) -> int:
    """Run the report command for ``args`` (see :func:`is_rage`); returns its exit code."""
    spec = getattr(args, _DEST)
    rec = current()
    app_defaults: dict[str, Any]
    collectors: tuple[Any, ...]
    if rec is not None and rec.app == spec["app"]:
        rec.mark_report_command()
        app_defaults, collectors = rec.app_defaults, rec.extra_collectors
    else:
        app_defaults, collectors = split_options(spec["options"])
    from rage.integration.click import build_report_command

    cmd = build_report_command(spec["app"], app_defaults=app_defaults,
                               extra_collectors=collectors)
    from rage.integration.hooks import exit_code_of

    try:
        cmd.main(args=spec["args"], prog_name=spec["prog"], standalone_mode=True)
    except SystemExit as e:  # standalone click always ends in sys.exit
        return exit_code_of(e.code)


def dispatch_rage(args: argparse.Namespace) -> None:
    """If ``args`` is ``mytool rage ...``, run the report and exit with its code."""
    if is_rage(args):
        import sys

        sys.exit(run_rage(args))


__all__ = ["add_rage_subparser", "dispatch_rage", "is_rage", "run_rage"]
