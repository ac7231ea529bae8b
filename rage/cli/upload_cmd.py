"""`rage send` (upload a kept bundle) and `rage pending` (list kept, unsent bundles)."""

from __future__ import annotations

from pathlib import Path

import click

from rage.cli.render import emit_json, format_when
from rage.config import format_size
from rage.errors import DeclinedError, UploadError, UsageError

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


@click.command()
@click.argument("bundle_ref", metavar="BUNDLE")
@click.option("--to", "to", metavar="URL",
              help="Where to upload (https://..., put+https://..., receiver+https://..., "
                   "gist, file:///dir). Default: upload_url from the config.")
@click.option("--app", "-a", metavar="NAME", help="Use this app's settings (and kept bundles).")
@click.option("--protocol", type=click.Choice(["multipart", "put", "receiver", "gist", "file"]),
              help="How to upload to a plain URL (default: multipart).")
@click.option("--allow-http", is_flag=True, default=None,
              help="Allow plain http to a non-loopback host.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.option("--any-file", is_flag=True,
              help="Upload FILE even if it is not a valid rage bundle (checked by default).")
@json_option
def send(*, bundle_ref: str, to: str | None, app: str | None, protocol: str | None,
          allow_http: bool | None, yes: bool, any_file: bool, as_json: bool) -> None:
    """Upload a bundle (a path, a name from `rage pending`, or `last`)."""
    from rage.bundle import validate_bundle
    from rage.cli.render import checked_settings
    from rage.cli.termtext import clean_line
    from rage.errors import BadInputError, InterruptedByUser
    from rage.report.pending import app_of, resolve_bundle, sent_info
    from rage.upload import check_target, resend_command, upload_bundle
    from rage.upload.members import describe, read_manifest

    path = resolve_bundle(bundle_ref, app)
    if not any_file:
        # what a receiver would refuse is not worth sending (and a typo such as
        # `rage send notes.txt` must not upload a private file)
        try:
            validate_bundle(path)
        except BadInputError as e:
            raise BadInputError(f"{clean_line(path)} is not a valid rage bundle: "
                                f"{clean_line(e.message)}",
                                hint="nothing was sent; pass --any-file to upload it anyway"
                                ) from None
    info = {k: clean_line(v) if isinstance(v, str) else v
            for k, v in describe(read_manifest(path)).items()}
    app = app or app_of(path) or info.get("app")
    info["app"] = info.get("app") or app
    # --to is the target, not the configured upload_url: that one says which host
    # RAGE_UPLOAD_TOKEN belongs to (rage.upload.tokens)
    settings = checked_settings(app, overrides={"upload_protocol": protocol,
                                                "allow_http": allow_http or None})
    target = to or settings.upload_url
    if not target:
        raise UsageError("no upload target",
                         hint="pass --to URL, or set upload_url (RAGE_UPLOAD_URL) in the config")
    check_target(target, settings)
    if not yes:
        from rage.termjob import can_ask

        if not can_ask():
            raise UsageError("not a terminal: pass --yes to upload without confirmation")
        previous = sent_info(path)
        again = f" (already sent to {previous.get('url')})" if previous else ""
        size = format_size(path.stat().st_size)
        question = f"upload {clean_line(path.name)} ({size}) to {clean_line(target)}?{again}"
        if not click.confirm(question, default=True, err=True):
            raise DeclinedError("not uploaded; the bundle is kept: " + str(path))
    again_cmd = resend_command(path, target, settings)
    try:
        result = upload_bundle(path, target=target, settings=settings, progress=not as_json,
                               protocol=settings.upload_protocol,
                               notify=lambda line: click.echo(f"rage: {line}", err=True))
    except UploadError as e:
        kept = f"the file is kept: {path}; retry with: {again_cmd}"
        raise UploadError(e.message, bundle=str(path),
                          hint=f"{e.hint}; {kept}" if e.hint else kept) from None
    except KeyboardInterrupt:
        raise InterruptedByUser(f"upload interrupted; the file is kept: {path}",
                                hint=f"retry with: {again_cmd}") from None
    if as_json:
        emit_json(result.to_dict())
        return
    from rage.cli.share import say_shared, shared

    say_shared(result, *shared(path, result.url, settings.issues_url))


@click.command()
@click.option("--app", "-a", metavar="NAME", help="Only bundles of this app.")
@json_option
def pending(app: str | None, as_json: bool) -> None:
    """List kept bundles that have not been uploaded yet, newest first."""
    from rage.cli.termtext import clean_line
    from rage.report.pending import list_pending

    bundles = list_pending(app)
    if as_json:
        emit_json({"bundles": [b.to_dict() for b in bundles]})
        return
    if not bundles:
        click.echo("no pending bundles", err=True)
        return
    home = Path.home()
    for b in bundles:
        shown = str(b.path)
        if b.path.is_relative_to(home):
            shown = "~/" + str(b.path.relative_to(home))
        click.echo(f"{format_when(b.created_at):<16} {clean_line(b.app):<12} "
                   f"{format_size(b.size):>9}  {clean_line(shown)}")
    click.echo("send one with: rage send BUNDLE", err=True)
