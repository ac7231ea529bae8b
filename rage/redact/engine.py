"""The matching core behind :class:`rage.redact.Redactor`: one combined regex (its handlers,
pseudonyms and counts are in :mod:`rage.redact.handlers`), and the cutting of a buffer
into redactable whole lines.

``plan()`` decides how much of a buffer can be redacted now (whole lines, private key blocks
whole) and ``apply()`` redacts it; the split lets a parallel stream plan in the parent and
apply in worker processes with output identical to the serial path.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable

from rage.redact import hexdump, regexcache
from rage.redact import patterns as P
from rage.redact.catalogue import Compiled, LazyPattern, compiled_catalogue, search_starts
from rage.redact.handlers import Handler as _Handler
from rage.redact.handlers import Handlers
from rage.redact.literals import registered_literals
from rage.redact.multiline import NEEDLES as MULTILINE_NEEDLES
from rage.redact.multiline import REDACTED_NEEDLES, hold_back, redact_multiline
from rage.redact.native import finder, native_scan
from rage.redact.nearby import SHAPES as NEARBY_SHAPES
from rage.redact.normalize import needs_normalizing, normalize
from rage.redact.patterns import compile_custom
from rage.redact.regexcache import compiled
from rage.redact.scan import (
    GROUP_BYTES,
    GROUP_BYTES_CI,
    IDENT,
    KEY,
    LINE,
    PROMPT,
    SHORT,
    Anchor,
    Plan,
    ScanPlan,
    anchor_for,
    candidate_starts,
    group_plan,
    scan_plan,
)
from rage.redact.sql import Tables
from rage.redact.wraps import WIDTH as WRAP_WIDTH

MAX_SEGMENT = 1024 * 1024  # a line longer than this is cut in streaming mode
PRIVATE_KEY_MAX = P.PRIVATE_KEY_MAX

Spans = list[tuple[int, int]]
_Format = tuple[LazyPattern, _Handler]  # a catalogue entry's regex and its handler


class RedactionEngine(Handlers):
    """State and matching for one redaction table (see :class:`rage.redact.Redactor`)."""

    def __init__(self, *, literals: Iterable[str], patterns: Iterable[str],
                 pseudonymize: bool, home: str | None, user: str | None,
                 hosts: tuple[str, ...]) -> None:
        self._own_literals = tuple(s for s in literals if isinstance(s, str) and len(s) >= 4)
        self._custom = [compile_custom(p) for p in patterns]
        self._pseudonymize = pseudonymize
        self._home = home
        self._user = user
        self._hosts = hosts
        self._counts: dict[str, int] = {}
        self._pseudonyms: dict[str, str] = {}
        self._next_user = 1
        self._homes: dict[bytes, bytes] = {}  # see Handlers._other_home
        self._built_for: tuple[str, ...] | None = None
        self._master: re.Pattern[bytes] | None = None
        self._alts: list[_Handler] = []
        self._group_alt: list[int] = []
        self._scan = ScanPlan(cs=(), ci=(), anchors={}, fallback={}, url_at=False)
        self.reference_scan = False  # tests: search every plain trigger (see rage.redact.scan)
        self._pem = compiled(P.PRIVATE_KEY)
        # the literals by their first 4 bytes (none is shorter), longest first
        self._lits: dict[bytes, tuple[bytes, ...]] | None = None
        self._lit_bytes: tuple[bytes, ...] = ()
        self._lit_find: Callable[[bytes], dict[int, list[int]]] | None = None
        self._heads: dict[bytes, tuple[_Format, ...]] = {}
        self._catalogue = _catalogue()
        prefixes = [p for f in self._catalogue if f.at_start for p in f.prefixes]
        self._cat_prefix_set = frozenset(prefixes)
        # by their first 3 bytes (none is shorter): startswith of all ~300 was 1.8 us a key
        heads: dict[bytes, list[bytes]] = {}
        for p in prefixes:
            heads.setdefault(p[:3], []).append(p)
        self._cat_prefix_heads = {h: tuple(v) for h, v in heads.items()}
        self._searched: dict[bytes, tuple[_Format, ...]] = {}
        # in a worker process: other people's names unknown at fork time are written as
        # marker + name + NUL, for the parent to number in order of first appearance
        self._defer: bytes | None = None
        self._deferred = 0
        # values redacted under a secret name, while learning (see Redactor.learned)
        self._learned: dict[bytes, None] | None = None
        # the columns of the SQL tables created so far in what this engine redacted
        self._tables: Tables = {}
        # the widths of the consoles the text was printed to: a value cut at the end of a
        # line this wide goes on at the next line's start (see rage.redact.wraps)
        self.wrap_widths: frozenset[int] = frozenset({WRAP_WIDTH})

    def build(self) -> re.Pattern[bytes]:
        """Compile the combined regex once; literals registered or learned later are found
        apart from it (:meth:`_use_literals`), so they cost no recompiling."""
        lits = tuple(sorted({*registered_literals(), *self._own_literals}, key=len,
                            reverse=True))
        if self._master is not None:
            if self._built_for != lits:
                self._use_literals(lits)
            return self._master
        alts: list[bytes] = []
        handlers: list[_Handler] = []
        cs: dict[bytes, set[int]] = {}
        ci: dict[bytes, set[int]] = {}

        def trig(d: dict[bytes, set[int]], triggers: Iterable[bytes], mode: int) -> None:
            for t in triggers:
                d.setdefault(t, set()).add(mode)

        def add(regex: bytes, handler: _Handler) -> None:
            i = len(alts)
            regex = regex.replace(b"(?P<k>", b"(?P<k%d>" % i).replace(b"(?P<v>", b"(?P<v%d>" % i)
            alts.append(b"(?P<a%d>%s)" % (i, regex))
            handlers.append(handler)

        fmt_cs: dict[bytes, set[int]] = {}  # catalogue prefixes not walked from an anchor
        names_cs: list[bytes] = []  # found apart: a start only they give tries only them
        names_after: tuple[tuple[bytes, bytes], ...] = ()
        names_ci: list[bytes] = []
        anchored: dict[int, list[bytes]] = {}
        fallback: dict[int, dict[bytes, set[int]]] = {}
        searched: dict[bytes, list[_Format]] = {}
        heads: dict[bytes, list[_Format]] = {}
        # catalogue formats are not alternatives of the combined regex (which would try all
        # of them at every start): a start is tried against the formats whose prefix begins
        # with the three bytes found there, in catalogue order
        for fmt in self._catalogue:
            entry = (fmt.search, self._format_handler(fmt.kind, fmt.has_secret))
            if not fmt.at_start:
                for p in fmt.prefixes:
                    searched.setdefault(p, []).append(entry)
                continue
            for head in dict.fromkeys(p[:3] for p in fmt.prefixes):
                heads.setdefault(head, []).append(entry)
            a = anchor_for(fmt.prefixes)
            if a is None:
                trig(fmt_cs, fmt.prefixes, 0)
            else:
                anchored.setdefault(a[0], []).extend(fmt.prefixes)
                trig(fallback.setdefault(a[0], {}), fmt.prefixes, 0)
        self._searched = {p: tuple(v) for p, v in searched.items()}
        self._heads = {h: tuple(v) for h, v in heads.items()}
        add(P.URL_CREDENTIALS, self._url)  # found from its "@" (rage.redact.scan._url_starts)
        for name, form in P.KEY_VALUE_FORMS:
            add(form, self._key_value_form(name))
        trig(ci, P.SECRET_WORDS, KEY)
        trig(ci, P.FORM_TRIGGERS, 0)
        trig(cs, P.LINE_TRIGGERS, LINE)
        trig(cs, P.FORM_TRIGGERS_CS, 0)
        trig(ci, P.ENCODED_TRIGGERS, IDENT)
        trig(ci, P.SHORT_SPACED, SHORT)
        if self._pseudonymize:
            self._first_name = len(alts)
            self._add_names(add, lambda t, i: (names_ci if i else names_cs).append(t))
            # `/home/alice` starts where `/home/` does: one hit, not two
            names_cs[:] = [t for t in names_cs if not any(
                o != t and t.startswith(o) for o in names_cs)]
            home = (self._home or "").rstrip("/").encode("utf-8", "surrogateescape")
            user = (self._user or "").encode("utf-8", "surrogateescape")
            parent = home[:-len(user)] if user and home.endswith(b"/" + user) else b""
            if user in names_cs and parent in names_cs:  # `/home/` + `alice`: see native
                names_after = ((user, parent),)
        self._alts = handlers
        anchors: dict[int, Anchor] = {}
        for c, anchored_lits in anchored.items():
            a = anchor_for(tuple(anchored_lits))
            if a is None or a[0] != c:
                for t, modes in fallback.pop(c).items():  # not with the shipped formats
                    for mode in modes:
                        trig(fmt_cs, [t], mode)
                continue
            anchors[c] = a[1]
        every_fmt = dict(fmt_cs)
        for f in fallback.values():
            for t, modes in f.items():
                every_fmt.setdefault(t, set()).update(modes)
        native = native_scan(_plan(cs), _plan(ci), tuple(searched), formats=_plan(every_fmt),
                             names_cs=tuple(names_cs), names_ci=tuple(names_ci),
                             multiline=MULTILINE_NEEDLES, names_after=names_after,
                             line_shapes=(P.PROMPT_KEY + rb"[ \t]*:[ \t]+[^\s\"'\[]",),
                             multiline_shapes=NEARBY_SHAPES,
                             stored=True)  # it holds no literal (never on a disk)
        # the reference scan finds a prompt's line from its literals; the native one from
        # the whole shape (the literals are in prose too: `password for ` is in 1% of the
        # lines of issue 10's words-heavy log, each a line tried in vain)
        trig(ci, P.PROMPT_TRIGGERS, PROMPT)
        fmt_rest, fmt_groups = group_plan(scan_plan(fmt_cs), GROUP_BYTES)
        cs_rest, groups = group_plan(scan_plan(cs), GROUP_BYTES)
        ci_rest, ci_groups = group_plan(scan_plan(ci), GROUP_BYTES_CI)
        self._scan = ScanPlan(cs=cs_rest, ci=ci_rest, anchors=anchors,
                              fallback={c: scan_plan(f) for c, f in fallback.items()},
                              url_at=True, groups=groups, ci_groups=ci_groups, native=native,
                              names_cs=tuple(names_cs), names_ci=tuple(names_ci),
                              formats=fmt_rest, format_groups=fmt_groups)
        master = compiled(b"|".join(alts))
        self._group_alt = _alternatives(master)
        # where only a name starts, only the names can match there (every other shape has
        # triggers of its own): the same alternatives, numbered as in the master
        self._names: re.Pattern[bytes] | None = None
        if self._pseudonymize:
            self._names = compiled(b"|".join(alts[self._first_name:]))
            self._names_alt = _alternatives(self._names)
            # every name alternative starts with one of the names' literals: the cheap test
            # before a shape that was no secret lets a name match where it started
            lower = tuple(t.lower() for t in names_ci)
            self._name_heads = (tuple(names_cs), lower, max(map(len, lower), default=0))
        self._master = master
        regexcache.save()  # for the next process: its patterns then cost no parsing
        self._use_literals(lits)
        return master

    def _use_literals(self, lits: tuple[str, ...]) -> None:
        """Find ``lits`` (longest first) from now on: each start of one is tried first, so
        what the user registered wins over any format. Their own small Hyperscan database
        (compiled in about a millisecond, never stored) or a ``find`` each, not triggers of
        the main database, which would have to be compiled again (100-150 ms)."""
        from rage.redact.native import find_all

        enc = tuple(s.encode("utf-8", "surrogatepass") for s in lits)
        # which literal starts where the finder says one does: by its first 4 bytes, not a
        # regex of all of them (its compilation took 25 ms for the 1,024 values a report may
        # learn, on top of the finder's 22 ms)
        heads: dict[bytes, list[bytes]] = {}
        for e in enc:
            heads.setdefault(e[:4], []).append(e)
        self._lits = {h: tuple(v) for h, v in heads.items()} if enc else None
        self._lit_bytes = enc
        self._lit_find = find_all(list(enc)) if enc else None
        self._built_for = lits

    def _literal_starts(self, region: bytes) -> set[int]:
        """Where a literal starts in ``region``."""
        if self._lit_find is not None and not self.reference_scan:
            return {p for v in self._lit_find(region).values() for p in v}
        out: set[int] = set()
        for lit in self._lit_bytes:
            i = region.find(lit)
            while i >= 0:
                out.add(i)
                i = region.find(lit, i + 1)
        return out

    # -- cutting and applying -------------------------------------------------------------

    def plan(self, buf: bytes, *, final: bool, hold: bool = True) -> tuple[int, Spans]:
        """How much of ``buf`` can be redacted now, and the private key blocks inside it.

        Returns ``limit`` (whole lines only unless ``final``; 0 means "wait for more") and
        the ``(start, end)`` spans of private key blocks before it. Key blocks may span lines
        and chunks: each is matched with :data:`PRIVATE_KEY_MAX` bytes of lookahead (or the
        end of input), so the result never depends on where the input was cut. ``hold``
        False: whole lines go now even after a multi-line opener (a live input that paused,
        see :data:`rage.redact.parallel.FLUSH`); key blocks still wait for their end.
        """
        n = len(buf)
        if final:
            limit = n
        else:
            nl = buf.rfind(b"\n")
            if nl >= 0:
                # a value across lines is redacted whole
                limit = hold_back(buf, nl + 1) if hold else nl + 1
                if not limit:
                    return 0, []  # its opener starts ``buf``: wait for the lines after it
            elif n > MAX_SEGMENT:
                limit = segment_cut(buf)
            else:
                return 0, []
        spans: Spans = []
        begin = _begins(buf)
        p = begin(0, limit)
        while p >= 0:
            stop = min(n, p + PRIVATE_KEY_MAX)
            if not final and stop < p + PRIVATE_KEY_MAX:
                limit = buf.rfind(b"\n", 0, p) + 1  # wait for the rest of the block
                break
            km = self._pem.match(buf, p, stop)
            if km is None:
                p = begin(p + 1, limit)
                continue
            e = km.end()
            if e > limit:
                nl = buf.find(b"\n", e)
                if nl >= 0:
                    limit = nl + 1
                elif final:
                    limit = n
                else:
                    limit = buf.rfind(b"\n", 0, p) + 1
                    break
            spans.append((p, e))
            p = begin(e, limit)
        while spans and spans[-1][1] > limit:  # waiting for a later block: redo this one too
            spans.pop()
        return limit, spans

    def apply(self, buf: bytes, limit: int, spans: Spans, *, custom: bool = True) -> bytes:
        """Redact ``buf[:limit]`` given the key block ``spans`` from :meth:`plan`."""
        master = self.build()
        if spans:
            self._count("private-key", len(spans))
        parts: list[bytes] = []
        pos = 0
        for s, e in spans:
            parts.append(self._lines(master, buf, pos, s))
            parts.append(b"[REDACTED:private-key]")
            pos = e
        parts.append(self._lines(master, buf, pos, limit))
        out = b"".join(parts)
        return self.apply_custom(out) if custom else out

    def apply_custom(self, out: bytes) -> bytes:
        """The user's own patterns, run over already redacted output."""
        for pat in self._custom:
            out = pat.sub(self._custom_repl, out)
        return out

    def redact_whole(self, buf: bytes) -> bytes:
        """``buf`` redacted as one whole text (Redactor.bytes; a hex dump's bytes)."""
        limit, spans = self.plan(buf, final=True)
        return self.apply(buf, limit, spans)

    def _inside(self, buf: bytes, a: int, b: int) -> bytes:
        return self._lines(self.build(), buf, a, b)

    def _custom_repl(self, m: re.Match[bytes]) -> bytes:
        self._count("custom")
        return b"[REDACTED:custom]"

    def _lines(self, master: re.Pattern[bytes], buf: bytes, a: int, b: int) -> bytes:
        """Redact buf[a:b]: the combined regex is tried only where a trigger says a match
        could start, anchored there; leftmost wins, then the first alternative."""
        if a >= b:
            return b""
        region = buf[a:b] if a or b != len(buf) else buf
        native = self._scan.native is not None and not self.reference_scan
        # matched, and kept, as the terminal showed it; the native scan tells in its pass
        if not native and needs_normalizing(region):
            region = buf = normalize(region)
            a = 0
        found: dict[bytes, list[int]] = {}
        names_only: set[int] = set()
        formats_only: set[int] = set()
        dirty: list[bool] = []
        # the native scan tells whether the multi-line rules can apply (a needle in the
        # input: a redaction adds only its own, see _multiline); else they always run
        multi: list[bool] = [] if native else [True]
        dumps: list[bool] = []
        starts = candidate_starts(region, self._scan, reference=self.reference_scan,
                                  found=found, names_only=names_only,
                                  formats_only=formats_only, dirty=dirty, multiline=multi,
                                  dumps=dumps)
        if dirty:
            region = buf = normalize(region)
            a = 0
            found.clear()
            names_only.clear()
            formats_only.clear()
            multi.clear()
            dumps.clear()
            starts = candidate_starts(region, self._scan, found=found, names_only=names_only,
                                      formats_only=formats_only, multiline=multi,
                                      dumps=dumps)
        if (dumps or hexdump.starts_in_dump(region)) if native else hexdump.present(region):
            # the bytes a dump shows, masked where their text is redacted: the same length,
            # so the starts found stay where they are
            region, dump_lines = hexdump.mask_dumps(region, self.redact_whole)
            buf = region
            a = 0
            starts = hexdump.outside(starts, dump_lines)
        hits: dict[int, list[_Format]] = {}
        if self._searched:
            search_starts(region, self._searched, hits, found)
            if hits:
                starts = sorted(hits.keys() | set(starts))
                names_only -= hits.keys()
        if self._lit_bytes and (at := self._literal_starts(region)):
            starts = sorted(at.union(starts))
            names_only -= at
            formats_only -= at
        if not starts:
            if not multi:
                return region
            return redact_multiline(region, self._count, tables=self._tables,
                                    learn=self._learner())
        # no needle in the input (the native scan says so): the only ones in the output are
        # in replacements (see multiline.REDACTED_NEEDLES), found here as they are made,
        # rather than by another pass over the whole output
        made: dict[bytes, list[int]] | None = None if multi else {}
        made_at = 0  # the output's length so far, while ``made`` is kept
        # the kept text goes to the join as views: one copy of it, not two
        view = memoryview(region)
        parts: list[bytes | memoryview] = []
        last = 0  # in region coordinates
        pos = 0
        line_end = -1
        handlers = self._alts
        match = master.match
        group_alt = self._group_alt
        lits = self._lits
        heads = self._heads
        no_formats: tuple[_Format, ...] = ()
        names_match = self._names.match if self._names is not None else None
        names_alt = self._names_alt if self._names is not None else []
        first_name, (heads_cs, heads_ci, ci_len) = (
            (self._first_name, self._name_heads) if self._names is not None else (0, ((), (), 0)))
        stop = a + len(region)
        for s in starts:
            if s < pos or s < 0:
                continue
            p = a + s
            if s in names_only:  # a name never spans lines: no need to find the line's end
                m = names_match(buf, p, stop)  # type: ignore[misc]
                if m is None:
                    continue
                alt = names_alt[m.lastindex or 1]
                res = handlers[alt](m, alt)
            else:
                if s >= line_end:
                    line_end = region.find(b"\n", s)
                    if line_end < 0:
                        line_end = len(region)
                end = a + line_end
                lit = _literal_at(buf, p, end, lits) if lits is not None else 0
                if lit:
                    self._count("literal")
                    res = (p, p + lit, _LITERAL)
                    m = None
                else:
                    fmts = heads.get(buf[p:p + 3], no_formats)
                    if hits and (more := hits.get(s)):
                        fmts = (*fmts, *more)
                    for pat, handler in fmts:
                        m = pat.match(buf, p, end)
                        if m is not None:
                            res = handler(m, 0)
                            break
                    else:
                        if s in formats_only:
                            continue  # only the catalogue could match here
                        m = match(buf, p, end)
                        if m is None:
                            continue
                        alt = group_alt[m.lastindex or 1]
                        res = handlers[alt](m, alt)
                        if isinstance(res, int) and names_match is not None and \
                                alt < first_name and (
                                    buf.startswith(heads_cs, p) or (heads_ci and buf[
                                        p:p + ci_len].lower().startswith(heads_ci))) and (
                                    nm := names_match(buf, p, stop)):
                            # a shape that was no secret here (`alice-mapping://`: a key
                            # that is none, a scheme without credentials): a name that
                            # starts here is still one, as where only a name starts
                            name_alt = names_alt[nm.lastindex or 1]
                            named = handlers[name_alt](nm, name_alt)
                            if not isinstance(named, int):
                                m, res = nm, named
            if isinstance(res, int):
                pos = max(res - a, s + 1)
                continue
            vs, ve, rep = res
            kept = view[last:vs - a]
            parts.append(kept)
            parts.append(rep)
            if made is not None:
                made_at += len(kept)
                if b"[REDACTED:" in rep:  # `[REDACTED:auth-header]` may start a wrapped token
                    for n in REDACTED_NEEDLES:
                        j = rep.find(n)
                        while j >= 0:
                            made.setdefault(n, []).append(made_at + j)
                            j = rep.find(n, j + 1)
                made_at += len(rep)
            last = ve - a
            pos = max((ve if m is None else m.end()) - a, last)  # (m None: a literal's end)
        if not parts:  # nothing replaced: the region as it is
            out = region
        else:
            parts.append(view[last:])
            out = b"".join(parts)
        if made:
            return redact_multiline(out, self._count, made, self._tables, self._learner())
        return (redact_multiline(out, self._count, tables=self._tables, learn=self._learner())
                if multi else out)


