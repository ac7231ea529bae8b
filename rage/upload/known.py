"""Is this crash already known to the receiver? Asked before uploading, without telling.

The client computes the bundle's crash signature itself, with the receiver's own algorithm
(:mod:`rage.server.signature`, the one implementation both use), from the bundle it is
about to send, as the receiver would read it. It then asks a rage receiver
(``receiver+https://...`` targets only) about the first :data:`PREFIX` hex digits of the
signature's hash (``GET <base>/api/v1/known/<prefix>``): about one hash in a million shares
them, so the receiver cannot tell which crash, if any, the client has, and it never sees
the signature's text. The answer lists every signature with that prefix (the rest of the
hash, status, fixed_in, count, last seen); the client decides which one, if any, is its
own. Any failure (no answer in 5 s, an old receiver, a refusal) means "not known": the
upload goes on as before.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rage.config import Settings
from rage.versions import version_gt

PREFIX = 5
TIMEOUT_S = 5.0
TEXT_CAP = 64 * 1024  # the tail of each member the receiver's signature reads
MANIFEST_CAP = 1024 * 1024  # a manifest past this is not one a receiver accepts


@dataclass(frozen=True)
class Known:
    """What the receiver knows of this crash."""

    hash: str
    status: str  # open | fixed | regressed ...
    fixed_in: str | None
    count: int
    last_seen: str | None
    upgrade: bool  # fixed in a later version than the one that crashed here

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def local_signature(bundle: Path) -> tuple[str, str, str | None]:
    """(hash, readable text) of the bundle's crash signature, as the receiver computes it,
    and the app version it names: one pass over the bundle (the manifest is its first
    member), the 64 KiB tail of each member the signature reads."""
    from rage.bundle import MANIFEST
    from rage.bundle.capped import read_members
    from rage.server.signature import MEMBERS, compute

    wanted = {MANIFEST, *MEMBERS}
    # (whole manifests: the reader refuses one over MANIFEST_CAP; the members' tails are
    # cut to what the receiver reads below)
    got = read_members(bundle, cap=MANIFEST_CAP, select=lambda name, _size: name in wanted)
    if got[MANIFEST].cut:
        raise ValueError("the manifest is larger than a receiver reads")
    manifest = json.loads(got[MANIFEST].data)
    if not isinstance(manifest, dict):
        raise ValueError("the manifest is not an object")
    sig = compute(manifest, {n: got[n].data[-TEXT_CAP:].decode("utf-8", "replace")
                             for n in MEMBERS if n in got})
    version = manifest.get("app_version")
    return sig.hash, sig.text, version if isinstance(version, str) and version else None


def check(target: str, bundle: Path, settings: Settings) -> Known | None:
    """What the receiver of ``target`` knows of the bundle's crash; None when the target is
    not a rage receiver, the crash is not known, or the receiver could not be asked."""
    from rage.upload import parse_target

    try:
        proto, address = parse_target(target, settings.upload_protocol)
    except Exception:
        return None
    if proto != "receiver" or not address:
        return None
    try:
        sig_hash, _text, version = local_signature(bundle)
    except Exception:  # a bundle rage cannot sign: nothing to ask
        return None
    base = address.rstrip("/").removesuffix("/api/v1/bundles")
    answer = _ask(f"{base}/api/v1/known/{sig_hash[:PREFIX]}",
                  dataclasses.replace(settings, upload_timeout=TIMEOUT_S))
    if answer is None:
        return None
    from rage.server.signature import ALGORITHM_VERSION

    for m in answer.get("matches") or ():
        if not isinstance(m, Mapping) or m.get("suffix") != sig_hash[PREFIX:]:
            continue
        if m.get("algorithm") not in (None, ALGORITHM_VERSION):
            continue
        fixed_in = m.get("fixed_in") if isinstance(m.get("fixed_in"), str) else None
        status = str(m.get("status") or "open")
        return Known(sig_hash, status, fixed_in, int(m.get("count") or 0),
                     m.get("last_seen") if isinstance(m.get("last_seen"), str) else None,
                     upgrade=status == "fixed" and bool(fixed_in) and (
                         version is None or version_gt(fixed_in, version)))
    return None


def _ask(url: str, settings: Settings) -> dict[str, Any] | None:
    from rage.upload.http import HttpClient

    try:
        with HttpClient(settings) as client:
            resp = client.send("GET", url, headers={"Accept": "application/json"})
        data = json.loads(resp.text)
    except Exception:  # not known, as far as this report can tell
        return None
    return data if isinstance(data, dict) else None


def describe(k: Known, my_version: str | None) -> str:
    """One line for the user."""
    if k.upgrade:
        mine = f" (you run {my_version})" if my_version else ""
        return f"this crash is fixed in {k.fixed_in}{mine}: upgrading should fix it"
    seen = f", last on {k.last_seen[:10]}" if k.last_seen else ""
    if k.status == "fixed":
        return (f"this crash was marked fixed in {k.fixed_in}, and happens in your version: "
                "your report tells the maintainers it is back")
    return (f"this crash is already known to the maintainers (reported {k.count} "
            f"time{'s' if k.count != 1 else ''}{seen}); your report adds to it")
