"""Every trigger found in one pass by Hyperscan (Vectorscan; the optional ``fast`` extra).

The pure-Python scan (:mod:`rage.redact.scan`) finds each trigger with ``bytes.find`` and
then asks, in Python, whether a secret word stands where a key/value shape can follow.
Here one compiled database finds the literals and, for the secret words, the shapes
themselves (``token=``, ``"token":``, ``--token``, ``<token``, ``setenv TOKEN``, the
``.netrc`` and SQL forms of ``password``, ``Bearer X``): a log full of prose that merely
says "token" or "password" costs no Python at all. The starts are those of the reference
scan (both read the shapes from :mod:`rage.redact.scan`), so the output is the same; the
tests compare both.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

from rage.redact.handlers import HOME_AFTER, HOME_BEFORE
from rage.redact.hexdump import EXPRESSION as DUMP_EXPRESSION
from rage.redact.normalize import TRACE_MARKS
from rage.redact.regexcache import compiled
from rage.redact.scan import (
    DASH_LEADS,
    IDENT,
    IDENT_CHARS,
    KEY,
    KEY_AFTER,
    KEY_BEFORE,
    KEY_NAME,
    KEY_SEPARATORS,
    NAME_REACH,
    NEEDS_DUMPS,
    NEEDS_MULTILINE,
    NEEDS_NORMALIZING,
    NETRC_BEFORE,
    NETRC_WORDS,
    SPACED_AT,
    Plan,
    run_starts,
)

# how a hit becomes starts: (ACTION, offset back from the hit's end, argument)
_ADD = 0  # a start that many bytes before the end (the trigger's own start, or before it)
_MODES = 1  # the reference scan's modes for the trigger (rage.redact.scan)
_FOUND = 2  # a searched format's prefix: its position goes to ``found``
_SHAPED = 3  # a secret word in a key shape: its identifier and line are starts (IDENT)
_NAME = 4  # a user, host or home name: tried against the name alternatives only
_BOUNDED = 5  # a catalogue prefix: a start where it begins a word (see _ALNUM)
_DIRTY = 6  # what normalize() undoes (an escape, a backspace, a redraw, `:\/\/`)
_KEYED = 7  # a secret word followed by a key shape (KEY_AFTER), its start found again
_LEAD = 8  # a secret word in an identifier after a lead (KEY_BEFORE: `--`, `<`, setenv)
_MULTI = 9  # a needle of a multi-line rule (rage.redact.multiline): that pass is needed
_SPACED_KEY = 10  # blanks then a key shape's separator: a secret word's shape, if one is before
_LINE = 11  # a shape whose line is a start (line_shapes: the prompt of a password)
_DUMP = 12  # a line that may be a hex dump's (rage.redact.hexdump)
_NEAR = 13  # a shape of rage.redact.nearby: the multi-line pass, if its test says it may change
_SOM = -1  # offset: the start of the match as Hyperscan reports it (SOM_LEFTMOST)


def available() -> bool:
    """Hyperscan is installed, works, and RAGE_NATIVE_SCAN is not 0 (tests compare both
    scans)."""
    if os.environ.get("RAGE_NATIVE_SCAN") == "0" or _BROKEN:
        return False
    return importlib.util.find_spec("hyperscan") is not None


def scan_status() -> str:
    """Which scan redaction uses here, and why, for ``rage --version``: ``hyperscan X.Y.Z``
    once a finder compiled and scanned, else ``pure Python`` with the reason."""
    if os.environ.get("RAGE_NATIVE_SCAN") == "0":
        return "pure Python (RAGE_NATIVE_SCAN=0)"
    if importlib.util.find_spec("hyperscan") is None:
        return "pure Python (hyperscan is not installed for this Python)"
    finder = find_all([b"token="])
    if finder is None or finder(b"a token=x") != {0: [2]}:
        return f"pure Python (hyperscan does not work here: {_BROKEN[0] if _BROKEN else '?'})"
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"hyperscan {version('hyperscan')}"
    except PackageNotFoundError:
        return "hyperscan"


Finder = Callable[[bytes], dict[int, list[int]]]  # buffer -> needle index -> its positions
_BROKEN: list[str] = []  # why Hyperscan failed in this process, once it has


def native_scan(cs: Plan, ci: Plan, searched: tuple[bytes, ...] = (), **kw: Any
                ) -> Native | None:
    """:class:`Native` when Hyperscan is there and works; None (the pure-Python scan,
    the same output) otherwise. An install that imports but fails to compile or scan
    (a wheel for another CPU, a broken build) is said once on stderr, not raised: a
    report must not fail for want of its fast path."""
    if not available():
        return None
    try:
        native = Native(cs, ci, searched, **kw)
        native.starts(b"token=x\n", set())  # compiled and able to scan
        return native
    except Exception as e:  # any failure of the optional extension
        _broken(e)
        return None


def _broken(e: BaseException) -> None:
    if not _BROKEN:
        _BROKEN.append(f"{type(e).__name__}: {e}")
        sys.stderr.write("rage: warning: the fast redaction scan (hyperscan) does not work "
                         f"here ({_BROKEN[0][:200]}); redacting with the pure-Python scan, "
                         "which is slower and finds the same\n")


_ALNUM = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_ESCAPED = tuple(bytes([c]) if c in _ALNUM else b"\\x%02x" % c for c in range(256))


def _blanks_before(region: bytes, to: int, separator: int) -> int:
    """Where the blanks start before the key separator ending at ``to``: one of
    :data:`KEY_SEPARATORS` (``separator``: 0, `=`, `.=`, `!=`, `("`...; 1, `value =`...), after
    blanks.
    Found by walking back rather than by Hyperscan's start of match, whose tracking from
    every blank of a text doubled its scan."""
    j = to - 1  # the separator's last byte
    if separator == 0:
        # `.=` `?=` `+=` `!=`, and the `("` of a constructor
        if j and ((region[j] == 61 and region[j - 1] in b".?+!")
                  or (region[j] in b"\"'" and region[j - 1] == 40)):
            j -= 1
    else:  # `["']?(value|val)["']?[ \t]*[=:]`
        while j and region[j - 1] in b" \t":
            j -= 1
        if j and region[j - 1] in b"\"'":
            j -= 1
        j -= 5 if region[max(0, j - 5):j].lower() == b"value" else 3
        if j and region[j - 1] in b"\"'":
            j -= 1
    while j and region[j - 1] in b" \t":
        j -= 1
    return j


def _not_ending_with(p: bytes) -> list[bytes]:
    """Expressions for what precedes a match when the text before it does not end with
    ``p``: fewer bytes than ``p`` since the start, or a byte of ``p`` differs."""
    out = []
    for k in range(1, len(p) + 1):
        tail = escape(p[len(p) - k + 1:])  # the last k - 1 bytes of p are there...
        out.append(b"^" + tail)  # ...and nothing before them
        out.append(b"[^" + escape(p[len(p) - k:len(p) - k + 1]) + b"]" + tail)  # ...or not p's
    return out


def escape(lit: bytes) -> bytes:
    """``lit`` as a Hyperscan expression that matches exactly it. (An engine's build escapes
    ~950 literals: a table, not a format per byte, which took 20 ms of each report.)"""
    if lit.isalnum():  # ASCII letters and digits only, for bytes
        return lit
    return b"".join([_ESCAPED[c] for c in lit])


# a catalogue format's prefix starts a match only where it begins a word
# (rage.redact.catalogue._BEFORE: not after a letter or digit of _ALNUM, but after the `m` or
# `K` that ends a terminal escape, whose bytes before it are these). Tested
# in the hit, not in the expression: a class before each of ~250 literals makes the database
# take 0.3 s to compile where the bare literals take 0.05 s
_ESCAPE_END = frozenset(b"0123456789;[")
_WORD_START = rb"(?:^|[^A-Za-z0-9]|[0-9;\[][mK])"  # the test in the hit, as an expression
_LONGEST = 16  # longer than any secret word
_NAME_BYTES = frozenset(IDENT_CHARS + b"\"'\\]")  # what a key's name holds, quoted or not
# rage.redact.normalize.needs_normalizing, found in the same pass: the text is matched as
# the terminal showed it, so where one is, the region is normalised and scanned again
_DIRTY_EXPRESSIONS = (rb"\x1b", rb"\x08", rb"\r[^\n]", escape(b":\\/\\/"),
                      *(escape(m) for m in TRACE_MARKS))


class Database:
    """Expressions and what each hit means, compiled into one Hyperscan block database."""

    def __init__(self) -> None:
        self._index: dict[tuple[bytes, int], int] = {}
        self.expressions: list[bytes] = []
        self.flags: list[int] = []
        self.actions: list[list[tuple[int, int, Any]]] = []
        self.db: Any = None
        self.guard = _Guard()

    def add(self, expr: bytes, flags: int, action: tuple[int, int, Any]) -> None:
        key = (expr, flags)
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.expressions)
            self.expressions.append(expr)
            self.flags.append(flags)
            self.actions.append([])
        if action not in self.actions[i]:
            self.actions[i].append(action)

    def compile(self, *, stored: bool = False) -> None:
        """Compile, or take the database compiled for the same expressions before (every
        Redactor of a process builds the same one: 25-50 ms each). ``stored``: also from
        and to the disk (:mod:`rage.redact.dbcache`), for the next process."""
        import hyperscan  # type: ignore[import-not-found, unused-ignore]

        if not self.expressions:
            return
        key = (tuple(self.expressions), tuple(self.flags))
        got = _COMPILED.get(key)
        if got is None:
            from rage.redact import dbcache

            db = dbcache.load(hyperscan, self.expressions, self.flags) if stored else None
            if db is None:
                db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
                db.compile(expressions=self.expressions,
                           ids=list(range(len(self.expressions))), flags=self.flags)
                if stored:
                    dbcache.store(hyperscan, self.expressions, self.flags, db)
            if len(_COMPILED) >= 8:
                _COMPILED.pop(next(iter(_COMPILED)))
            got = _COMPILED[key] = (db, _Guard())
        self.db, self.guard = got


class _Guard:
    """The lock of a database's one scratch space (a report redacts the run while a thread
    runs the collectors), made anew in a forked child: a lock held by another thread at
    the fork would stay held there forever."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        _GUARDS.add(self)


