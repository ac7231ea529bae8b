"""Where rage keeps things. One module decides; ``RAGE_HOME`` overrides everything.

Layout under the root::

    <root>/<app>/runs/<run-id>/      one directory per recorded run (history.py)
    <root>/<app>/reports/            bundles written by `rage report` and kept until sent

Paths are computed on each call (cheap) so tests and long-lived processes see changes to
``RAGE_HOME``; platformdirs is imported only when ``RAGE_HOME`` is unset.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from rage.errors import UsageError

_APP_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]{0,99}$")


def home_root() -> Path:
    """The root of all rage state: ``$RAGE_HOME`` or the user state dir for "rage"."""
    env = os.environ.get("RAGE_HOME")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_state_dir("rage", appauthor=False))


def config_file() -> Path:
    """The user's config file: ``$RAGE_CONFIG`` or ``<user config dir>/rage/config.toml``."""
    env = os.environ.get("RAGE_CONFIG")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir("rage", appauthor=False)) / "config.toml"


def check_app(app: str) -> str:
    """Return ``app`` if it is a safe directory name, else raise :class:`UsageError`."""
    if not _APP_RE.match(app) or app in {".", ".."}:
        raise UsageError(f"invalid app name {app!r}: use letters, digits, '.', '_', '+', '-'")
    return app


def app_name_from_command(cmd: str) -> str:
    """Derive an app name from a command path (``/usr/bin/git`` -> ``git``)."""
    base = os.path.basename(cmd.rstrip("/")) or "command"
    safe = re.sub(r"[^A-Za-z0-9._+-]", "_", base).lstrip(".") or "command"
    return safe[:100]


def app_dir(app: str, root: Path | None = None) -> Path:
    return (root or home_root()) / check_app(app)


def runs_dir(app: str, root: Path | None = None) -> Path:
    return app_dir(app, root) / "runs"


def reports_dir(app: str, root: Path | None = None) -> Path:
    return app_dir(app, root) / "reports"
