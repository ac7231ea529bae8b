"""The exact command that adds an optional extra (``server``, ``s3``...) to this install.

rage is not on PyPI yet: ``pip install 'rage-report[server]'`` finds nothing, so a hint
naming it sends a user who installed from a checkout or a wheel nowhere. pip records where a
distribution came from (PEP 610's ``direct_url.json``): the same checkout or wheel file with
the extra, installed by the interpreter that runs rage, is a command that works.
"""

from __future__ import annotations

import json
import shlex
import sys
from urllib.parse import unquote, urlparse

DISTRIBUTION = "rage-report"


def _origin() -> tuple[str, bool] | None:
    """(local path rage was installed from, editable), or None (an index, or unknown)."""
    from importlib import metadata

    # the first with a record: run from a checkout, its rage_report.egg-info comes first
    # on sys.path and says nothing about how rage was installed
    records = (d.read_text("direct_url.json") for d in metadata.distributions(name=DISTRIBUTION))
    raw = next((r for r in records if r), None)
    if raw is None:
        return None
    try:
        info = json.loads(raw)
        url = urlparse(info["url"])
        editable = bool(info.get("dir_info", {}).get("editable"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if url.scheme != "file" or not url.path:
        return None
    return unquote(url.path), editable


def install_command(extra: str) -> str:
    """A shell command that installs ``extra`` next to this rage."""
    pip = [sys.executable, "-m", "pip", "install"]
    origin = _origin()
    if origin is None:
        return shlex.join([*pip, f"{DISTRIBUTION}[{extra}]"])
    path, editable = origin
    return shlex.join([*pip, *(["-e"] if editable else []), f"{path}[{extra}]"])
