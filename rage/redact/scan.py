"""Where a redaction match may start: trigger literals found with ``bytes.find``.

The combined regex is only tried, anchored, at positions a trigger points to: most log text
holds no trigger at all, and a ``find`` runs at memory speed where a regex scan would crawl.
Every plain trigger costs one pass over the text, the dominant cost of the engine, so the
plan keeps as few of them as it can: token prefixes holding a rare byte (``_``, ``A``, ``J``)
are found by walking that byte's occurrences, and the triggers holding a byte of
:data:`GROUP_BYTES` (``/``, ``-``; ``k``, ``w`` in lower-cased text) by one regex pass per
byte. Where such a byte is too common the plain finds run instead; the starts found are the
same either way (``reference=True`` in :func:`candidate_starts` is what tests compare to).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from rage.redact.patterns import PROMPT_KEY
from rage.redact.regexcache import compiled

# where a match starts relative to its trigger: >= 0 that many bytes before it, IDENT at the
# start of the identifier holding it (`my_token=`), SCHEME at the start of a URL scheme
IDENT = -1
SCHEME = -2
# KEY: as IDENT, for a secret word, but only where a key/value shape can follow: the name is
# followed by a separator (`:`, `=`, `.=`, `,` of a name/value pair, `>` of an XML element)
# or preceded by `--`, `<`, `setenv`; or the word takes its value after a space (`password
# X` in .netrc and SQL, `Bearer X`). Ordinary prose ("token refreshed") costs no match.
KEY = -3
# LINE: as IDENT, and the line's start always (`.pgpass`'s `host:5432:db:user:password`: the
# trigger is not in a name). IDENT and KEY add the line's start only where the name holding
# the trigger can begin the line's `key: value` (after blanks, `- `, a quote): any other
# shape starting there holds a trigger of its own, which adds it
LINE = -4
# SHORT: as IDENT, for a short secret word (`pin`, `pat`) that is the whole name and is
# followed by blanks and a key separator (patterns.SHORT_SPACED); nowhere else
SHORT = -5
# PROMPT: a password prompt's literal (`password for `): the line's start, only where the
# prompt's whole shape stands there (the native scan's line shape, patterns.PROMPT_KEY)
PROMPT = -6
_PROMPT_AT = compiled(PROMPT_KEY + rb"[ \t]*:[ \t]+[^\s\"'\[]")
# its parts: the rest of the name (a closing quote, a `]`), then blanks, then a separator
KEY_NAME = rb"[A-Za-z0-9_.\-]*(?:\\?[\"'])?\]?"
KEY_SEPARATORS = (rb"[:=,>\\]|[.?+!]=|\([\"']", rb"[\"']?(?i:value|val)[\"']?[ \t]*[=:]")
KEY_AFTER = compiled(KEY_NAME + rb"[ \t]*(?:" + b"|".join(KEY_SEPARATORS) + rb")")
# the shapes where a secret word takes its value after a blank, not a separator: `Bearer X`
# (a token of 8 or more), SQL's `PASSWORD 'x'`, and .netrc's `password X` alone on its line
# or after `login u` (the "bearer", "forced-sql" and "forced-netrc" forms of
# rage.redact.patterns). Prose ("password reset for", "bearer of bad news") is none of them.
# Sources of both scans (rage.redact.native compiles the same expressions).
SPACED_AT = (rb"(?i:bearer)[ \t]+[A-Za-z0-9._~+/\-]{8}",
             rb"(?i:password)[ \t]*=?[ \t]*[\"']")
NETRC_WORDS = (b"password", b"passwd")
NETRC_BEFORE = (rb"^[ \t]*", rb"(?:^|[ \t])(?:login|account)[ \t]+[^ \t\r\n\f\v]+[ \t]+")
_SPACED = compiled(b"|".join(SPACED_AT))
_NETRC_LINE = compiled(b"(?m)(?:" + b"|".join(NETRC_BEFORE) + rb")\Z")
KEY_BEFORE = (b"--", b"<", b"setenv ", b"setenv\t", b"set -x ", b"set -gx ")
# a long option spelled with one dash after a blank (`-storepass X`: keytool, influx, x11vnc);
# not any dash, which would make every date (`2026-12-02`) a place to look for a key
DASH_LEADS = (b" -", b"\t-")
IDENT_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
NAME_REACH = 66  # how far back from a trigger run_starts looks for the start of its name
_KEY_OPENERS = frozenset(b"\"'<")  # before a name, where a key/value form starts (patterns)
_LINE_KEY_LEAD = compiled(rb"[ \t]*(?:- )?[\"']?")  # before the name of the "line" form
_SCHEME_RUN = compiled(rb"[A-Za-z][A-Za-z0-9+.\-]{0,30}\Z")

NEEDS_NORMALIZING, NEEDS_MULTILINE, NEEDS_DUMPS = 1, 2, 4  # what the native scan says of a
# region, or'ed (NEEDS_DUMPS: a line may be a hex dump's, rage.redact.hexdump)
Plan = tuple[tuple[bytes, tuple[int, ...]], ...]
# bytes whose triggers are found together, by one regex: `re` runs through the text to each
# occurrence of the byte at memory speed and checks the triggers around it with lookarounds,
# one pass where each trigger would cost its own. Case-sensitive triggers: paths (`/home/`)
# and token prefixes (`sk-`, `glpat-`); secret words, in lower-cased text, by a letter each
# holds (`k`: token, key, cookie; `w`: passw, pwd; `s`: secret, session, signature, salt,
# dsn; `a`: auth, bearer, credential), where the bytes next to it turn most occurrences away
GROUP_BYTES = b"/-"
GROUP_BYTES_CI = b"kwsa"
# a plain find covers about this many bytes in the time a group's regex spends on one
# occurrence of its byte: past one occurrence per _GROUP_COST / (number of triggers) bytes
# the plain finds are cheaper and run instead
_GROUP_COST = 100
_SAMPLE = 64 * 1024  # the density is judged on the start of the text


class Group:
    """Triggers holding one byte, found through it (see :data:`GROUP_BYTES`); a plain
    class, never changed once made (see :class:`ScanPlan`)."""

    __slots__ = ("byte", "members", "plan", "regex")

    def __init__(self, byte: int, regex: re.Pattern[bytes],
                 members: tuple[tuple[bytes, int, tuple[int, ...]], ...], plan: Plan) -> None:
        self.byte = byte
        self.regex = regex
        self.members = members  # trigger, index of byte, modes
        self.plan = plan  # the same triggers, for plain finds where the byte is too common

    def too_dense(self, hay: bytes) -> bool:
        n = min(len(hay), _SAMPLE)
        return hay.count(self.byte, 0, n) * _GROUP_COST > n * len(self.members)
# an anchor byte: (bucket offset, bucket byte -> ((literal, index of the anchor in it), ...))
Anchor = tuple[int, dict[int, tuple[tuple[bytes, int], ...]]]
ANCHOR_BYTES = b"_AJ"  # bytes rare enough in logs to walk every occurrence of
# past one occurrence per this many bytes of text an anchor is not rare here: the walk stops
# and the plain finds run instead (the walk finds each occurrence with memchr, so a rare
# anchor costs next to nothing, where a plain find costs a full pass per trigger)
_ANCHOR_DENSITY = 512
_URL_SPAN = 1024 + 3  # the longest userinfo URL_CREDENTIALS takes, plus "://"


class ScanPlan:
    """What to search for: plain triggers (``cs`` as they are, ``ci`` in lower-cased text),
    anchored literals walked from one byte each, and URL credentials found from their ``@``.
    ``fallback`` holds the plain triggers that replace an anchor where it is too common;
    ``groups`` and ``ci_groups`` find more plain triggers a byte at a time.

    A plain class, as the engine's other plans (Group, rage.redact.catalogue.Compiled,
    rage.redact.formats.SecretFormat), each made once and never changed: defining them as
    frozen dataclasses (their methods written and compiled from source at import) cost
    every report ~14M instructions, 3% of a small one."""

    __slots__ = ("anchors", "ci", "ci_groups", "cs", "fallback", "format_groups", "formats",
                 "groups", "names_ci", "names_cs", "native", "url_at")

    def __init__(self, *, cs: Plan, ci: Plan, anchors: dict[int, Anchor],
                 fallback: dict[int, Plan], url_at: bool, groups: tuple[Group, ...] = (),
                 ci_groups: tuple[Group, ...] = (), native: Any = None,
                 names_cs: tuple[bytes, ...] = (), names_ci: tuple[bytes, ...] = (),
                 formats: Plan = (), format_groups: tuple[Group, ...] = ()) -> None:
        self.cs = cs
        self.ci = ci
        self.anchors = anchors
        self.fallback = fallback
        self.url_at = url_at
        self.groups = groups
        self.ci_groups = ci_groups
        self.native = native  # a rage.redact.native.Native, when Hyperscan is installed
        # user, host and home names (as they are, and in lower-cased text): their starts
        # are reported apart (``names_only`` of candidate_starts)
        self.names_cs = names_cs
        self.names_ci = names_ci
        # the catalogue's prefixes not walked from an anchor (those of ``anchors`` and
        # ``fallback`` are the catalogue's too): their starts are reported apart
        # (``formats_only`` of candidate_starts)
        self.formats = formats
        self.format_groups = format_groups


def scan_plan(triggers: dict[bytes, set[int]]) -> Plan:
    """Drop a trigger when a shorter one that starts it yields the same starts."""
    keep = {
        t: modes for t, modes in triggers.items()
        if not any(t[:j] in triggers and modes <= triggers[t[:j]] for j in range(1, len(t)))
    }
    return tuple((t, tuple(sorted(m))) for t, m in keep.items())


def group_plan(plan: Plan, group_bytes: bytes) -> tuple[Plan, tuple[Group, ...]]:
    """Split ``plan`` into the triggers left to plain finds and the groups that find the
    others through one of ``group_bytes``."""
    rest: list[tuple[bytes, tuple[int, ...]]] = []
    members: dict[int, list[tuple[bytes, int, tuple[int, ...]]]] = {}
    for t, modes in plan:
        c = next((c for c in group_bytes if c in t), None)
        if c is None:
            rest.append((t, modes))
        else:
            members.setdefault(c, []).append((t, t.index(c), modes))
    groups: list[Group] = []
    for c, ms in members.items():
        alts = [(b"(?<=" + re.escape(t[:k + 1]) + b")" if k else b"")
                + (b"(?=" + re.escape(t[k + 1:]) + b")" if k + 1 < len(t) else b"")
                for t, k, _modes in ms]
        # the byte first, so that `re` skips to it; the lookarounds consume nothing more. A
        # class of the bytes next to it in the triggers turns most occurrences away at once
        # (the digit before the `-` of a date, the `u` after the `/` of `/usr`)
        regex = re.escape(bytes([c]))
        if all(alts):
            if all(k for _t, k, _m in ms):
                regex += b"(?<=[" + _byte_class({t[k - 1] for t, k, _m in ms}) + b"].)"
            elif all(k + 1 < len(t) for t, k, _m in ms):
                regex += b"(?=[" + _byte_class({t[k + 1] for t, k, _m in ms}) + b"])"
            regex += b"(?:" + b"|".join(alts) + b")"
        groups.append(Group(byte=c, regex=compiled(regex), members=tuple(ms),
                            plan=tuple((t, modes) for t, _k, modes in ms)))
    return tuple(rest), tuple(groups)


def _byte_class(bs: set[int]) -> bytes:
    return b"".join(re.escape(bytes([b])) for b in sorted(bs))


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


def candidate_starts(region: bytes, plan: ScanPlan, *, reference: bool = False,
                     found: dict[bytes, list[int]] | None = None,
                     names_only: set[int] | None = None,
                     formats_only: set[int] | None = None,
                     dirty: list[bool] | None = None,
                     multiline: list[bool] | None = None,
                     dumps: list[bool] | None = None) -> list[int]:
    """Sorted positions in ``region`` where a match may start.

    ``reference`` searches every plain trigger and never an anchor: slower, the same
    result; it is what the tests hold the fast path to. When the one Hyperscan pass runs
    (:class:`rage.redact.native.Native`), ``found`` gets the positions of the searched
    formats' prefixes (see :func:`rage.redact.catalogue.search_starts`) and a ``b""`` key
    to say so, ``names_only`` the starts that only a name (user, host, home) gave,
    ``formats_only`` those that only a catalogue prefix gave, ``dirty`` a True when the
    region needs normalising (the pure-Python scan leaves that to
    :func:`rage.redact.normalize.needs_normalizing`) and ``multiline`` a True when it holds
    a needle of :mod:`rage.redact.multiline` (the pure-Python scan leaves that to it), and
    ``dumps`` a True when a line may be a hex dump's (the pure-Python scan leaves that to
    :func:`rage.redact.hexdump.present`).
    """
    starts: set[int] = set()
    names: set[int] = set()
    formats: set[int] = set()
    if plan.native is not None and not reference:
        if found is not None and plan.native.searched:
            found[b""] = []
            needs = plan.native.starts(region, starts, found, names, formats)
        else:
            needs = plan.native.starts(region, starts, None, names, formats)
        if needs & NEEDS_NORMALIZING and dirty is not None:
            dirty.append(True)
        if needs & NEEDS_MULTILINE and multiline is not None:
            multiline.append(True)
        if needs & NEEDS_DUMPS and dumps is not None:
            dumps.append(True)
        if plan.url_at:
            _url_starts(region, starts)
        return _merge(starts, names, formats, names_only, formats_only)
    budget = len(region) // _ANCHOR_DENSITY
    fmt_extra: list[Plan] = [plan.formats]
    for c, anchor in plan.anchors.items():
        if reference or not _walk_anchor(region, c, anchor, budget, formats.add):
            fmt_extra.append(plan.fallback[c])
    extra: list[Plan] = []
    for groups, more, into in ((plan.groups, extra, starts),
                               (plan.format_groups, fmt_extra, formats)):
        for g in groups:
            if reference or g.too_dense(region):
                more.append(g.plan)
            else:
                _group_starts(region, region, g, into)
    for p in fmt_extra:
        _find_all(region, region, p, formats)
    if plan.url_at and not reference:
        _url_starts(region, starts)
    elif plan.url_at:
        extra.append(((b"://", (SCHEME,)),))
    low = region.lower() if plan.ci or plan.ci_groups or plan.names_ci else region
    extra_ci: list[Plan] = []
    for g in plan.ci_groups:
        if reference or g.too_dense(low):
            extra_ci.append(g.plan)
        else:
            _group_starts(region, low, g, starts)
    for hay, p in ((region, plan.cs), *((region, e) for e in extra), (low, plan.ci),
                   *((low, e) for e in extra_ci)):
        _find_all(region, hay, p, starts)
    for hay, lits in ((region, plan.names_cs), (low, plan.names_ci)):
        for t in lits:
            names.update(finds(hay, t))
    return _merge(starts, names, formats, names_only, formats_only)


def finds(hay: bytes, needle: bytes) -> Iterator[int]:
    """Every position of ``needle`` in ``hay``, overlapping ones too."""
    i = hay.find(needle)
    while i >= 0:
        yield i
        i = hay.find(needle, i + 1)


# a plan of this many triggers or more is searched in one pass (find_many), not one find each
_MANY = 40


def find_many(hay: bytes, needles: tuple[bytes, ...]) -> dict[bytes, list[int]]:
    """Every position of each of ``needles`` in ``hay`` (overlapping ones too), ascending,
    in one pass: a regular expression of the needles' first bytes as a trie (the regex
    engine skips in C every byte no needle starts with), then, where it matches, the needles
    that start so. One ``find`` per needle reads the whole text once per needle: 413 of the
    catalogue's prefixes took 0.56 s per 2 MB, this 0.03 s."""
    rx, buckets, k = _many(needles)
    out: dict[bytes, list[int]] = {}
    search = rx.search
    pos = 0
    while (m := search(hay, pos)) is not None:
        p = m.start()
        for t in buckets[hay[p:p + k]]:
            if hay.startswith(t, p):
                out.setdefault(t, []).append(p)
        pos = p + 1
    return out


