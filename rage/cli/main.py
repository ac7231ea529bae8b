"""The ``rage`` click group: lazy subcommands and the one error boundary.

Subcommands live in sibling modules and are imported only when invoked, so ``rage --help``
and each command pay only for what they use.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any, NoReturn

import click

from rage._version import __version__
from rage.errors import ExitCode, RageError

# name -> "module:attribute"; modules are imported on first use
COMMANDS: dict[str, str] = {
    "run": "rage.cli.run_cmd:run",
    "list": "rage.cli.history_cmds:list_cmd",
    "show": "rage.cli.history_cmds:show",
    "diff": "rage.cli.diff_cmd:diff",
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


# What `rage --help` says about each command: short enough never to be cut.
SUMMARIES: dict[str, str] = {
    "run": "Run a command and record the run.",
    "list": "List recorded runs, newest first.",
    "show": "Show one run (or its captured output).",
    "diff": "What changed since a run's app last worked.",
    "forget": "Delete one run, or every run of an app.",
    "gc": "Apply the retention limits now.",
    "shim": "Record every run of a program by name.",
    "collect": "Show what the collectors gather here.",
    "collectors": "List the installed collectors.",
    "report": "Make a redacted bug-report bundle of a run.",
    "inspect": "Show, verify or extract a bundle.",
    "send": "Upload a bundle.",
    "pending": "List bundles not uploaded yet.",
    "serve": "Run a receiver for bundles.",
    "redact": "Redact a file or standard input, as a bundle would be.",
}


class LazyGroup(click.Group):
    """A group whose commands are imported on demand and whose errors become exit codes."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # One whole line per command from SUMMARIES: click would cut each docstring's first
        # sentence at the terminal width, and listing them this way imports no subcommand.
        rows = [(n, SUMMARIES.get(n) or self._short_help(ctx, n)) for n in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def _short_help(self, ctx: click.Context, name: str) -> str:
        cmd = self.get_command(ctx, name)  # a command without a summary above: import it
        return cmd.get_short_help_str(limit=200) if cmd else ""

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

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as e:
            usage_error(e)
        except OSError as e:  # `rage --help > /dev/full`: printed while parsing
            if stdout_failure() is None:
                raise
            output_error(e)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            result = super().invoke(ctx)
        except click.UsageError as e:
            usage_error(e)
        except RageError as e:
            report_error(e)
            if stdout_failure() is not None:  # (told: `rage redact FILE > /dev/full`)
                quiet_stdout()
            sys.exit(int(e.exit_code))
        except BrokenPipeError:
            # the reader went away (`rage list | head -1`): what it wanted was printed
            quiet_stdout()
            sys.exit(int(ExitCode.OK))
        except (KeyboardInterrupt, click.Abort):
            # ^C at a prompt (click turns ^C and end of input inside its prompts into Abort)
            click.echo("", err=True)
            click.echo("rage: interrupted", err=True)
            sys.exit(int(ExitCode.INTERRUPTED))
        except (click.exceptions.Exit, click.ClickException):
            raise
        except Exception as e:
            if isinstance(e, OSError) and (failed := stdout_failure()) is not None:
                output_error(failed)  # `rage list > /dev/full`: the output, not rage
            if debug_enabled(ctx):
                raise
            click.echo(f"rage: internal error: {type(e).__name__}: {e}", err=True)
            click.echo("rage: run with --debug for the traceback", err=True)
            sys.exit(int(ExitCode.INTERNAL))
        failed = stdout_failure()  # what is still buffered must reach it too
        if failed is not None:
            output_error(failed)
        return result


def stdout_failure() -> OSError | None:
    """The error standard output gives when what is buffered for it is flushed (a full
    disk, a device that fails), None when it takes it. Python would meet it again as it
    exits: "Exception ignored" and exit status 120."""
    try:
        sys.stdout.flush()
    except OSError as e:
        return e
    except (ValueError, AttributeError):  # closed, or no stdout at all
        pass
    return None


def output_error(e: OSError) -> NoReturn:
    """Standard output refused what rage printed: said in one line, with the bad-input
    exit status, and nothing more (what is still buffered goes to /dev/null). A reader
    that went away (`rage list | head -1`) had what it wanted: no word, status 0."""
    quiet_stdout()
    if isinstance(e, BrokenPipeError):
        sys.exit(int(ExitCode.OK))
    click.echo(f"rage: cannot write standard output: {e.strerror or e}", err=True)
    sys.exit(int(ExitCode.BAD_INPUT))


def quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def usage_error(e: click.UsageError) -> NoReturn:
    """Print click's usage error in rage's one style (``rage: message``, then where the
    help is), keeping its exit code (2)."""
    from rage.cli.termtext import clean_line

    message = e.format_message().rstrip(".")
    click.echo(f"rage: {clean_line(message[:1].lower() + message[1:])}", err=True)
    if e.ctx is not None:
        click.echo(f"rage: see `{e.ctx.command_path} --help`", err=True)
    sys.exit(e.exit_code)


def report_error(e: RageError, prog: str = "rage") -> None:
    """Print ``e`` as ``PROG: message``, made inert: messages quote file names, member
    names and server answers, which must never reach a terminal raw."""
    from rage.cli.termtext import clean_line

    click.echo(f"{prog}: {clean_line(e.message)}", err=True)
    if e.hint:
        click.echo(f"{prog}: {clean_line(e.hint)}", err=True)


def _version(ctx: click.Context) -> None:
    """``rage, version X`` and the scan redaction uses here (a default install has
    Hyperscan where it publishes a wheel; the pure-Python scan elsewhere, same output)."""
    from rage.redact.native import scan_status

    click.echo(f"rage, version {__version__}\nredaction scan: {scan_status()}")
    ctx.exit()


def debug_enabled(ctx: click.Context | None = None) -> bool:
    if os.environ.get("RAGE_DEBUG") in {"1", "true", "yes"}:
        return True
    root = ctx.find_root() if ctx else None
    return bool(root and root.obj and root.obj.get("debug"))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-V", "--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, _p, on: _version(ctx) if on else None,
              help="Show the version and the redaction scan in use, and exit.")
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
