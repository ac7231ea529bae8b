"""`rage report`: pick a run, preview what would be sent, write a bundle, maybe upload it.

:func:`make_report_command` builds the same command for an app's own integration
(`mytool rage`), scoped to that app.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from rage.cli.render import emit_json, run_rows, warn
from rage.config import format_size
from rage.errors import DeclinedError, UsageError

DEFAULT_HELP = """Report a run: pick it, preview what would be sent, write a bundle.

\b
RUN is an id, a unique prefix, `last` or `last-failed`; on a terminal, leave it out to
choose from a list. Everything in the bundle is redacted first; nothing is uploaded
unless an upload target is set (--to or upload_url) and you confirm (or pass --yes).
"""


def _host(target: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(target)
    return parts.netloc or parts.path or target


def _interactive() -> bool:
    """Prompts need a terminal to read from (stdin) and to ask on (stderr), in its
    foreground (`rage report &` asks nothing: see rage.termjob); stdout may be a pipe
    (`rage report | cat`)."""
    from rage.termjob import can_ask

    return can_ask()


def _say(text: str = "") -> None:
    """Conversation with the user: on stderr, so stdout stays free for results."""
    click.echo(text, err=True)


def _ask(question: str) -> str | None:
    """One line from the terminal; None at end of input."""
    click.echo(f"{question} ", nl=False, err=True)
    line = sys.stdin.readline()
    return None if line == "" else line.rstrip("\n")


def _confirm(question: str, *, default: bool,
             on_preview: Callable[[], None] | None = None) -> bool:
    """Ask yes/no; with ``on_preview``, `p` shows everything first and asks again."""
    suffix = "[Y/n" if default else "[y/N"
    suffix += ", p to preview]" if on_preview else "]"
    while True:
        answer = _ask(f"{question} {suffix}")
        if answer is None:
            return False
        answer = answer.strip().lower()
        if not answer:
            return default
        if answer in {"y", "yes"}:
            return True
        if answer in {"n", "no", "q"}:
            return False
        if on_preview and answer in {"p", "preview"}:
            on_preview()
            continue
        _say("please answer y or n" + (" (or p to preview)" if on_preview else ""))


def _choose(app: str | None) -> Any:
    from rage.cli.render import app_width, run_header
    from rage.record.history import RunStore
    from rage.report.select import candidates, nothing_recorded, prompt_for_run

    runs = candidates(RunStore(), app)
    if not runs:
        raise nothing_recorded(app)
    show_app = app is None and len({r.app for r in runs}) > 1
    rows = run_rows(runs, numbered=True, show_app=show_app, fit=True)
    return prompt_for_run(runs, rows, _ask, _say,
                          header=run_header(numbered=True, show_app=show_app,
                                            width=app_width(runs)))


def _preview_order(name: str) -> int:
    # what a reader wants first: the summary; the manifest (long JSON) last
    from rage.bundle import MANIFEST, SUMMARY

    return 0 if name == SUMMARY else 2 if name == MANIFEST else 1


def _render_preview(data: Mapping[str, Any]) -> str:
    from rage.cli.termtext import clean, clean_line

    out = [f"Preview of the report for run {data['run']} ({clean_line(data['app'])}): "
           f"{len(data['members'])} files, {format_size(data['total_bytes'])} before compression.",
           "This is exactly what the bundle would contain (already redacted).", ""]
    for m in sorted(data["members"], key=lambda m: _preview_order(m["name"])):
        title = f"===== {clean_line(m['name'])} ({format_size(m['size'])})"
        if m.get("binary"):
            out += [title + " binary, not shown =====", ""]
        elif "content" in m:
            out += [title + " =====", clean(m["content"]).rstrip("\n"), ""]
        else:
            out += [title + " head and tail =====", clean(m["head"]).rstrip("\n"),
                    f"[... {m['omitted_bytes']} bytes not shown here ...]",
                    clean(m["tail"]).rstrip("\n"), ""]
    return "\n".join(out) + "\n"


def _overview(prepared: Any, dest: str) -> None:
    """The short summary shown before asking to create the bundle."""
    from rage.cli.termtext import clean_line

    _say(f"The bundle for run {prepared.request.run.short_id} would contain:")
    for m in prepared.members:
        _say(f"  {clean_line(m.name):<40} {format_size(m.size):>10}")
    counts = prepared.redaction_counts
    if counts:
        kinds = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
        _say(f"Redacted {sum(counts.values())} value(s) ({kinds}).")
    else:
        _say("Nothing needed redacting.")
    _say(f"Total {format_size(prepared.total_bytes)} before compression; "
         f"it will be written to {dest}")
    since = prepared.manifest.get("since_it_worked")
    if since:
        _say(clean_line(since))


def _upload(built: Any, settings: Any, target: str, *, as_json: bool) -> dict[str, Any]:
    from rage.errors import InterruptedByUser, UploadError
    from rage.upload import resend_command, upload_bundle

    again = resend_command(built.path, target, settings)
    try:
        result = upload_bundle(built.path, target=target, settings=settings,
                               progress=sys.stderr.isatty() and not as_json,
                               notify=lambda line: _say(f"rage: {line}"))
    except UploadError as e:
        kept = f"the bundle is kept: {built.path}; resend it with: {again}"
        raise UploadError(e.message, bundle=str(built.path),
                          hint=f"{e.hint}; {kept}" if e.hint else kept) from None
    except KeyboardInterrupt:
        raise InterruptedByUser(f"upload interrupted; the bundle is kept: {built.path}",
                                hint=f"resend it with: {again}") from None
    from rage.cli.share import shared

    link, issue_url = shared(built.path, result.url, settings.issues_url)
    return {"upload": result, "markdown": link, "issue_url": issue_url}


def _gist_step(settings: Any) -> str | None:
    """What stands before a gist upload, None if nothing (:func:`rage.upload.github.
    gist_hint`, which does not load the uploader's HTTP client)."""
    from rage.errors import ConfigError
    from rage.upload.github import gist_hint

    try:
        return gist_hint(settings)
    except ConfigError:  # the bundle is written: a hint line never fails the report
        return "after fixing [tokens] in the config"


def _no_target_choices(path: Path, settings: Any) -> list[str]:
    """What the user can do with a bundle when no upload target is configured."""
    import shlex

    from rage.invocation import rage_command

    q = shlex.quote(str(path))
    rage = rage_command()  # `mytool rage` from pipx: no `rage` on PATH
    lines = ["No upload target is configured. To share the bundle:"]
    if settings.issues_url:
        lines.append(f"  - attach it to a new issue: {settings.issues_url}")
    else:
        lines.append("  - attach the file to your bug report (drag it into the issue)")
    step = _gist_step(settings)  # a token for the configured gist API, not GitHub's anywhere
    lines.append(f"  - upload it as a private gist{f' ({step})' if step else ''}: "
                 f"{rage} send {q} --to gist")
    lines.append(f"  - send it to the project's receiver: {rage} send {q} --to URL")
    return lines


def _run_report(
    *,
    app: str | None,
    app_defaults: Mapping[str, Any] | None,
    extra_collectors: Sequence[Any],
    run_ref: str | None,
    last: bool,
    last_failed: bool,
    yes: bool,
    preview: bool,
    output: str | None,
    note: str | None,
    to: str | None,
    allow_http: bool | None,
    no_upload: bool,
    no_check: bool,
    no_findings: bool,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    no_collect: bool,
    as_json: bool,
) -> None:
    from rage.cli.render import checked_settings
    from rage.errors import InterruptedByUser
    from rage.record.history import RunStore
    from rage.report import STDOUT, ReportRequest, output_path, prepare, write
    from rage.report import preview as preview_data
    from rage.report.select import no_terminal_error, resolve_flags

    if to and no_upload:
        raise UsageError("--to and --no-upload contradict each other")
    to_stdout = output == STDOUT
    if to_stdout and (to or as_json or preview):
        raise UsageError("--output - puts the bundle on stdout: it cannot be combined with "
                         "--to, --json or --preview")
    tty = _interactive()
    if as_json and not (preview or yes or not tty):
        raise UsageError("--json needs --yes or --preview (it cannot ask questions)")
    try:
        run = resolve_flags(RunStore(), app, run_ref, last=last, last_failed=last_failed)
        if run is None:
            if not tty:
                raise no_terminal_error()
            run = _choose(app)
    except KeyboardInterrupt:
        raise InterruptedByUser("interrupted: no bundle written") from None
    # --to is the target, not the configured upload_url: that one says which host
    # RAGE_UPLOAD_TOKEN belongs to (rage.upload.tokens)
    settings = checked_settings(run.app, app_defaults=app_defaults,
                                overrides={"allow_http": allow_http or None})
    target = None if (no_upload or preview or to_stdout) else (to or settings.upload_url)
    if target or to:
        from rage.upload import check_target

        check_target(to or settings.upload_url, settings)  # before a bundle is written
    if target and not yes and not tty:
        raise UsageError(f"uploading to {_host(target)} needs --yes when there is no terminal "
                         "to confirm on (or pass --no-upload)")
    dest = None if preview else output_path(output, run, 0.0)  # refuse a bad --output early
    try:
        if note is None and tty and not yes and not preview:
            note = _ask("What went wrong? (one line, Enter to skip)") or None
    except KeyboardInterrupt:
        raise InterruptedByUser("interrupted: no bundle written") from None
    request = ReportRequest(run=run, settings=settings, note=note, only=only, skip=skip,
                            extra_collectors=tuple(extra_collectors), collect=not no_collect,
                            findings=not no_findings)
    with prepare(request) as prepared:
        for w in prepared.warnings:
            warn(w)

        def show_preview() -> None:
            from rage.termjob import can_page

            text = _render_preview(preview_data(prepared))
            if can_page():
                click.echo_via_pager(text)
            else:
                click.echo(text, nl=False)

        if preview:
            if as_json:
                emit_json(preview_data(prepared))
            else:
                show_preview()
            return
        if tty and not yes:
            if dest is None:
                where = "standard output"
            elif output is None or os.path.isdir(output):
                where = f"a new file in {dest.parent}"
            else:
                where = str(dest)
            _overview(prepared, where)
            try:
                if not _confirm("Create the bundle?", default=True, on_preview=show_preview):
                    raise DeclinedError("no bundle written")
            except KeyboardInterrupt:
                raise InterruptedByUser("interrupted: no bundle written") from None
        built = write(prepared, output)
    if output is not None and not to_stdout:
        from rage.report.elsewhere import note_elsewhere

        try:  # `rage pending` and `rage send NAME` find it
            note_elsewhere(built.path, run.app)
        except OSError as e:
            warn(f"`rage pending` will not list {built.path}: {e.strerror or e}")
    result: dict[str, Any] = {"run": run.id, "app": run.app, "bundle": built.to_dict(),
                              "redaction_counts": prepared.redaction_counts,
                              "upload": None, "markdown": None, "issue_url": None}
    say = _say if to_stdout else click.echo
    if to_stdout:
        _say(f"bundle written to standard output ({format_size(built.size)})")
        return
    culprit = prepared.manifest.get("culprit")
    result["culprit"] = culprit
    result["since_it_worked"] = since = prepared.manifest.get("since_it_worked")
    if not as_json:
        say(f"bundle written: {built.path} ({format_size(built.size)})")
        if culprit:
            from rage.cli.termtext import clean_line
            from rage.report.summary import culprit_line

            say(clean_line(culprit_line(run.app, culprit)))
            if culprit.get("issue_url"):
                say(f"  if it is their bug, tell them too: {clean_line(culprit['issue_url'])}")
        if not target:
            for line in _no_target_choices(built.path, settings):
                say(line)
        if since and not (tty and not yes):  # (the overview said it before asking)
            from rage.cli.termtext import clean_line

            _say(clean_line(since))  # (stderr: what the report found, not its result)
    known = None
    if target and not no_check:
        from rage.upload.known import check, describe

        known = check(target, built.path, settings)
        if known is not None:
            result["known"] = known.to_dict()
            if not as_json:
                _say(f"rage: {describe(known, built.manifest.get('app_version'))}")
    if target and not yes:
        # a crash fixed in a later version: only the hash prefix was sent, and declining
        # (the default) sends nothing more
        fixed = known is not None and known.upgrade
        question = "Send it anyway?" if fixed else f"Upload it to {_host(target)}?"
        try:
            go = _confirm(question, default=not fixed)
        except KeyboardInterrupt:
            go = False
            _say("")
        if not go:
            from rage.upload import resend_command

            say("not uploaded; send it later with: "
                f"{resend_command(built.path, target, settings)}")
            target = None
    if target:
        result.update(_upload(built, settings, target, as_json=as_json))
        if not as_json:
            from rage.cli.share import say_shared

            say_shared(result["upload"], result["markdown"], result["issue_url"])
    if as_json:
        emit_json(result)


def _params(fixed_app: bool) -> list[click.Parameter]:
    params: list[click.Parameter] = [
        click.Argument(["run_ref"], metavar="[RUN]", required=False),
        click.Option(["--last", "-l"], is_flag=True, help="The most recent run."),
        click.Option(["--last-failed", "-f"], is_flag=True,
                     help="The most recent failed, crashed, interrupted or lost run."),
        click.Option(["--yes", "-y"], is_flag=True,
                     help="Do not ask: create (and upload, if a target is set) right away."),
        click.Option(["--preview"], is_flag=True,
                     help="Show everything that would be sent, then stop."),
        click.Option(["--output", "-o"], metavar="PATH",
                     help="Write the bundle to PATH: a new file, an existing directory "
                          "(or DIR/) to put it in, or - for stdout. Never replaces anything."),
        click.Option(["--note", "-m"], metavar="TEXT", help="What went wrong, in your words."),
        click.Option(["--to"], metavar="URL", help="Upload target (overrides upload_url)."),
        click.Option(["--allow-http"], is_flag=True, default=None,
                     help="Allow plain http to a non-loopback host."),
        click.Option(["--no-upload"], is_flag=True, help="Only write the bundle."),
        click.Option(["--no-findings"], is_flag=True,
                     help="Leave out what changed since the app last worked and whose bug "
                          "the crash is (worked out on this machine; nothing is sent for "
                          "them)."),
        click.Option(["--no-check"], is_flag=True,
                     help="Do not ask a rage receiver whether the crash is known before "
                          "uploading (it is asked only a prefix of the crash's hash)."),
        click.Option(["--only"], multiple=True, metavar="NAME",
                     help="Run only this collector (repeatable)."),
        click.Option(["--skip"], multiple=True, metavar="NAME",
                     help="Do not run this collector (repeatable)."),
        click.Option(["--no-collect"], is_flag=True,
                     help="Run no collectors (no environment facts)."),
        click.Option(["--json", "as_json"], is_flag=True, help="Print JSON for scripts."),
    ]
    if not fixed_app:
        params.insert(1, click.Option(["--app", "-a"], metavar="NAME",
                                      help="Only runs of this app."))
    return params


def make_report_command(
    *,
    app: str | None = None,
    app_defaults: Mapping[str, Any] | None = None,
    extra_collectors: Sequence[Any] = (),
    name: str = "report",
    help: str | None = None,  # mirrors click's own parameter name
) -> click.Command:
    """Build the `report` command; with ``app`` set it only sees that app's runs and has no
    ``--app`` option, and ``app_defaults`` feed :func:`rage.config.load_settings`."""
    if app is not None:
        from rage.paths import check_app

        check_app(app)
    defaults = dict(app_defaults) if app_defaults else None
    extras = tuple(extra_collectors)

    def callback(**kw: Any) -> None:
        _run_report(app=kw.pop("app", None) if app is None else app, app_defaults=defaults,
                    extra_collectors=extras, **kw)

    cmd_callback: Callable[..., None] = callback
    if app is not None:
        cmd_callback = _with_boundary(callback)
    return click.Command(name, callback=cmd_callback, params=_params(app is not None),
                         help=help or DEFAULT_HELP,
                         context_settings={"help_option_names": ["-h", "--help"]})


def _with_boundary(fn: Callable[..., None]) -> Callable[..., None]:
    """Outside the `rage` group (an app's own `mytool rage`), turn RageError into its exit
    code here: the group's boundary is not there to do it."""
    from rage.errors import RageError

    def wrapped(**kw: Any) -> None:
        try:
            fn(**kw)
        except RageError as e:
            from rage.cli.main import report_error

            ctx = click.get_current_context(silent=True)
            root = (ctx.find_root().info_name if ctx else None) or "rage"
            report_error(e, prog=root.split()[0])  # `mytool rage`: errors name mytool
            sys.exit(int(e.exit_code))

    return wrapped


report = make_report_command()