_MANY_CACHE: dict[tuple[bytes, ...], tuple[re.Pattern[bytes], dict[bytes, list[bytes]], int]] = {}


def _many(needles: tuple[bytes, ...]) -> tuple[re.Pattern[bytes], dict[bytes, list[bytes]], int]:
    """The trie expression of ``needles``' first ``k`` bytes (up to 3), the needles by those
    bytes, and ``k``; made once per set of needles."""
    got = _MANY_CACHE.get(needles)
    if got is None:
        k = min(3, *map(len, needles))
        buckets: dict[bytes, list[bytes]] = {}
        for t in dict.fromkeys(needles):
            buckets.setdefault(t[:k], []).append(t)
        got = _MANY_CACHE[needles] = (re.compile(_trie(sorted(buckets), 0)), buckets, k)
    return got


def _trie(heads: list[bytes], depth: int) -> bytes:
    """An expression matching exactly ``heads`` (of one length, sorted), as a trie: each
    alternative starts with its own byte, which the regex engine tests before trying it."""
    if depth == len(heads[0]):
        return b""
    groups: dict[bytes, list[bytes]] = {}
    for h in heads:
        groups.setdefault(h[depth:depth + 1], []).append(h)
    alts = [re.escape(c) + _trie(g, depth + 1) for c, g in groups.items()]
    return alts[0] if len(alts) == 1 else b"(?:" + b"|".join(alts) + b")"