_LITERAL = b"[REDACTED:literal]"


def _literal_at(buf: bytes, p: int, end: int, lits: dict[bytes, tuple[bytes, ...]]) -> int:
    """The length of the longest literal at ``buf[p:]`` that ends by ``end``, else 0."""
    for lit in lits.get(buf[p:p + 4], ()):
        if p + len(lit) <= end and buf.startswith(lit, p):
            return len(lit)
    return 0


_CATALOGUE: tuple[Compiled, ...] | None = None


def _alternatives(regex: re.Pattern[bytes]) -> list[int]:
    """Group index -> the alternative it closes: the outer group of an alternative closes
    last, so ``m.lastindex`` names the alternative that matched."""
    out = [0] * (regex.groups + 1)
    for name, idx in regex.groupindex.items():
        if name[0] == "a":
            out[idx] = int(name[1:])
    return out


def _plan(triggers: dict[bytes, set[int]]) -> Plan:
    """Every trigger with its modes (one Hyperscan pass needs no pruning: see scan_plan)."""
    return tuple((t, tuple(sorted(m))) for t, m in triggers.items())


def _catalogue() -> tuple[Compiled, ...]:
    global _CATALOGUE
    if _CATALOGUE is None:
        _CATALOGUE = compiled_catalogue()
    return _CATALOGUE


