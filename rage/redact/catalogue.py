"""The provider format catalogue (:mod:`rage.redact.formats`, data) compiled for the engine.

Each :class:`~rage.redact.formats.SecretFormat` becomes a bytes alternative of the engine's
combined regex, fenced so that a match is not glued to a letter or digit on either side, and
its ``prefixes`` become triggers of the prefilter (:mod:`rage.redact.scan`). Most formats
start with their prefix, so the prefix's position is where the match starts; for the others
(the prefix in the middle, or after context) the engine searches the line holding the
prefix and starts at what it finds (:func:`search_starts`).

An entry the engine cannot use (a regex that does not compile as bytes or matches the empty
string, a prefix shorter than 3 bytes) is left out and listed in :data:`SKIPPED` with the
reason, instead of failing every report. Each regex is compiled when first tried
(:class:`LazyPattern`): most texts hold the prefixes of few formats, and compiling all ~140
cost 20-30 ms of every report; a regex found unusable then never matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from rage.redact import regexcache
from rage.redact.formats import FORMATS, SecretFormat
from rage.redact.regexcache import compiled
from rage.redact.scan import finds

# not glued to a letter or digit on the left, except the `m`/`K` that ends a colour code
# written out as text (`\x1b[32m`, `\u001b[0m` in JSON logs, `\033[1;31m` in source code),
# where the escape itself was never a byte the normaliser could remove
_BEFORE = rb"(?:(?<![A-Za-z0-9])|(?<=[0-9;\[][mK]))"
_AFTER = rb"(?![A-Za-z0-9])"
MIN_PREFIX = 3
_GLOBAL_FLAGS = compiled(rb"\(\?([aiLmsux]+)\)")


class Compiled:
    """One catalogue entry as the engine uses it (a plain class, never changed once made:
    see rage.redact.scan.ScanPlan)."""

    __slots__ = ("at_start", "has_secret", "kind", "prefixes", "regex", "search")

    def __init__(self, *, kind: str, regex: bytes, prefixes: tuple[bytes, ...],
                 at_start: bool, has_secret: bool, search: LazyPattern) -> None:
        self.kind = kind
        # the alternative: fenced; a `secret` group, if any, renamed by the engine
        self.regex = regex
        self.prefixes = prefixes
        self.at_start = at_start  # every match starts with one of the prefixes
        self.has_secret = has_secret  # only the `secret` group is replaced
        self.search = search  # the alternative alone, to search a line (at_start False)


_T = TypeVar("_T", bound=tuple[Any, ...])
SKIPPED: list[tuple[str, str]] = []  # (kind, why): entries the engine left out
_NEVER = compiled(rb"(?!)")


class LazyPattern:
    """``re.compile(source)``, compiled at the first use of ``match`` or ``finditer``, which
    are then the compiled pattern's own methods. Unusable (does not compile, matches the
    empty string): it never matches, and ``kind`` is listed in :data:`SKIPPED`."""

    match: Any
    finditer: Any

    def __init__(self, source: bytes, kind: str) -> None:
        self.source = source
        self.kind = kind

    def __getattr__(self, name: str) -> Any:  # only until the first use
        if name not in ("match", "finditer"):
            raise AttributeError(name)
        try:
            pattern = compiled(self.source)
            if pattern.match(b"") is not None:
                raise re.error("regex matches the empty string")
        except re.error as e:
            SKIPPED.append((self.kind, f"regex unusable: {e}"))
            pattern = _NEVER
        self.match, self.finditer = pattern.match, pattern.finditer
        return getattr(pattern, name)


def _leading(regex: str) -> set[str] | None:
    """The literal texts a match of ``regex`` can start with, or None if unknown."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]

    def walk(items: Any) -> set[str] | None:
        lit = ""
        for pos, (op, av) in enumerate(items):
            if op is c.LITERAL:
                lit += chr(av)
                continue
            if op is c.SUBPATTERN and not lit:
                inner = walk(av[-1])
                return inner
            if op is c.BRANCH and not lit:
                out: set[str] = set()
                for branch in av[1]:
                    got = walk(branch)
                    if got is None:
                        return None
                    out |= got
                return out
            if op is c.AT:
                continue
            if op is c.IN and len(av) <= 8 and all(o is c.LITERAL for o, _v in av):
                # a small class (`[sr]k_live_`): one literal per member
                rest = walk(list(items)[pos + 1:])
                tails = rest if rest is not None else {""}
                return {lit + chr(v) + t for _o, v in av for t in tails}
            break
        return {lit} if lit else None

    try:
        return walk(sre_parse.parse(regex))
    except Exception:
        return None