def _find_all(region: bytes, hay: bytes, plan: Plan, starts: set[int]) -> None:
    """The starts of ``plan``'s triggers found in ``hay`` (``region`` or its lower-cased
    copy): with plain finds, or in one pass for a plan of many."""
    where = find_many(hay, tuple(t for t, _ in plan)) if len(plan) >= _MANY else None
    for t, modes in plan:
        at = finds(hay, t) if where is None else where.get(t, ())
        if modes == (0,):  # the common case, kept tight
            starts.update(at)
            continue
        for i in at:
            for mode in modes:
                if mode >= 0:
                    starts.add(i - mode)
                else:
                    run_starts(region, i, mode, starts)


def _merge(starts: set[int], names: set[int], formats: set[int],
           names_only: set[int] | None, formats_only: set[int] | None) -> list[int]:
    """All starts, sorted; ``names_only`` and ``formats_only`` get those that only a name
    or only a catalogue prefix gave (the engine tries only those shapes there: every other
    shape has triggers of its own)."""
    if names and names_only is not None:
        names_only.update(names - starts - formats)
    if formats and formats_only is not None:
        formats_only.update(formats - starts - names)
    return sorted(starts | names | formats)


def _group_starts(region: bytes, hay: bytes, g: Group, starts: set[int]) -> None:
    """Starts for the triggers of a byte group found in ``hay`` (``region`` or its lower-cased
    copy); several triggers may hold the same occurrence."""
    for m in g.regex.finditer(hay):
        j = m.start()
        for t, k, modes in g.members:
            if j >= k and hay.startswith(t, j - k):
                for mode in modes:
                    if mode >= 0:
                        starts.add(j - k - mode)
                    else:
                        run_starts(region, j - k, mode, starts)


