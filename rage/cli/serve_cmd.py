"""`rage serve`: run the self-hostable bundle receiver (extra "server": waitress)."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import click

from rage.errors import ConfigError, UsageError

MiB = 1024 * 1024
RECV_BYTES = 64 * 1024  # socket.recv() size for request bodies


def _size(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    from rage.config import parse_size

    try:
        return parse_size(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def default_storage() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("rage-server", appauthor=False))


def _display_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


# characters: secrets.token_urlsafe(16), 128 random bits, is 22
MIN_ADMIN_TOKEN = 22


def _all_interfaces(host: str) -> bool:
    return host in {"", "0.0.0.0", "::", "[::]"}


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _reachable_name() -> str:
    """A name for this machine that a link can use: its host name when that resolves
    (others on the network can use it), else 127.0.0.1 (this machine can)."""
    import socket

    name = socket.gethostname()
    try:
        if name and socket.getaddrinfo(name, None):
            return name
    except (OSError, UnicodeError):
        pass
    return "127.0.0.1"


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              help="Port (0 picks a free one; the URL is printed).")
@click.option("--storage", envvar="RAGE_SERVER_STORAGE", metavar="DIR|s3://BUCKET/PREFIX",
              help="Where bundles live: a directory, or an S3 bucket (extra 's3'; credentials "
                   "and region from the usual AWS variables) [default: the user data dir / "
                   "rage-server].")
@click.option("--max-bundle-size", default="64MiB", show_default=True, callback=_size,
              help="Largest accepted upload (compressed).")
@click.option("--max-decompressed-size", default="512MiB", show_default=True, callback=_size,
              help="Largest accepted bundle once decompressed (decompression bombs stop here).")
@click.option("--public-url", metavar="URL",
              help="Base URL for links when behind a proxy (default: from the Host header).")
@click.option("--upload-token", envvar="RAGE_SERVER_UPLOAD_TOKEN", metavar="TOKEN",
              help="Require `Authorization: Bearer TOKEN` on uploads.")
@click.option("--admin-token", envvar="RAGE_SERVER_ADMIN_TOKEN", metavar="TOKEN",
              help="Enable /admin (recent bundles) for this token.")
@click.option("--max-manifest-size", default="256KiB", show_default=True, callback=_size,
              help="Largest accepted manifest.json (it is stored and listed with the bundle).")
@click.option("--threads", type=click.IntRange(1, 256), default=8, show_default=True,
              help="Worker threads.")
@click.option("--database", envvar="RAGE_SERVER_DATABASE", metavar="URL",
              help="Triage index: a SQLAlchemy URL such as postgresql://user@host/db "
                   "[default: a SQLite file in the storage directory].")
@click.option("--notify-webhook", multiple=True, metavar="URL",
              help="POST JSON here on a new signature or a regression (repeatable).")
@click.option("--notify-slack", multiple=True, metavar="URL",
              help="Slack-compatible incoming webhook for the same events (repeatable).")
@click.option("--s3-endpoint", envvar="RAGE_SERVER_S3_ENDPOINT", metavar="URL",
              help="S3-compatible endpoint for --storage s3://... (default: AWS, or "
                   "AWS_ENDPOINT_URL).")
@click.option("--retention-days", type=float, metavar="DAYS",
              help="Delete bundles older than DAYS (object and index row together).")
@click.option("--retention", multiple=True, metavar="APP=DAYS",
              help="Retention for one app, overriding --retention-days (repeatable).")
@click.option("--migrate", is_flag=True,
              help="Create or upgrade the index schema, then exit (run once per upgrade).")
@click.option("--connection-limit", type=click.IntRange(1, 100_000), default=100,
              show_default=True,
              help="Open connections before new ones wait (slow clients hold one each).")
@click.option("--channel-timeout", type=click.IntRange(1, 3600), default=60,
              show_default=True,
              help="Seconds of silence before a connection is dropped.")
@click.option("--trusted-proxy", metavar="ADDRESS",
              help="A reverse proxy in front (e.g. 127.0.0.1): trust its X-Forwarded-For, "
                   "-Proto and -Host headers.")
def serve(*, host: str, port: int, storage: str | None, max_bundle_size: int,
          max_decompressed_size: int, public_url: str | None, upload_token: str | None,
          admin_token: str | None, max_manifest_size: int, threads: int,
          database: str | None, notify_webhook: tuple[str, ...], notify_slack: tuple[str, ...],
          s3_endpoint: str | None, retention_days: float | None, retention: tuple[str, ...],
          migrate: bool, connection_limit: int, channel_timeout: int,
          trusted_proxy: str | None) -> None:
    """Receive rage bundles: `curl -F file=@b.tar.zst URL/` prints a link to a page."""
    try:
        from waitress.server import create_server
    except ImportError:
        from rage.cli.extras import install_command

        raise UsageError("rage serve needs the 'server' extra (waitress, SQLAlchemy, Jinja2)",
                         hint=f"install it with: {install_command('server')}") from None
    from rage.server.app import MULTIPART_SLACK, ReceiverApp, ServerConfig
    from rage.server.storage import LocalStorage, sweep_parts

    if public_url and not public_url.startswith(("http://", "https://")):
        raise UsageError(f"--public-url must start with http:// or https://: {public_url!r}")
    if (notify_webhook or notify_slack) and not public_url:
        # a notification's links would otherwise name whatever Host an uploader sent
        raise UsageError("--notify-webhook and --notify-slack need --public-url (the links "
                         "they send are built from it, never from a request's Host header)")
    if admin_token and len(admin_token) < MIN_ADMIN_TOKEN:
        # on stderr: the first line on stdout is the URL, which scripts read
        click.echo(f"rage serve: warning: the admin token is {len(admin_token)} characters; "
                   f"use at least {MIN_ADMIN_TOKEN} random ones (python3 -c 'import secrets; "
                   "print(secrets.token_urlsafe(32))')", err=True)
    store, where, default_db = _open_storage(storage, s3_endpoint)
    config = ServerConfig(max_bundle_size=max_bundle_size,
                          max_decompressed=max_decompressed_size, public_url=public_url,
                          upload_token=upload_token or None, admin_token=admin_token or None,
                          max_manifest=max_manifest_size)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s: %(message)s")
    from rage.server.quietlog import OncePer

    logging.getLogger("waitress.queue").addFilter(OncePer(10))  # else one a request
    from rage.server.setup import open_triage

    db_url = database or default_db
    if db_url is None:
        raise UsageError("--storage s3://... needs --database (the index must be shared by "
                         "every receiver: e.g. postgresql://user@host/db)")
    if migrate:
        from rage.server.setup import migrate_index

        click.echo(f"rage serve: {migrate_index(db_url)}")
        return
    from rage.server import retention as _retention

    policy = _retention.parse_policy(retention_days, retention)
    triage = open_triage(db_url, store, config, webhooks=notify_webhook, slack=notify_slack)
    if policy.active:
        _retention.start(store, triage.index, policy)
    if isinstance(store, LocalStorage) and (swept := sweep_parts(store.tmp_dir())):
        logging.getLogger("rage.server").info("swept %d unfinished upload(s) left by a crash",
                                              swept)
    proxy: dict[str, object] = {}
    if trusted_proxy:
        proxy = {"trusted_proxy": trusted_proxy, "trusted_proxy_count": 1,
                 "trusted_proxy_headers": {"x-forwarded-for", "x-forwarded-proto",
                                           "x-forwarded-host"}}
    try:
        server = create_server(
            ReceiverApp(store, config, triage), host=host, port=port, threads=threads,
            # waitress refuses bodies far over the limit from the headers alone; the app
            # answers the rest with a JSON error
            max_request_body_size=2 * max_bundle_size + MULTIPART_SLACK,
            ident="rage", clear_untrusted_proxy_headers=True,
            # a bundle arrives in 64 KiB reads, not waitress's default 8 KiB: each read is a
            # trip through the event loop and a buffer append, and a GIL hand-off
            recv_bytes=RECV_BYTES,
            connection_limit=connection_limit, channel_timeout=channel_timeout,
            # idle connections are looked for this often: a timeout is honoured within ~1.5x
            cleanup_interval=max(1, min(30, channel_timeout // 2)), **proxy)
    except OSError as e:
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror}") from None
    from rage.server.framing import harden

    harden(server)  # Content-Length with Transfer-Encoding: 400 and close (RFC 9112)
    everywhere = _all_interfaces(host)
    shown = _reachable_name() if everywhere else _display_host(server.effective_host)
    url = f"http://{shown}:{server.effective_port}/"
    if not upload_token and not _is_loopback(host):
        click.echo(f"rage serve: warning: uploads need no token and {host} is reachable from "
                   "other machines: set RAGE_SERVER_UPLOAD_TOKEN (or --upload-token)", err=True)
    # the first stdout line ends with the URL: scripts and tests read it
    if everywhere:
        click.echo(f"rage serve: listening on all interfaces, port {server.effective_port}: "
                   f"{url}")
    else:
        click.echo(f"rage serve: listening on {url}")
    click.echo(f"rage serve: storing bundles in {where}")
    base = (public_url or url).rstrip("/") + "/"
    from urllib.parse import urlsplit

    parts = urlsplit(base)
    plain = parts.scheme == "http" and not _is_loopback(parts.hostname or "")
    click.echo(f"rage serve: send a bundle with `rage send BUNDLE --to {base}"
               f"{' --allow-http' if plain else ''}` (or `curl -F file=@bundle.tar.zst {base}`)"
               + ("; senders set RAGE_UPLOAD_TOKEN to the upload token" if upload_token else ""))
    if admin_token:
        click.echo(f"rage serve: triage at {base}triage, recent bundles at {base}admin "
                   "(sign in with the admin token)")
    else:
        click.echo("rage serve: triage (/triage) and recent bundles (/admin) need an admin "
                   "token: set RAGE_SERVER_ADMIN_TOKEN (or --admin-token)")
    sys.stdout.flush()

    def _stop(_signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, _stop)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


def _open_storage(storage: str | None, s3_endpoint: str | None) -> tuple[Any, str, str | None]:
    """(storage, where it is for humans, the default index URL or None when it must be
    given): a local directory, or an S3 bucket checked writable before anything is served."""
    from rage.server.storage import LocalStorage

    if storage and storage.startswith("s3://"):
        try:
            from rage.server.storage_s3 import S3Storage
        except ImportError:
            raise UsageError("--storage s3://... needs boto3",
                             hint="pip install 'rage-report[server,s3]'") from None
        try:
            s3 = S3Storage(storage, endpoint_url=s3_endpoint)
            s3.check_writable()
        except ConfigError as e:
            raise UsageError(e.message) from None
        return s3, storage, None
    if s3_endpoint:
        raise UsageError("--s3-endpoint goes with --storage s3://BUCKET/PREFIX")
    root = (Path(storage) if storage else default_storage()).expanduser()
    try:
        return LocalStorage(root), str(root), f"sqlite:///{root / 'index.sqlite3'}"
    except OSError as e:
        raise UsageError(f"cannot use storage directory {root}: {e.strerror}") from None
