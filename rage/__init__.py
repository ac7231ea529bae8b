"""rage: always-on run recording and one-command bug reports for command-line tools.

Public API (imports are lazy so ``import rage`` stays cheap)::

    import rage
    rage.install("mytool", version="1.2")   # record this process as a run
    rage.redact_value(token)                # never let this literal reach disk in clear
"""

from __future__ import annotations

from rage._version import __version__

TYPE_CHECKING = False  # importing typing costs ~8 ms of `rage run` start-up (re, enum, ...)
if TYPE_CHECKING:
    from typing import Any

    from rage.integration.recorder import Recorder

version = __version__


def install(app: str, version: str | None = None, **options: Any) -> Recorder:
    """Record this Python process as a run of ``app``; see :mod:`rage.integration`."""
    from rage.integration.recorder import install as _install

    return _install(app, version=version, **options)


def redact_value(secret: str) -> None:
    """Register a literal secret: it is replaced wherever rage writes or bundles text."""
    from rage.redact import register_literal

    register_literal(secret)


__all__ = ["__version__", "install", "redact_value", "version"]