def _walk_anchor(region: bytes, c: int, anchor: Anchor, budget: int,
                 add: Callable[[int], None]) -> bool:
    """Add the starts of the anchored literals around each ``c``; False past ``budget``
    occurrences (the starts added so far are real ones: the plain finds add them too)."""
    d, buckets = anchor
    end = len(region)
    find = region.find
    j = find(c)
    while j >= 0:
        budget -= 1
        if budget < 0:
            return False
        k = j + d
        if 0 <= k < end:
            for lit, i in buckets.get(region[k], ()):
                if j >= i and region.startswith(lit, j - i):
                    add(j - i)
        j = find(c, j + 1)
    return True


def _url_starts(region: bytes, starts: set[int]) -> None:
    """URL credentials end with ``@``, far rarer than ``://``: from each ``@``, the nearest
    ``://`` before it on its line (userinfo holds no ``/``, so no earlier one can match)."""
    j = region.find(b"@")
    while j >= 0:
        ls = region.rfind(b"\n", 0, j) + 1
        k = region.rfind(b"://", max(ls, j - _URL_SPAN), j)
        if k >= 0:
            run_starts(region, k, SCHEME, starts)
        j = region.find(b"@", j + 1)


def spaced(region: bytes, i: int) -> bool:
    """A secret word at ``i`` takes its value after a blank (see :data:`SPACED_AT`)."""
    if _SPACED.match(region, i):
        return True
    if not region.startswith(NETRC_WORDS, i):
        return False
    n = i + (6 if region.startswith(b"passwd", i) else 8)
    return region[n:n + 1] in (b" ", b"\t") and _NETRC_LINE.search(
        region, region.rfind(b"\n", 0, i) + 1, i) is not None


