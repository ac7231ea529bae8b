"""`rage serve`: run the self-hostable bundle receiver (extra "server": waitress)."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from types import FrameType

import click

from rage.errors import UsageError

MiB = 1024 * 1024


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


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              help="Port (0 picks a free one; the URL is printed).")
@click.option("--storage", type=click.Path(file_okay=False, path_type=Path),
              envvar="RAGE_SERVER_STORAGE",
              help="Directory for bundles [default: the user data dir / rage-server].")
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
@click.option("--connection-limit", type=click.IntRange(1, 100_000), default=100,
              show_default=True,
              help="Open connections before new ones wait (slow clients hold one each).")
@click.option("--channel-timeout", type=click.IntRange(1, 3600), default=60,
              show_default=True,
              help="Seconds of silence before a connection is dropped.")
@click.option("--trusted-proxy", metavar="ADDRESS",
              help="A reverse proxy in front (e.g. 127.0.0.1): trust its X-Forwarded-For, "
                   "-Proto and -Host headers.")
@click.option("--database", envvar="RAGE_SERVER_DATABASE", metavar="URL",
              help="Triage index (SQLAlchemy URL) [default: sqlite file in the storage dir].")
@click.option("--notify-webhook", multiple=True, metavar="URL",
              help="POST JSON here on a new signature or a regression (repeatable).")
@click.option("--notify-slack", multiple=True, metavar="URL",
              help="Slack-compatible incoming webhook for the same events (repeatable).")
def serve(*, host: str, port: int, storage: Path | None, max_bundle_size: int,
          max_decompressed_size: int, public_url: str | None, upload_token: str | None,
          admin_token: str | None, max_manifest_size: int, threads: int,
          connection_limit: int, channel_timeout: int, trusted_proxy: str | None,
          database: str | None, notify_webhook: tuple[str, ...],
          notify_slack: tuple[str, ...]) -> None:
    """Receive rage bundles: `curl -F file=@b.tar.zst URL/` prints a link to a page."""
    try:
        from waitress.server import create_server
    except ImportError:
        raise UsageError("rage serve needs waitress",
                         hint="pip install 'rage-report[server]'") from None
    from rage.server.app import MULTIPART_SLACK, ReceiverApp, ServerConfig
    from rage.server.storage import LocalStorage, sweep_parts

    if public_url and not public_url.startswith(("http://", "https://")):
        raise UsageError(f"--public-url must start with http:// or https://: {public_url!r}")
    root = (storage or default_storage()).expanduser()
    try:
        store = LocalStorage(root)
    except OSError as e:
        raise UsageError(f"cannot use storage directory {root}: {e.strerror}") from None
    config = ServerConfig(max_bundle_size=max_bundle_size,
                          max_decompressed=max_decompressed_size, public_url=public_url,
                          upload_token=upload_token or None, admin_token=admin_token or None,
                          max_manifest=max_manifest_size)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s: %(message)s")
    if swept := sweep_parts(store.tmp_dir()):
        logging.getLogger("rage.server").info("swept %d unfinished upload(s) left by a crash",
                                              swept)
    from rage.server.setup import open_triage

    triage = open_triage(database or f"sqlite:///{root / 'index.sqlite3'}", store, config,
                         webhooks=notify_webhook, slack=notify_slack)
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
            connection_limit=connection_limit, channel_timeout=channel_timeout,
            # idle connections are looked for this often: a timeout is honoured within ~1.5x
            cleanup_interval=max(1, min(30, channel_timeout // 2)), **proxy)
    except OSError as e:
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror}") from None
    url = f"http://{_display_host(server.effective_host)}:{server.effective_port}/"
    # the first stdout line is the URL: scripts and tests read it
    click.echo(f"rage serve: listening on {url}")
    click.echo(f"rage serve: storing bundles in {root}")
    click.echo(f"rage serve: upload with `curl -F file=@bundle.tar.zst {public_url or url}`")
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
