"""rage for click apps: record every invocation and add a ``rage`` subcommand.

::

    import rage.click

    @click.group()
    def cli(): ...

    rage.click.attach(cli, "mytool", version=__version__)   # a group: `mytool rage`
    # a plain command (black, cookiecutter): `mytool --rage` (see attach())

Recording starts when the group is invoked (``cli()`` / ``cli.main()``), not at attach time,
so importing the app stays free. ``mytool rage`` is ``rage report`` scoped to the app; the
report machinery is imported only when it runs. The ``rage`` invocation is itself recorded,
marked ``report_command`` so ``--last`` never picks it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import click

from rage.integration.recorder import install, split_options
from rage.integration.runstate import command_of

RAGE_HELP = "Report a problem: pick a recorded run and send a bug report."


def build_report_command(
    app: str,
    *,
    app_defaults: Mapping[str, Any] | None = None,
    extra_collectors: Sequence[Any] = (),
    help: str | None = None,  # mirrors click's parameter name
) -> click.Command:
    """The real ``rage`` command (``rage report`` scoped to ``app``); imports the report
    machinery, so call it only when the command runs."""
    from rage.cli.report_cmd import make_report_command

    return make_report_command(app=app, app_defaults=app_defaults,
                               extra_collectors=extra_collectors, name="rage", help=help)


def mark_report_invocation() -> None:
    """Flag the current recorded run (if any) as a run of the report command itself."""
    from rage.integration.recorder import current

    rec = current()
    if rec is not None:
        rec.mark_report_command()


class LazyReportCommand(click.Command):
    """Stands in for the report command in ``mytool --help``; builds it when invoked."""

    def __init__(
        self,
        app: str,
        *,
        name: str = "rage",
        app_defaults: Mapping[str, Any] | None = None,
        extra_collectors: Sequence[Any] = (),
        help: str | None = None,
    ) -> None:
        super().__init__(name, help=help or RAGE_HELP, short_help=RAGE_HELP,
                         context_settings={"ignore_unknown_options": True})
        self.app = app
        self.app_defaults = dict(app_defaults or {})
        self.extra_collectors = tuple(extra_collectors)
        self._real: click.Command | None = None

    def real_command(self) -> click.Command:
        if self._real is None:
            self._real = build_report_command(
                self.app, app_defaults=self.app_defaults,
                extra_collectors=self.extra_collectors, help=self.help,
            )
        return self._real

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        # click's Group.invoke calls sub_ctx.command.invoke, so handing back the real
        # command's context makes the real command parse, show --help and run.
        mark_report_invocation()
        return self.real_command().make_context(info_name, args, parent=parent, **extra)


def _prog_name(kwargs: Mapping[str, Any], app: str) -> str:
    prog = kwargs.get("prog_name")
    if isinstance(prog, str) and prog:
        return prog
    base = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return app if not base or base in {"__main__.py", "-c", "-m"} else base


def _hint_command(kwargs: Mapping[str, Any], app: str) -> str:
    """What the crash hint tells the user to run: the given ``prog_name``, else the tool
    as its shell starts it again (:func:`command_of`: ``python mytool.py``, not
    ``mytool.py``, for a script run by the interpreter)."""
    prog = kwargs.get("prog_name")
    return prog if isinstance(prog, str) and prog else command_of(app)


def _args_of(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[str]:
    """The arguments ``Command.main`` will parse (its ``args`` or ``sys.argv[1:]``)."""
    given = args[0] if args else kwargs.get("args")
    return list(given) if given is not None else sys.argv[1:]


def _check_option_is_free(cli: click.Command, option: str) -> None:
    """``option`` must be something the plain command rejects today, so that reading it
    as the report command can never change the meaning of a valid invocation."""
    if not option.startswith("--") or len(option) < 3 or any(c.isspace() for c in option):
        raise ValueError(f"rage.click.attach(): option must look like --name, not {option!r}")
    for p in cli.params:
        if option in (*p.opts, *p.secondary_opts):
            raise ValueError(f"rage.click.attach(): {cli.name or 'the command'} already has"
                             f" an option {option}; pass option='--another-name'")
    if cli.ignore_unknown_options or cli.context_settings.get("ignore_unknown_options"):
        raise ValueError(f"rage.click.attach(): {cli.name or 'the command'} passes unknown"
                         f" options on as arguments, so {option} could be one of them")


def attach(cli: click.Command, app: str, version: str | None = None, *,
           option: str = "--rage", **options: Any) -> click.Command:
    """Record every invocation of ``cli`` as a run of ``app`` and give it a report command.

    A group gets a ``rage`` subcommand (``mytool rage --last``). A plain command cannot grow
    a subcommand without taking a word from its own arguments (``black rage`` formats the
    file ``rage``), so it gets ``option`` instead, recognised only as the first argument:
    ``black --rage --last``. ``option`` must be an option the command does not have and
    would reject (checked now: ValueError), so no valid invocation changes meaning.

    ``options`` are those of :func:`rage.install` (checked now: unknown -> TypeError).
    Returns ``cli``. Nothing is changed when a check fails.
    """
    app_defaults, collectors = split_options(options)
    is_group = isinstance(cli, click.Group)
    if not is_group:
        _check_option_is_free(cli, option)
    orig_main = cli.main

    def report(args: list[str], prog: str, kwargs: Mapping[str, Any]) -> Any:
        mark_report_invocation()
        cmd = build_report_command(app, app_defaults=app_defaults,
                                   extra_collectors=collectors)
        return cmd.main(args=args, prog_name=prog,
                        standalone_mode=kwargs.get("standalone_mode", True))

    def main(*args: Any, **kwargs: Any) -> Any:
        rec = install(app, version=version, **options)
        prog, again = _prog_name(kwargs, app), _hint_command(kwargs, app)
        rec.set_report_command(f"{again} rage" if is_group else f"{again} {option}")
        try:
            if not is_group:
                argv = _args_of(args, kwargs)
                if argv and argv[0] == option:
                    return report(argv[1:], f"{prog} {option}", kwargs)
            return orig_main(*args, **kwargs)
        except SystemExit as e:
            rec.on_exit_call(e.code)
            raise

    from rage.integration.hooks import HIDDEN_CODE

    HIDDEN_CODE.add(main.__code__)  # the tool's traceback reads as it does without rage
    # click.BaseCommand.__call__ looks main up on the instance, so this wraps every entry
    setattr(cli, "main", main)  # noqa: B010 - mypy forbids assigning to a method
    if isinstance(cli, click.Group):
        cli.add_command(LazyReportCommand(app, app_defaults=app_defaults,
                                          extra_collectors=collectors), "rage")
    return cli


__all__ = ["LazyReportCommand", "attach", "build_report_command"]