def segment_cut(buf: bytes) -> int:
    """Where a line longer than :data:`MAX_SEGMENT` is cut in a stream: after the last
    record separator (``,`` ``;`` ``}`` ``]`` ``>`` ``|``) in its second half, so that a
    ``"key": "value"`` pair or a token crossing the 1 MiB mark lands whole in the next
    segment; else after the last space or quote; else at the mark (a run of half a MiB of
    token characters holds no token the engine would match: tokens end at a boundary)."""
    lo = MAX_SEGMENT // 2
    for seps in (b",;}]>|", b" \t\"'"):
        cut = max(buf.rfind(bytes([c]), lo, MAX_SEGMENT) for c in seps)
        if cut >= lo:
            return cut + 1
    return MAX_SEGMENT


_NATIVE_BEGINS = 256 * 1024  # below this ``bytes.find`` costs less than a call to Hyperscan


def _begins(buf: bytes) -> Callable[[int, int], int]:
    """``find(start, end)``: where the first private key BEGIN of ``buf[start:end]`` starts,
    as ``buf.find`` says. A large buffer is searched once with Hyperscan, when it is there:
    ``bytes.find`` of this needle runs at about 2 GB/s, a fifth of a parallel report's time
    in its parent."""
    find = finder((P.PRIVATE_KEY_BEGIN,)) if len(buf) >= _NATIVE_BEGINS else None
    if find is None:
        return lambda start, end: buf.find(P.PRIVATE_KEY_BEGIN, start, end)
    at = find(buf).get(0, [])
    width = len(P.PRIVATE_KEY_BEGIN)

    def first(start: int, end: int) -> int:
        i = bisect.bisect_left(at, start)
        return at[i] if i < len(at) and at[i] + width <= end else -1
    return first
