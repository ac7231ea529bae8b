"""A run's cheap fingerprint, for "what changed since it last worked" (rage.report.changes).

Taken at the start of every recorded run into its ``meta.json`` (``fingerprint``, left out
of every bundle), within a few stats and the read of a small key:

- ``env``: a 16-bit keyed digest of each value ``environ.json`` masks, by name: enough to
  say a secret changed (one change in 65,536 is missed), too little to confirm a guess.
  The key is the rage home's own (``.cache/fingerprint.key``, 32 random bytes, 0600).
- ``python``: the interpreter's version and its site directories, each with its mtime and
  the id of a listing of the distributions in it (``.cache/sites/<id>``). A directory's
  mtime changes when anything is installed into it or removed, so the listing (a
  ``listdir``, ~1 ms for a few hundred packages) is made once per change, not per run; the
  report reads the two runs' listings to name what changed. For a wrapped program the
  interpreter is found when the command is one of a virtual environment (its
  ``bin/``, or a script whose ``#!`` names one).
- ``executable``: a wrapped program's size and mtime (a rebuilt binary).
- ``config``: each config file the app declared (``rage.install(config_files=...)``, ``rage
  run --config-file``): its size, mtime and a 32-bit keyed digest of its content.
"""

from __future__ import annotations

import os

from rage.record.context import FINGERPRINT as FIELD
from rage.record.context import FINGERPRINT_SCHEMA as SCHEMA

__all__ = ["FIELD", "SCHEMA", "listing", "read"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any


def read(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A run's fingerprint from its meta (``{}`` when it has none or not one rage wrote)."""
    fp = meta.get(FIELD)
    return fp if isinstance(fp, dict) and fp.get("schema") == SCHEMA else {}


def listing(cache: str, lid: str | None) -> dict[str, str] | None:
    """A kept listing: distribution name (normalised) -> version; None if it is gone."""
    if not lid or not all(c in "0123456789abcdef" for c in lid):
        return None
    from rage.fsutil import read_own

    raw = read_own(os.path.join(cache, "sites", lid), 8 * 1024 * 1024)
    if raw is None:
        return None
    out = {}
    for line in raw.decode("utf-8", "replace").splitlines():
        name, _, version = line.rpartition("-")
        if name:
            out[name.replace("_", "-").lower()] = version
    return out
