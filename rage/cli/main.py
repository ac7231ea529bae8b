"""The ``rage`` click group: lazy subcommands and the one error boundary.

Subcommands live in sibling modules and are imported only when invoked, so ``rage --help``
and each command pay only for what they use.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any

import click

from rage._version import __version__
from rage.errors import ExitCode, RageError

# name -> "module:attribute"; modules are imported on first use
COMMANDS: dict[str, str] = {
    "run": "rage.cli.run_cmd:run",
    "list": "rage.cli.history_cmds:list_cmd",
    "show": "rage.cli.history_cmds:show",
    "forget": "rage.cli.history_cmds:forget",
    "gc": "rage.cli.history_cmds:gc",
    "shim": "rage.cli.shim_cmd:shim",
    "collect": "rage.cli.collect_cmd:collect",
    "collectors": "rage.cli.collect_cmd:collectors_cmd",
    "report": "rage.cli.report_cmd:report",
    "inspect": "rage.cli.inspect_cmd:inspect",
    "redact": "rage.cli.redact_cmd:redact",
    "send": "rage.cli.upload_cmd:send",
    "pending": "rage.cli.upload_cmd:pending",
    "serve": "rage.cli.serve_cmd:serve",
}


class LazyGroup(click.Group):
    """A group whose commands are imported on demand and whose errors become exit codes."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(n for n in COMMANDS if self._available(n))

    @staticmethod
    def _available(name: str) -> bool:
        mod = COMMANDS[name].split(":")[0]
        return importlib.util.find_spec(mod) is not None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None or not self._available(cmd_name):
            return None
        mod_name, attr = target.split(":")
        cmd = getattr(importlib.import_module(mod_name), attr)
        assert isinstance(cmd, click.Command)
        return cmd

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RageError as e:
            report_error(e)
            sys.exit(int(e.exit_code))
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt,
                BrokenPipeError):
            raise
        except Exception as e:
            if debug_enabled(ctx):
                raise
            click.echo(f"rage: internal error: {type(e).__name__}: {e}", err=True)
            click.echo("rage: run with --debug for the traceback", err=True)
            sys.exit(int(ExitCode.INTERNAL))


def report_error(e: RageError) -> None:
    click.echo(f"rage: {e.message}", err=True)
    if e.hint:
        click.echo(f"rage: {e.hint}", err=True)


def debug_enabled(ctx: click.Context | None = None) -> bool:
    if os.environ.get("RAGE_DEBUG") in {"1", "true", "yes"}:
        return True
    root = ctx.find_root() if ctx else None
    return bool(root and root.obj and root.obj.get("debug"))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="rage")
@click.option("--debug", is_flag=True, help="Show tracebacks for internal errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Record every run of a command-line tool; report a bad one in one command.

    \b
    Record:  rage run -- mytool ARGS...   (or `rage shim install mytool`)
    Browse:  rage list, rage show last
    Report:  rage report --last-failed
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