def run_starts(region: bytes, i: int, mode: int, starts: set[int]) -> None:
    """Starts for a trigger inside an identifier (``my_token``) or after a URL scheme."""
    if mode == SHORT:
        if (i and region[i - 1] in IDENT_CHARS) or KEY_AFTER.match(region, i) is None:
            return
        mode = IDENT
    if mode == PROMPT:
        if _PROMPT_AT.match(region, i) is not None:
            starts.add(region.rfind(b"\n", 0, i) + 1)
        return
    if mode == KEY and KEY_AFTER.match(region, i) is None and not spaced(region, i):
        seg = region[max(0, i - NAME_REACH):i]
        k = i - (len(seg) - len(seg.rstrip(IDENT_CHARS)))
        if region[k:k + 2] != b"--" and not region[max(0, k - 8):k].endswith(KEY_BEFORE) and (
                not region.startswith(DASH_LEADS, k - 1)):
            return
    ls = region.rfind(b"\n", 0, i) + 1
    if mode == SCHEME:
        m = _SCHEME_RUN.search(region, max(ls, i - 31), i)
        if m is not None:
            starts.add(m.start())  # the leftmost place a scheme can start
        return
    seg = region[max(ls, i - NAME_REACH):i]  # the identifier holding the trigger starts after
    k = i - (len(seg) - len(seg.rstrip(IDENT_CHARS)))
    if mode == LINE or k == ls or region[k - 1] in IDENT_CHARS or _LINE_KEY_LEAD.fullmatch(
            region, ls, k) is not None:
        starts.add(ls)  # `key: value` lines (a name cut at NAME_REACH: maybe)
    if region[k - 1:k] == b"\\" and region[k:k + 1] in (b"r", b"n", b"t"):
        k += 1  # `\r\nX-Api-Key:` in a dump: the name starts after the written-out escape
    starts.add(k)
    if k > ls and region[k - 1] in _KEY_OPENERS:
        starts.add(k - 1)  # a quoted key, an XML element: the forms that start before the name