def _after_fork() -> None:
    for g in list(_GUARDS):
        g.lock = threading.Lock()


_GUARDS: weakref.WeakSet[_Guard] = weakref.WeakSet()
os.register_at_fork(after_in_child=_after_fork)

# compiled databases, each with the guard of its one scratch space (a report redacts the
# run while a thread runs the collectors)
_COMPILED: dict[tuple[tuple[bytes, ...], tuple[int, ...]], tuple[Any, _Guard]] = {}


class Native:
    """The starts of :func:`rage.redact.scan.candidate_starts` in one Hyperscan pass.

    ``cs`` and ``ci`` are the case-sensitive and case-insensitive plans of the reference
    scan; ``searched`` the prefixes of the formats searched along their line
    (:func:`rage.redact.catalogue.search_starts`), whose positions :meth:`starts` reports.
    ``stored``: the database may come from, and go to, the disk (:mod:`rage.redact.dbcache`):
    the engine says so when no registered literal is in it. ``names_after``: (name, prefix)
    where the prefix's start matches ``prefix + name`` whole (the user's name and their
    home's parent, ``/home/``), so the name needs no start of its own there.
    ``line_shapes``: expressions of one line each whose line's start is a start (the
    reference scan finds those lines from literals, in mode LINE).
    """

    def __init__(self, cs: Plan, ci: Plan, searched: tuple[bytes, ...] = (), *,
                 formats: Plan = (), names_cs: tuple[bytes, ...] = (),
                 names_ci: tuple[bytes, ...] = (), multiline: tuple[bytes, ...] = (),
                 names_after: tuple[tuple[bytes, bytes], ...] = (),
                 line_shapes: tuple[bytes, ...] = (), stored: bool = False,
                 multiline_shapes: tuple[tuple[bytes, Callable[[bytes, int], bool]], ...] = ()
                 ) -> None:
        import hyperscan

        caseless, som = hyperscan.HS_FLAG_CASELESS, hyperscan.HS_FLAG_SOM_LEFTMOST
        line_mode = hyperscan.HS_FLAG_MULTILINE
        d = Database()
        spaced_done = False
        key_words: list[bytes] = []  # secret words made of name bytes: their shapes
        for t, modes in cs:
            if modes != (0,):
                d.add(escape(t), 0, (_MODES, len(t), modes))
            else:
                d.add(escape(t), 0, (_ADD, len(t), None))
        for t, modes in ci:
            for mode in modes:
                if mode == KEY and t.translate(None, IDENT_CHARS) == b"":
                    key_words.append(t.lower())
                else:
                    d.add(escape(t), caseless, (_ADD, len(t), None) if mode == 0
                          else (_MODES, len(t), (mode,)))
            if KEY in modes and not spaced_done and any(
                    w.startswith(t) for w in (*NETRC_WORDS, b"bearer")):
                spaced_done = True  # once: `pass` and `passw` would add the same
                for expr in SPACED_AT:
                    d.add(expr, som, (_SHAPED, _SOM, None))
                for w in NETRC_WORDS:
                    for before in NETRC_BEFORE:
                        d.add(before + w + b"[ \\t]", line_mode, (_SHAPED, len(w) + 1, None))
        self._words = tuple(sorted(set(key_words)))
        self._shortest = min(map(len, self._words), default=1)
        if self._words:
            words = b"(?i:" + b"|".join(escape(w) for w in self._words) + b")"
            # a word and what follows it in a key shape (KEY_AFTER), no start of match
            # (tracking it doubles the cost of a scan of prose); the hit's start is found
            # again on its line by _keyed, the same shape ending where the hit ends. Two
            # ways, which together end where KEY_AFTER after a word does: the word with no
            # blank before the separator (`token=`, `"token":`), and blanks before a
            # separator (`token = x`), found without the word. Prose puts a blank after
            # nearly every word, so a word followed by `[ \t]*` kept Hyperscan busy at each
            # (a third of the scan of a log full of `token`, `key`, `session`); a blank
            # before a separator is rare, and only there does Python look for a word
            seps = b"|".join(KEY_SEPARATORS)
            d.add(words + KEY_NAME + b"(?:" + seps + b")", 0, (_KEYED, 0, None))
            for i, sep in enumerate(KEY_SEPARATORS):  # no start of match: see _blanks_before
                d.add(b"[ \\t](?:" + sep + b")", 0, (_SPACED_KEY, 0, i))
            # a word in an identifier right after `--`, `<`, `setenv `...: each lead its own
            # expression (Vectorscan 5.4.12 misses `--token` after 39 blanks when the leads
            # are one alternation: `(?:--|<|set -g?x )[A-Za-z0-9_.\-]*token`); not the bare
            # leads, which would call Python at every `<` of an HTML log and every `--`
            for lead in KEY_BEFORE:
                d.add(escape(lead) + rb"[A-Za-z0-9_.\-]*" + words, 0, (_LEAD, 0, None))
            # one dash after a blank (DASH_LEADS, of one length: one expression); not `--`,
            # found above
            d.add(b"(?:" + b"|".join(escape(lead) for lead in DASH_LEADS)
                  + rb")(?:[A-Za-z0-9_.][A-Za-z0-9_.\-]*)?" + words, 0, (_LEAD, 0, None))
            # and `--` whose second dash starts a word (`--pat`); not one dash before a word,
            # which made every date (`2026-12-02`) a place to look for one
            for w in self._words:
                if w.startswith(b"-"):
                    d.add(b"-(?i:" + escape(w) + b")", 0, (_LEAD, 0, None))
        word = b"(?i:" + b"|".join(re.escape(w) for w in self._words) + b")"
        self._keyed = compiled(b"(?:" + word + KEY_AFTER.pattern + b")\\Z")
        self._word = compiled(word)
        for p in searched:
            d.add(escape(p), 0, (_FOUND, len(p), p))
        for t, modes in formats:  # the catalogue's boundary: `cio` in `asyncio` is no start
            if modes != (0,):
                d.add(escape(t), 0, (_MODES, len(t), modes))
            elif t.isalnum() and t.islower():
                # a prefix that prose holds inside its words (`cio` of every `asyncio` in a
                # Python traceback, `pat`): the boundary in the expression, where a bare
                # literal called Python at each of them (most prefixes are not words: `ghp_`)
                d.add(_WORD_START + escape(t), 0, (_BOUNDED, len(t), None))
            else:
                d.add(escape(t), 0, (_BOUNDED, len(t), None))
        for expr in _DIRTY_EXPRESSIONS:
            d.add(expr, 0, (_DIRTY, 0, None))
        for t in multiline:  # only whether one is there: one hit a scan, not one a needle
            d.add(escape(t), hyperscan.HS_FLAG_SINGLEMATCH, (_MULTI, 0, None))
        for expr, test in multiline_shapes:  # (rage.redact.nearby: a word, then a token)
            d.add(expr, 0, (_NEAR, 0, test))

        d.add(DUMP_EXPRESSION, line_mode, (_DUMP, 0, None))
        for expr in line_shapes:  # `(?m:^)` is Hyperscan's `^` in multi-line mode
            d.add(expr.replace(b"(?m:^)", b"^"), line_mode, (_LINE, 0, None))
        after = dict(names_after)
        for flags, lits in ((0, names_cs), (caseless, names_ci)):
            for t in lits:
                parent = after.get(t) if not flags else None
                if parent is None:
                    d.add(escape(t), flags, (_NAME, len(t), None))
                    continue
                # the user's name, but not where it ends their own home (`/home/alice/`),
                # which the start of `/home/` matches whole: one hit per path, not two (a
                # log of tracebacks holds thousands). Still where that match cannot take
                # it: a name byte before the home, or after the name
                for context in _not_ending_with(parent):
                    d.add(context + escape(t), 0, (_NAME, len(t), None))
                d.add(b"[" + HOME_BEFORE + b"]" + escape(parent + t), 0, (_NAME, len(t), None))
                d.add(escape(t) + b"[" + HOME_AFTER + b"]", 0, (_NAME, len(t) + 1, None))
        d.compile(stored=stored)
        self.searched = bool(searched)
        self._db, self._guard = d.db, d.guard
        self._actions = [tuple(a) for a in d.actions]

    def _keyed_start(self, region: bytes, to: int, starts: set[int], floor: int = 0) -> None:
        """The starts of the key shape ending at ``to``: those of every secret word in its
        name, as the reference scan gives each (a name longer than run_starts looks back
        has more than one). The name is found by a word of it, searched near ``to`` first:
        names are short, lines not. ``floor``: no shape starts before it."""
        ls = max(region.rfind(b"\n", 0, to) + 1, floor)
        m = None
        for back in (96, 1024, to):  # a word, its name and separator: ~30 bytes, mostly
            m = self._keyed.search(region, max(ls, to - back), to)
            if m is not None or to - back <= ls:
                break
        if m is None:
            return
        a = b = m.start()
        while a > ls and region[a - 1] in IDENT_CHARS:
            a -= 1
        while b < to and region[b] in IDENT_CHARS:
            b += 1
        if b - a <= NAME_REACH:  # every word of the name gives the same starts
            run_starts(region, m.start(), IDENT, starts)
            return
        name = region[a:b].lower()
        for w in self._words:
            i = name.find(w)
            while i >= 0:
                run_starts(region, a + i, KEY, starts)
                i = name.find(w, i + 1)

    def _spaced_key_start(self, region: bytes, blanks: int, to: int, starts: set[int]) -> None:
        """Blanks from ``blanks``, then a separator ending at ``to``: a key shape if a secret
        word is in the name before the blanks. A shape starts no earlier than the run of name
        bytes (identifier, quote, ``]``, backslash) the blanks follow; none there, none."""
        k = blanks
        while k and region[k - 1] in _NAME_BYTES:
            k -= 1
        if blanks - k >= self._shortest:
            self._name_start(region, blanks, to, starts, floor=k)

    def _name_start(self, region: bytes, end: int, to: int, starts: set[int],
                    floor: int = 0) -> None:
        """:meth:`_keyed_start` for the shape ending at ``to`` whose separator, or the
        blanks before it, begin at ``end``. Mostly the name is right before ``end`` (after
        its closing quote or ``]``), short, and holds a secret word: then its starts are
        those of any word in it, with no search for one. Else (a `value` form, a long name)
        as :meth:`_keyed_start` finds them."""
        ls = max(region.rfind(b"\n", 0, end) + 1, floor)
        e = end
        if e > ls and region[e - 1] == 93:  # `]`
            e -= 1
        if e > ls and region[e - 1] in b"\"'":
            e -= 1
            if e > ls and region[e - 1] == 92:  # a backslash before the quote
                e -= 1
        # the name's bytes before ``e``, found by one rstrip of a byte more than it may hold
        # (a longer name fills the whole segment: not taken here)
        seg = region[max(ls, e - NAME_REACH - 1):e]
        a = e - (len(seg) - len(seg.rstrip(IDENT_CHARS)))
        if 0 < e - a <= NAME_REACH and self._word.search(region, a, e) is not None:
            run_starts(region, a, IDENT, starts)
        else:
            self._keyed_start(region, to, starts, floor)

    def _lead_start(self, region: bytes, to: int, starts: set[int]) -> None:
        """The word ending at ``to`` after a lead: the KEY test of the reference scan
        decides (the lead must start, or stand right before, the identifier holding it)."""
        tail = region[max(0, to - _LONGEST):to].lower()
        for w in self._words:
            if tail.endswith(w):
                run_starts(region, to - len(w), KEY, starts)

    def starts(self, region: bytes, starts: set[int],
               found: dict[bytes, list[int]] | None = None,
               names: set[int] | None = None, formats: set[int] | None = None) -> int:
        """Add the starts in ``region``; ``found`` gets each searched prefix's positions,
        ``names`` the starts of the names (user, host, home), ``formats`` those of the
        catalogue's prefixes (into ``starts`` when None). Returns :data:`NEEDS_NORMALIZING`
        if ``region`` needs normalising (:func:`rage.redact.normalize.needs_normalizing`),
        or'ed with :data:`NEEDS_MULTILINE` if it holds a needle of the multi-line rules and
        :data:`NEEDS_DUMPS` if a line may be a hex dump's."""
        if self._db is None:
            return NEEDS_MULTILINE
        dirty: list[bool] = []
        multi: list[bool] = []
        dumps: list[bool] = []
        # the end of the last line each _NEAR test was asked of: one line may hold both
        # shapes, and a `no` from one test (`$1$-pass X`: no option) says nothing of another
        asked: dict[Any, int] = {}
        add = starts.add
        add_name = add if names is None else names.add
        add_format = add if formats is None else formats.add
        actions = self._actions
        alnum, escape_end = _ALNUM, _ESCAPE_END

        def hit(idx: int, frm: int, to: int, _flags: int, _ctx: Any) -> None:
            for kind, back, arg in actions[idx]:
                i = frm if back == _SOM else to - back
                if kind == _ADD:
                    add(i)
                elif kind == _BOUNDED:
                    c = region[i - 1] if i else 0
                    if c not in alnum or (c in b"mK" and i >= 2 and region[i - 2] in escape_end):
                        add_format(i)
                elif kind == _NAME:
                    add_name(i)
                elif kind == _DIRTY:
                    if not dirty:
                        dirty.append(True)
                elif kind == _MULTI:
                    if not multi:
                        multi.append(True)
                elif kind == _DUMP:
                    if not dumps:
                        dumps.append(True)
                elif kind == _NEAR:  # a line asked once (a match ends at each token of it)
                    if not multi and to > asked.get(arg, -1):
                        nl = region.find(b"\n", to - 1)
                        asked[arg] = len(region) if nl < 0 else nl
                        if arg(region, to):
                            multi.append(True)
                elif kind == _SHAPED:
                    run_starts(region, i, IDENT, starts)
                elif kind == _KEYED:  # no blank before its separator (or a `value` form's)
                    self._name_start(region, _blanks_before(region, to, 0), to, starts)
                elif kind == _SPACED_KEY:
                    self._spaced_key_start(region, _blanks_before(region, to, arg), to, starts)
                elif kind == _LEAD:
                    self._lead_start(region, to, starts)
                elif kind == _LINE:  # the shape holds no newline: its line ends at ``to``
                    add(region.rfind(b"\n", 0, to) + 1)
                elif kind == _FOUND:
                    if found is not None:
                        found.setdefault(arg, []).append(i)
                else:
                    for m in arg:
                        if m >= 0:
                            add(i - m)
                        else:
                            run_starts(region, i, m, starts)

        with self._guard.lock:
            self._db.scan(region, match_event_handler=hit)
        return ((NEEDS_NORMALIZING if dirty else 0) | (NEEDS_MULTILINE if multi else 0)
                | (NEEDS_DUMPS if dumps else 0))


