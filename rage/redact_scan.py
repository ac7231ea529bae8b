"""Where a redaction match may start: trigger literals found with ``bytes.find``.

The combined regex is only tried, anchored, at positions a trigger points to: most log text
holds no trigger at all, and a ``find`` runs at memory speed where a regex scan would crawl.
Every trigger costs one pass over the text, the dominant cost of the engine, so the plan
keeps as few of them as it can.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# where a match starts relative to its trigger: >= 0 that many bytes before it, IDENT at the
# start of the identifier holding it (`my_token=`), SCHEME at the start of a URL scheme
IDENT = -1
SCHEME = -2
_IDENT_RUN = re.compile(rb"[A-Za-z0-9_.\-]{0,66}\Z")
_SCHEME_RUN = re.compile(rb"[A-Za-z][A-Za-z0-9+.\-]{0,30}\Z")

Plan = tuple[tuple[bytes, tuple[int, ...]], ...]
# an anchor byte: (bucket offset, bucket byte -> ((literal, index of the anchor in it), ...))
Anchor = tuple[int, dict[int, tuple[tuple[bytes, int], ...]]]
ANCHOR_BYTES = b"_A"  # bytes rare enough in logs to walk every occurrence of
# past this many occurrences per byte of text an anchor is not rare here: plain finds instead
_ANCHOR_DENSITY = 512
_URL_SPAN = 1024 + 3  # the longest userinfo URL_CREDENTIALS takes, plus "://"


@dataclass(frozen=True)
class ScanPlan:
    """What to search for: plain triggers (``cs`` as they are, ``ci`` in lower-cased text),
    anchored literals walked from one byte each, and URL credentials found from their ``@``.
    ``fallback`` holds the plain triggers that replace an anchor where it is too common."""

    cs: Plan
    ci: Plan
    anchors: dict[int, Anchor]
    fallback: dict[int, Plan]
    url_at: bool


def scan_plan(triggers: dict[bytes, set[int]]) -> Plan:
    """Drop a trigger when a shorter one that starts it yields the same starts."""
    keep = {
        t: modes for t, modes in triggers.items()
        if not any(o != t and t.startswith(o) and modes <= triggers[o] for o in triggers)
    }
    return tuple((t, tuple(sorted(m))) for t, m in keep.items())


def anchor_for(literals: tuple[bytes, ...]) -> tuple[int, Anchor] | None:
    """Group literals under one anchor byte they all hold; None when they share none.

    Each occurrence of the byte is checked against the literals whose byte next to the
    anchor (before it, or after it when the anchor is their first byte) matches.
    """
    for c in ANCHOR_BYTES:
        if all(c in lit for lit in literals):
            idx = [lit.index(c) for lit in literals]
            d = -1 if all(i >= 1 for i in idx) else 1
            if d == 1 and not all(i + 1 < len(lit) for i, lit in zip(idx, literals, strict=True)):
                continue
            buckets: dict[int, list[tuple[bytes, int]]] = {}
            for i, lit in zip(idx, literals, strict=True):
                buckets.setdefault(lit[i + d], []).append((lit, i))
            return c, (d, {k: tuple(v) for k, v in buckets.items()})
    return None


def candidate_starts(region: bytes, plan: ScanPlan, *, reference: bool = False) -> list[int]:
    """Sorted positions in ``region`` where a match may start.

    ``reference`` searches every plain trigger and never an anchor: slower, the same
    result; it is what the tests hold the fast path to.
    """
    starts: set[int] = set()
    add = starts.add
    extra: list[Plan] = []
    for c, (d, buckets) in plan.anchors.items():
        if reference or region.count(c) * _ANCHOR_DENSITY > len(region):
            extra.append(plan.fallback[c])
            continue
        j = region.find(c)
        end = len(region)
        while j >= 0:
            k = j + d
            if 0 <= k < end:
                for lit, i in buckets.get(region[k], ()):
                    if j >= i and region.startswith(lit, j - i):
                        add(j - i)
            j = region.find(c, j + 1)
    if plan.url_at and not reference:
        _url_starts(region, starts)
    elif plan.url_at:
        extra.append(((b"://", (SCHEME,)),))
    low = region.lower() if plan.ci else region
    for hay, p in ((region, plan.cs), *((region, e) for e in extra), (low, plan.ci)):
        for t, modes in p:
            i = hay.find(t)
            if i < 0:
                continue
            if modes == (0,):  # the common case, kept tight
                while i >= 0:
                    add(i)
                    i = hay.find(t, i + 1)
                continue
            while i >= 0:
                for mode in modes:
                    if mode >= 0:
                        add(i - mode)
                    else:
                        _run_starts(region, i, mode, starts)
                i = hay.find(t, i + 1)
    return sorted(starts)


def _url_starts(region: bytes, starts: set[int]) -> None:
    """URL credentials end with ``@``, far rarer than ``://``: from each ``@``, the nearest
    ``://`` before it on its line (userinfo holds no ``/``, so no earlier one can match)."""
    j = region.find(b"@")
    while j >= 0:
        ls = region.rfind(b"\n", 0, j) + 1
        k = region.rfind(b"://", max(ls, j - _URL_SPAN), j)
        if k >= 0:
            _run_starts(region, k, SCHEME, starts)
        j = region.find(b"@", j + 1)


def _run_starts(region: bytes, i: int, mode: int, starts: set[int]) -> None:
    """Starts for a trigger inside an identifier (``my_token``) or after a URL scheme."""
    ls = region.rfind(b"\n", 0, i) + 1
    if mode == SCHEME:
        m = _SCHEME_RUN.search(region, max(ls, i - 31), i)
        if m is not None:
            starts.add(m.start())  # the leftmost place a scheme can start
        return
    starts.add(ls)  # `key: value` lines
    m = _IDENT_RUN.search(region, max(ls, i - 66), i)
    k = m.start() if m is not None else i
    starts.add(k)
    if k > ls:
        starts.add(k - 1)  # a quoted key
