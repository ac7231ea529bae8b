"""Where rage keeps things. One module decides; ``RAGE_HOME`` overrides everything.

Layout under the root::

    <root>/<app>/runs/<run-id>/      one directory per recorded run (history.py)
    <root>/<app>/reports/            bundles written by `rage report` and kept until sent

Paths are computed on each call (cheap) so tests and long-lived processes see changes to
``RAGE_HOME``. This module is on every recorded command's start-up path (``rage run``), so
it imports neither ``re`` nor ``pathlib`` at module level, and on Linux it applies the XDG
rule itself instead of importing platformdirs (same answer, ~10 ms less start-up).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

_APP_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_APP_CHARS = _APP_FIRST | frozenset(".+-")


def _xdg_applies() -> bool:
    """True where platformdirs uses its XDG (Unix) rules: Linux that is not Android."""
    if not sys.platform.startswith("linux") or hasattr(sys, "getandroidapilevel"):
        return False
    env = os.environ
    return not (env.get("ANDROID_DATA") == "/data" and env.get("ANDROID_ROOT") == "/system")


def _xdg_home(var: str, default: str) -> str:
    """``$var`` if it is an absolute path, else ``~/<default>`` (platformdirs' XDG rule)."""
    value = os.environ.get(var, "")
    if os.path.isabs(value):
        return value
    home = os.environ.get("HOME")
    if home is None or not os.path.isabs(home):
        import pwd

        home = pwd.getpwuid(os.getuid()).pw_dir
    return os.path.join(home.rstrip("/") or "/", default)


def _platformdirs() -> object:
    try:
        import platformdirs
    except ImportError:
        if not sys.flags.no_site:
            raise
        # started with -S by a shim: site-packages are only one site.main() away
        import site

        site.main()
        import platformdirs
    return platformdirs


def home_root_str() -> str:
    """:func:`home_root` as a string, without importing pathlib."""
    env = os.environ.get("RAGE_HOME")
    if env:
        return os.path.expanduser(env)
    if _xdg_applies():
        return os.path.join(_xdg_home("XDG_STATE_HOME", ".local/state"), "rage")
    pd = _platformdirs()
    return str(pd.user_state_dir("rage", appauthor=False))  # type: ignore[attr-defined]


def config_file_str() -> str:
    """:func:`config_file` as a string, without importing pathlib."""
    env = os.environ.get("RAGE_CONFIG")
    if env:
        return os.path.expanduser(env)
    if _xdg_applies():
        base = os.path.join(_xdg_home("XDG_CONFIG_HOME", ".config"), "rage")
    else:
        pd = _platformdirs()
        base = str(pd.user_config_dir("rage", appauthor=False))  # type: ignore[attr-defined]
    return os.path.join(base, "config.toml")


def home_root() -> Path:
    """The root of all rage state: ``$RAGE_HOME`` or the user state dir for "rage"."""
    from pathlib import Path

    return Path(home_root_str())


def config_file() -> Path:
    """The user's config file: ``$RAGE_CONFIG`` or ``<user config dir>/rage/config.toml``."""
    from pathlib import Path

    return Path(config_file_str())


def is_app_name(app: str) -> bool:
    """True if ``app`` is 1-100 of ``[A-Za-z0-9._+-]``, not starting with ``.``, ``+``, ``-``."""
    return (0 < len(app) <= 100 and app[0] in _APP_FIRST and all(c in _APP_CHARS for c in app)
            and app not in {".", ".."})


def check_app(app: str) -> str:
    """Return ``app`` if it is a safe directory name, else raise :class:`UsageError`."""
    if not is_app_name(app):
        from rage.errors import UsageError

        raise UsageError(f"invalid app name {app!r}: use letters, digits, '.', '_', '+', '-'")
    return app


def app_name_from_command(cmd: str) -> str:
    """Derive an app name from a command path (``/usr/bin/git`` -> ``git``)."""
    base = os.path.basename(cmd.rstrip("/")) or "command"
    safe = "".join(c if c in _APP_CHARS else "_" for c in base).lstrip(".") or "command"
    return safe[:100]


def app_dir(app: str, root: Path | None = None) -> Path:
    return (root or home_root()) / check_app(app)


def runs_dir(app: str, root: Path | None = None) -> Path:
    return app_dir(app, root) / "runs"


def reports_dir(app: str, root: Path | None = None) -> Path:
    return app_dir(app, root) / "reports"


def prebuild_stamp(root: str) -> str:
    """The file a finished report prebuild leaves (rage.report.prebuild), named by what the
    caches it builds depend on: rage's version, the interpreter (the file, by device and
    inode: `python` and `python3` of a venv are one) and its environment, host, user and
    home (not the Hyperscan version, which would cost its import: after its upgrade the
    first report compiles, as before). Here, not there: a recorder checks it after every
    command, and this module is already loaded."""
    from rage._version import __version__

    try:
        st = os.stat(sys.executable)
        exe = f"{st.st_dev}:{st.st_ino}"
    except OSError:
        exe = sys.executable
    who = "\0".join([__version__, sys.version, exe, sys.prefix, os.uname().nodename,
                     os.environ.get("HOME", ""), os.environ.get("USER", ""),
                     os.environ.get("LOGNAME", ""), str(os.getuid())])
    h = 0x811C9DC5  # FNV-1a, 32 bits: no zlib to load (an extension module's load is most
    for b in who.encode():  # of what this check would cost)
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return os.path.join(root, ".cache", f"prebuilt-{h:08x}")


def prebuild_needed(root: str) -> bool:
    """True until a report prebuild finished for this rage home and all its stamp names."""
    try:
        os.stat(prebuild_stamp(root))
    except OSError:
        return True
    return False