_FINDERS: dict[tuple[tuple[bytes, ...], bool], Finder | None] = {}


def finder(needles: tuple[bytes, ...]) -> Finder | None:
    """:func:`find_all` of ``needles``, the engine's own fixed needles (never a secret: the
    database is stored, see :mod:`rage.redact.dbcache`), compiled once per process and
    kept on disk for the next one (the multi-line openers took 20-28 ms to compile, at
    the start of every report, before its workers could start); None without Hyperscan
    (or with RAGE_NATIVE_SCAN=0, which tests and benchmarks switch within a process)."""
    on = available()
    if (needles, on) not in _FINDERS:
        _FINDERS[needles, on] = find_all(list(needles), stored=True) if on else None
    return _FINDERS[needles, on]


def line_finder(expressions: tuple[bytes, ...]) -> Callable[[bytes], list[int]] | None:
    """Where each line holding a match of one of ``expressions`` (the engine's own, never
    a secret; none crosses a line) ends: ``buf`` -> those match ends, ascending, one or
    more a line. None without Hyperscan."""
    on = available()
    if (expressions, on) not in _LINE_FINDERS:
        _LINE_FINDERS[expressions, on] = _line_finder(expressions) if on else None
    return _LINE_FINDERS[expressions, on]


def _line_finder(expressions: tuple[bytes, ...]) -> Callable[[bytes], list[int]] | None:
    d = Database()
    for expr in expressions:
        d.add(expr, 0, (_ADD, 0, None))
    try:
        d.compile(stored=True)
    except Exception as e:  # as in native_scan
        _broken(e)
        return None
    db, guard = d.db, d.guard

    def find(buf: bytes) -> list[int]:
        ends: list[int] = []
        last = [-1]  # the end of the line of the last hit: a line once

        def hit(_idx: int, _frm: int, to: int, _flags: int, _ctx: Any) -> None:
            if to > last[0]:  # (a match may end with its line's newline)
                nl = buf.find(b"\n", to - 1)
                last[0] = len(buf) if nl < 0 else nl
                ends.append(to - 1)  # (its last byte: on its line)

        with guard.lock:
            db.scan(buf, match_event_handler=hit)
        return sorted(ends)
    return find


_LINE_FINDERS: dict[tuple[tuple[bytes, ...], bool], Callable[[bytes], list[int]] | None] = {}


def find_all(needles: list[bytes], *, stored: bool = False) -> Finder | None:
    """A finder of every needle in one pass: ``buf`` -> needle index -> its positions.
    ``stored``: the database may come from, and go to, the disk; never for secrets (the
    literals a user registered)."""
    if not available() or not needles:
        return None
    d = Database()
    for i, n in enumerate(needles):
        d.add(escape(n), 0, (_ADD, len(n), i))
    try:
        d.compile(stored=stored)
    except Exception as e:  # as in native_scan
        _broken(e)
        return None
    db, guard, actions = d.db, d.guard, [tuple(a) for a in d.actions]

    def find(buf: bytes) -> dict[int, list[int]]:
        pos: dict[int, list[int]] = {}

        def hit(idx: int, frm: int, to: int, _flags: int, _ctx: Any) -> None:
            for _k, back, arg in actions[idx]:
                pos.setdefault(arg, []).append(to - back)

        with guard.lock:
            db.scan(buf, match_event_handler=hit)
        return pos
    return find

