"""Wiring the triage index into `rage serve`: open (and migrate) it, notifiers, re-indexing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rage.errors import UsageError

if TYPE_CHECKING:
    from rage.server.app import ServerConfig
    from rage.server.storage import Storage
    from rage.server.triage import Triage


def open_triage(url: str, storage: Storage, config: ServerConfig, *,
                webhooks: tuple[str, ...] = (), slack: tuple[str, ...] = ()) -> Triage:
    """The receiver's triage desk on the index at ``url``; a one-line UsageError if the
    database layer is missing, the URL is wrong or the index is newer than this rage."""
    try:
        import jinja2  # noqa: F401
        import sqlalchemy as sa
    except ImportError:
        raise UsageError("rage serve needs SQLAlchemy and Jinja2 for its triage index",
                         hint="pip install 'rage-report[server]'") from None
    from rage.server.index import Index
    from rage.server.notify import Notifier, Target
    from rage.server.schema import SchemaTooNew
    from rage.server.triage import Triage

    for hook in (*webhooks, *slack):
        if not hook.startswith(("http://", "https://")):
            raise UsageError(f"a notification URL must start with http:// or https://: {hook!r}")
    try:
        index = Index(database_url(url))
    except SchemaTooNew as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"cannot open the index at {_safe(url)}: {e.strerror}") from None
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError) as e:
        raise UsageError(f"bad --database URL: {e}") from None
    except sa.exc.SQLAlchemyError as e:
        raise UsageError(f"cannot open the index at {_safe(url)}: "
                         f"{str(e.orig if hasattr(e, 'orig') else e).splitlines()[0]}") from None
    targets = [Target(u, "json") for u in webhooks] + [Target(u, "slack") for u in slack]
    triage = Triage(index, notifier=Notifier(targets) if targets else None,
                    max_decompressed=config.max_decompressed)
    # a new index learns every bundle already stored, an old one the newest 1,000 it lacks
    # (an upload whose index write failed), and re-signs what an older algorithm signed.
    # In the background: the receiver answers meanwhile.
    triage.start_background(storage, recent=10**9 if index.migrated_from == 0 else 1000)
    return triage


def database_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` mean psycopg 3 (the ``postgres`` extra), not
    SQLAlchemy's default psycopg2 driver; any other SQLAlchemy URL is used as given."""
    for scheme in ("postgresql://", "postgres://"):
        if url.startswith(scheme):
            return "postgresql+psycopg://" + url[len(scheme):]
    return url


def migrate_index(url: str) -> str:
    """Create or upgrade the index schema (``rage serve --migrate``); says what it did."""
    try:
        import sqlalchemy as sa

        from rage.server.index import Index
        from rage.server.schema import LATEST, SchemaTooNew
    except ImportError:
        raise UsageError("rage serve needs SQLAlchemy for its triage index",
                         hint="pip install 'rage-report[server]'") from None
    try:
        index = Index(database_url(url))
    except SchemaTooNew as e:
        raise UsageError(str(e)) from None
    except sa.exc.SQLAlchemyError as e:
        raise UsageError(f"cannot open the index at {_safe(url)}: "
                         f"{str(e.orig if hasattr(e, 'orig') else e).splitlines()[0]}") from None
    was = index.migrated_from
    index.close()
    if was == LATEST:
        return f"the index at {_safe(url)} is at schema version {LATEST}: nothing to do"
    return f"migrated the index at {_safe(url)} from schema version {was} to {LATEST}"


def _safe(url: str) -> str:
    """The URL without its password (it is printed)."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "the given URL"