def _at_start(key: str) -> bool:
    """Does every match of a format start with one of its prefixes (and every literal its
    matches start with begin or extend one)? ``key``: its regex, then its prefixes, each
    after a NUL."""
    regex, *texts = key.split("\0")
    return _starts_known(regex, [p.encode("utf-8") for p in texts])


def _starts_known(regex: str, prefixes: Sequence[bytes]) -> bool:
    lead = _leading(regex)
    return lead is not None and all(
        any(p.startswith(lit.encode()) or lit.encode().startswith(p) for lit in lead)
        for p in prefixes) and all(any(lit.encode().startswith(p) or p.startswith(lit.encode())
                                       for p in prefixes) for lit in lead)


def compile_format(fmt: SecretFormat) -> Compiled | None:
    """The engine's form of ``fmt``; None (and a line in :data:`SKIPPED`) when unusable."""
    try:
        raw = fmt.regex.encode("ascii")
    except UnicodeEncodeError:
        raw = fmt.regex.encode("utf-8")
    prefixes = tuple(p.encode("utf-8") for p in fmt.prefixes if len(p.encode()) >= MIN_PREFIX)
    if not prefixes:
        SKIPPED.append((fmt.kind, "no prefix of 3 bytes or more"))
        return None
    flags = _GLOBAL_FLAGS.match(raw)
    if flags is not None:  # `(?i)x` cannot sit inside an alternation: scope it, `(?i:x)`
        raw = b"(?" + flags[1] + b":" + raw[flags.end():] + b")"
    alt = _BEFORE + b"(?:" + raw + b")" + _AFTER
    # kept with the code (~7M instructions for the catalogue, at every report's start)
    at_start = regexcache.derived(
        _at_start, "\0".join((fmt.regex, *(p.decode("utf-8") for p in prefixes))),
        uses=(_starts_known, _leading)) if "\0" not in fmt.regex else _starts_known(
            fmt.regex, prefixes)
    return Compiled(kind=fmt.kind, regex=alt, prefixes=prefixes, at_start=at_start,
                    has_secret=b"(?P<secret>" in raw, search=LazyPattern(alt, fmt.kind))


def compiled_catalogue() -> tuple[Compiled, ...]:
    """Every usable catalogue entry, in catalogue order (earlier entries win a tie)."""
    SKIPPED.clear()
    out = []
    for fmt in FORMATS:
        c = compile_format(fmt)
        if c is not None:
            out.append(c)
    return tuple(out)


def search_starts(region: bytes, searched: dict[bytes, tuple[_T, ...]],
                  hits: dict[int, list[_T]], found: dict[bytes, list[int]] | None = None
                  ) -> None:
    """Where the formats whose prefix is not where their match starts do start: each line
    holding such a prefix is searched with those formats' regexes (``entry[0]``); ``hits``
    gets start -> the entries found there. ``found``, the positions of every prefix when
    the scan's automaton already found them (marked by a ``b""`` key), saves the finds."""
    known = found is not None and b"" in found
    items: Iterable[tuple[bytes, tuple[_T, ...]]]
    if known and found is not None:
        if len(found) == 1:  # only the marker: the scan found none, as for most strings
            return
        # in searched's order still: the entries found at one start keep their order
        items = [(p, e) for p, e in searched.items() if p in found]
    else:
        items = searched.items()
    for prefix, entries in items:
        where = iter(found.get(prefix, ())) if known and found is not None else finds(
            region, prefix)
        done_to = -1
        for i in where:
            if i >= done_to:
                ls = region.rfind(b"\n", 0, i) + 1
                le = region.find(b"\n", i)
                le = len(region) if le < 0 else le
                for entry in entries:
                    for m in entry[0].finditer(region, ls, le):
                        got = hits.setdefault(m.start(), [])
                        if entry not in got:
                            got.append(entry)
                done_to = le
