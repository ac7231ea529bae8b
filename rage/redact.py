"""The redaction engine: secrets and personal data never leave the machine in clear.

What is replaced (patterns in :mod:`rage.redact_patterns`):

- known credential formats (AWS, GitHub, GitLab, Slack, Stripe, npm, PyPI, OpenAI,
  Anthropic, Google API keys, JWTs) -> ``[REDACTED:<kind>]``;
- private key blocks (PEM, OpenSSH, PGP), BEGIN to END, whole -> ``[REDACTED:private-key]``;
- values stored under a secret-looking name: ``key=value``, ``"key": "value"``, YAML
  ``key: value``, ``--password x``, HTTP ``Authorization:`` (the scheme word is kept),
  ``Cookie:`` / ``Set-Cookie:``: the key stays, the value goes;
- URL credentials: ``https://user:pw@host/`` -> ``https://[REDACTED:url-credentials]@host/``
  (user and password both go: the "user" is often a token; a short plain login name without
  a password, as in ``ssh://git@host``, is kept);
- literals registered with :func:`register_literal` (``rage.redact_value``) and user regexes;
- pseudonyms (``pseudonymize=True``): the home directory -> ``~``, the user name -> ``user-1``,
  other people's ``/home/<name>`` -> ``/home/user-2``..., the host name -> ``host-1``. Names are
  whole-word, case-sensitive for users and case-insensitive for hosts; names shorter than 3
  characters and shared words/system accounts (``root``, ``runner``, ``ubuntu``,
  ``localhost``...) are left alone, but their home directory (``/root``) still becomes ``~``.

How it stays fast: matching is line-local. A line is only handed to the combined regex when
it contains a trigger literal (``b"ghp_"``, ``b"token"``, the user name...), found with
``bytes.find`` at memory speed; most log lines contain none. Streams are cut at line
boundaries, so ``stream()`` gives exactly what ``bytes()`` gives on the whole input; a private
key block may span lines and is matched within :data:`PRIVATE_KEY_MAX` bytes in both modes.
Lines longer than :data:`MAX_SEGMENT` are cut (at a space when there is one) in streams only.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from rage import redact_patterns as P
from rage.errors import ConfigError
from rage.fsutil import open_private
from rage.sensitive import looks_secret_name

BLOCK = 1024 * 1024  # bytes a stream gathers before redacting a batch of whole lines
MAX_SEGMENT = 1024 * 1024  # a line longer than this is cut in streaming mode
PRIVATE_KEY_MAX = P.PRIVATE_KEY_MAX
_CHUNK = 1024 * 1024

_lock = threading.Lock()
_literals: tuple[str, ...] = ()  # longest first, so a literal inside another never wins


def register_literal(secret: str) -> None:
    """Remember ``secret`` process-wide: every Redactor and :func:`scrub_literals` replace it.

    Values shorter than 4 characters are ignored: replacing "abc" everywhere would destroy
    the text and protect nothing.
    """
    global _literals
    if not isinstance(secret, str) or len(secret) < 4:
        return
    with _lock:
        if secret not in _literals:
            _literals = tuple(sorted((*_literals, secret), key=len, reverse=True))


def scrub_literals(text: str) -> str:
    """Replace registered literals in ``text`` with ``[REDACTED:literal]`` (no regex layers).

    Meant for hot paths such as log handlers: with nothing registered it returns at once.
    """
    lits = _literals
    if not lits:
        return text
    for lit in lits:
        if lit in text:
            text = text.replace(lit, "[REDACTED:literal]")
    return text


def _default_home() -> str | None:
    try:
        return str(Path.home())
    except (RuntimeError, KeyError, OSError):
        return None


def _default_user() -> str | None:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):
        return None


def _default_hostname() -> str | None:
    import socket

    try:
        return socket.gethostname()
    except OSError:
        return None


def _is_name(name: str | None) -> bool:
    return bool(name) and len(name or "") >= P.MIN_NAME_LEN and (
        (name or "").lower() not in P.COMMON_NAMES
    ) and not (name or "").isdigit()


# word characters for whole-word name matching; bytes >= 0x80 are parts of UTF-8 letters
_W = rb"A-Za-z0-9_\x80-\xff"

_Bytes = bytes  # the Redactor.bytes method shadows the builtin inside the class

_IDENT = -1
_SCHEME = -2
_IDENT_RUN = re.compile(rb"[A-Za-z0-9_.\-]{0,66}\Z")
_SCHEME_RUN = re.compile(rb"[A-Za-z][A-Za-z0-9+.\-]{0,30}\Z")

_Handler = Callable[["re.Match[bytes]", int], "tuple[int, int, bytes] | int"]


class Redactor:
    """Redacts text, bytes, streams, files and JSON-like data; counts what it replaced.

    One instance keeps one pseudonym table, so the same name always gets the same pseudonym.
    Not thread-safe: use one Redactor per thread (or per report).
    """

    def __init__(self, *, literals: Iterable[str] = (), patterns: Iterable[str] = (),
                 pseudonymize: bool = True, home: str | None = None, user: str | None = None,
                 hostname: str | None = None) -> None:
        self._own_literals = tuple(s for s in literals if isinstance(s, str) and len(s) >= 4)
        self._custom = [_compile_custom(p) for p in patterns]
        self._pseudonymize = pseudonymize
        self._home = (home if home is not None else _default_home()) if pseudonymize else None
        self._user = (user if user is not None else _default_user()) if pseudonymize else None
        host = (hostname if hostname is not None else _default_hostname()) if pseudonymize \
            else None
        self._hosts = _host_names(host)
        self._counts: dict[str, int] = {}
        self._pseudonyms: dict[str, str] = {}
        self._next_user = 1
        self._built_for: tuple[str, ...] | None = None
        self._master: re.Pattern[_Bytes] | None = None
        self._pem = re.compile(P.PRIVATE_KEY)

    # -- public API ---------------------------------------------------------------------

    @property
    def counts(self) -> dict[str, int]:
        """Replacements so far, by kind (a copy)."""
        return dict(self._counts)

    def pseudonym_map(self) -> dict[str, str]:
        """Original -> pseudonym. For the local preview only: NEVER write it into a bundle."""
        return dict(self._pseudonyms)

    def text(self, s: str) -> str:
        """Redact a string."""
        try:
            raw, errors = s.encode("utf-8", "surrogateescape"), "surrogateescape"
        except UnicodeEncodeError:
            raw, errors = s.encode("utf-8", "surrogatepass"), "surrogatepass"
        out = self.bytes(raw)
        if out == raw:
            return s
        try:
            return out.decode("utf-8", errors)
        except UnicodeDecodeError:
            return out.decode("utf-8", "replace")

    def bytes(self, b: _Bytes) -> _Bytes:
        """Redact bytes; bytes that are not UTF-8 pass through unchanged unless in a secret."""
        out, _ = self._process(_Bytes(b), final=True)
        return out

    def stream(self, chunks: Iterable[_Bytes], *, block: int = BLOCK) -> Iterator[_Bytes]:
        """Redact a stream of chunks with bounded memory; output equals :meth:`bytes` on the
        concatenation (lines over :data:`MAX_SEGMENT` bytes aside). Secrets split across
        chunks are caught: only whole lines are redacted, the unfinished line is carried.
        ``block`` is how many bytes to gather before redacting (memory use is about twice it,
        plus :data:`PRIVATE_KEY_MAX` while a key block is open)."""
        pending: list[_Bytes] = []
        size = 0
        carry = b""
        for chunk in chunks:
            if not chunk:
                continue
            pending.append(chunk)
            size += len(chunk)
            if size < block:
                continue
            buf = carry + b"".join(pending)
            pending, size = [], 0
            out, used = self._process(buf, final=False)
            carry = buf[used:]
            if out:
                yield out
        buf = carry + b"".join(pending)
        out, _ = self._process(buf, final=True)
        if out:
            yield out

    def file(self, src: Path, dst: Path) -> None:
        """Redact ``src`` into ``dst`` (created 0600), streaming."""
        with open(src, "rb") as f, open_private(dst, "wb") as g:
            for out in self.stream(iter(lambda: f.read(_CHUNK), b"")):
                g.write(out)

    def data(self, obj: Any) -> Any:
        """Redact JSON-like data: dicts, lists, tuples, strings (other values pass through).

        A value under a secret-looking key is replaced whole (unless None, a bool or empty);
        a dict under such a key is redacted recursively instead, so ``auth: {user, token}``
        keeps its structure. Keys are redacted as text too.
        """
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            out: dict[Any, Any] = {}
            for k, v in obj.items():
                nk = self.text(k) if isinstance(k, str) else k
                if isinstance(k, str) and looks_secret_name(k) and not isinstance(v, dict) \
                        and v is not None and not isinstance(v, bool) and v not in ("", [], ()):
                    self._count("secret-field")
                    out[nk] = "[REDACTED:secret-field]"
                else:
                    out[nk] = self.data(v)
            return out
        if isinstance(obj, list):
            return [self.data(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.data(v) for v in obj)
        if isinstance(obj, _Bytes):
            return self.bytes(obj)
        return obj

    # -- engine -------------------------------------------------------------------------

    def _count(self, kind: str, n: int = 1) -> None:
        self._counts[kind] = self._counts.get(kind, 0) + n

    def _pseudonym(self, name: str) -> str:
        p = self._pseudonyms.get(name)
        if p is None:
            p = f"user-{self._next_user}"
            self._next_user += 1
            self._pseudonyms[name] = p
        return p

    def _build(self) -> re.Pattern[_Bytes]:
        """(Re)compile the combined regex; literals registered later trigger a rebuild."""
        lits = tuple(sorted({*_literals, *self._own_literals}, key=len, reverse=True))
        if self._master is not None and self._built_for == lits:
            return self._master
        alts: list[_Bytes] = []
        handlers: list[_Handler] = []
        # trigger -> where a match starts relative to it: >= 0 that many bytes before it,
        # _IDENT at the start of the identifier holding it, _SCHEME at a URL scheme's start
        cs: dict[_Bytes, set[int]] = {}
        ci: dict[_Bytes, set[int]] = {}

        def trig(d: dict[_Bytes, set[int]], triggers: Iterable[_Bytes], mode: int) -> None:
            for t in triggers:
                d.setdefault(t, set()).add(mode)

        def add(regex: _Bytes, handler: _Handler) -> None:
            i = len(alts)
            regex = regex.replace(b"(?P<k>", b"(?P<k%d>" % i).replace(b"(?P<v>", b"(?P<v%d>" % i)
            alts.append(b"(?P<a%d>%s)" % (i, regex))
            handlers.append(handler)

        if lits:
            enc = [s.encode("utf-8", "surrogatepass") for s in lits]
            add(b"|".join(re.escape(e) for e in enc), self._whole("literal"))
            trig(cs, enc, 0)
        for fmt in P.TOKEN_FORMATS:
            add(fmt.regex, self._whole(fmt.kind))
            trig(cs, fmt.triggers, fmt.back)
        add(P.URL_CREDENTIALS, self._url)
        trig(cs, [b"://"], _SCHEME)
        for _name, form in P.KEY_VALUE_FORMS:
            add(form, self._key_value)
        trig(ci, P.SECRET_WORDS, _IDENT)
        if self._pseudonymize:
            self._add_names(add, lambda t, i: trig(ci if i else cs, [t], 0))
        self._alts = handlers
        self._cs = _scan_plan(cs)
        self._ci = _scan_plan(ci)
        self._master = re.compile(b"|".join(alts))
        self._built_for = lits
        return self._master

    def _add_names(self, add: Callable[[_Bytes, _Handler], None],
                   trig: Callable[[_Bytes, bool], None]) -> None:
        terms: list[tuple[int, _Bytes, _Handler, _Bytes, bool]] = []
        home = (self._home or "").rstrip("/")
        if len(home) >= 2:
            h = home.encode("utf-8", "surrogateescape")
            self._pseudonyms[home] = "~"
            terms.append((len(h), rb"(?<![A-Za-z0-9_.\-\x80-\xff])" + re.escape(h)
                          + rb"(?![A-Za-z0-9_.\-~+\x80-\xff])", self._fixed("home", b"~"), h,
                          False))
        for host in self._hosts:
            b = host.encode("utf-8", "surrogateescape")
            self._pseudonyms.setdefault(host, "host-1")
            terms.append((len(b), rb"(?<![" + _W + rb"\-.])(?i:" + re.escape(b) + rb")(?!["
                          + _W + rb"\-])", self._fixed("host", b"host-1"),
                          b.lower(), True))
        if _is_name(self._user):
            user = self._user or ""
            u = user.encode("utf-8", "surrogateescape")
            pseudo = self._pseudonym(user).encode()
            terms.append((len(u), rb"(?<![" + _W + rb"])" + re.escape(u) + rb"(?![" + _W
                          + rb"])", self._fixed("user", pseudo), u, False))
        for _n, regex, handler, trigger, insensitive in sorted(terms, key=lambda t: -t[0]):
            add(regex, handler)
            trig(trigger, insensitive)
        add(rb"(?<![A-Za-z0-9_.\-\x80-\xff])/(?:home|Users)/(?P<v>[A-Za-z0-9_][A-Za-z0-9_.\-]"
            rb"{0,63})(?![A-Za-z0-9_.\-\x80-\xff])", self._other_home)
        trig(b"/home/", False)
        trig(b"/Users/", False)

    # handlers: return (start, end, replacement) or, to decline, the position to resume at

    def _whole(self, kind: str) -> _Handler:
        rep = f"[REDACTED:{kind}]".encode()

        def handle(m: re.Match[_Bytes], i: int) -> tuple[int, int, _Bytes]:
            self._count(kind)
            return m.start(), m.end(), rep
        return handle

    def _fixed(self, kind: str, rep: _Bytes) -> _Handler:
        def handle(m: re.Match[_Bytes], i: int) -> tuple[int, int, _Bytes]:
            self._count(kind)
            return m.start(), m.end(), rep
        return handle

    def _url(self, m: re.Match[_Bytes], i: int) -> tuple[int, int, _Bytes] | int:
        g = f"v{i}"
        info = m.group(g)
        if b":" not in info and len(info) < 20:
            return m.start(g)  # a plain login name (ssh://git@host); names inside still scanned
        self._count("url-credentials")
        return m.start(g), m.end(g), b"[REDACTED:url-credentials]"

    def _other_home(self, m: re.Match[_Bytes], i: int) -> tuple[int, int, _Bytes] | int:
        g = f"v{i}"
        name = m.group(g).decode("utf-8", "surrogateescape")
        if not _is_name(name) or re.fullmatch(r"user-\d+", name):
            return m.end()
        self._count("user")
        return m.start(g), m.end(g), self._pseudonym(name).encode()

    def _key_value(self, m: re.Match[_Bytes], i: int) -> tuple[int, int, _Bytes] | int:
        kg, vg = f"k{i}", f"v{i}"
        vs, ve = m.span(vg)
        has_key = kg in m.re.groupindex
        if has_key:
            key = m.group(kg).strip(b"\"'").lstrip(b"-")
            if not looks_secret_name(key.decode("ascii", "replace")):
                return m.end(kg)
        else:  # a bare "Bearer <token>"
            key = b"authorization"
        lkey = key.lower()
        buf = m.string
        value = buf[vs:ve]
        if value[:1] in (b'"', b"'") and len(value) >= 2:
            vs, ve = vs + 1, ve - 1  # keep the quotes
        if lkey in (b"cookie", b"set-cookie"):
            kind = "cookie"
        elif lkey in (b"authorization", b"proxy-authorization") or lkey.startswith(b"x-"):
            kind = "auth-header"
        else:
            kind = "secret-field"
        if kind != "secret-field" and buf[vs - 1:vs] not in (b'"', b"'"):
            # header values hold spaces ("Bearer x", "a=1; b=2"): take the rest of the line,
            # or up to the quote that opened the header ("Cookie: a=1; b=2")
            end = buf.find(b"\n", vs, len(buf))
            end = len(buf) if end < 0 else end
            ks = m.start(kg) if has_key else 0
            opener = buf[ks:ks + 1] if buf[ks:ks + 1] in (b'"', b"'") else buf[max(ks - 1, 0):ks]
            if opener in (b'"', b"'"):
                q = buf.find(opener, vs, end)
                end = q if q >= 0 else end
            ve = max(ve, end)
        value = buf[vs:ve].rstrip()
        ve = vs + len(value)
        if kind == "auth-header":
            parts = value.split(None, 1)
            if len(parts) == 2 and parts[0].lower() in P.AUTH_SCHEMES:
                vs += len(value) - len(value.lstrip()) + len(parts[0])
                vs += len(buf[vs:ve]) - len(buf[vs:ve].lstrip())
                value = buf[vs:ve]
        low = value.lower()
        if low in P.HARMLESS_VALUES or low.startswith(b"[redacted") or (
            value.isdigit() and len(value) <= 6
            and not any(w in lkey.decode("ascii", "replace").lower() for w in P.PASSWORD_WORDS)
        ):
            return m.end(kg) if has_key else m.end()
        self._count(kind)
        return vs, ve, f"[REDACTED:{kind}]".encode()

    def _process(self, buf: _Bytes, *, final: bool) -> tuple[_Bytes, int]:
        """Redact the whole lines of ``buf`` (all of it when ``final``).

        Returns the redacted bytes and how many input bytes they cover; the rest must be
        passed again with more data.
        """
        master = self._build()
        n = len(buf)
        if final:
            limit = n
        else:
            nl = buf.rfind(b"\n")
            if nl >= 0:
                limit = nl + 1
            elif n > MAX_SEGMENT:
                cut = max(buf.rfind(b" ", 0, MAX_SEGMENT), buf.rfind(b"\t", 0, MAX_SEGMENT))
                limit = cut + 1 if cut > MAX_SEGMENT // 2 else MAX_SEGMENT
            else:
                return b"", 0
        # private key blocks may span lines and chunks: take them whole, within bounds
        spans: list[tuple[int, int]] = []
        p = buf.find(P.PRIVATE_KEY_BEGIN, 0, limit)
        while p >= 0:
            stop = min(n, p + PRIVATE_KEY_MAX)
            if not final and stop < p + PRIVATE_KEY_MAX:
                limit = buf.rfind(b"\n", 0, p) + 1  # wait for the rest of the block
                break
            km = self._pem.match(buf, p, stop)
            if km is None:
                p = buf.find(P.PRIVATE_KEY_BEGIN, p + 1, limit)
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
            p = buf.find(P.PRIVATE_KEY_BEGIN, e, limit)
        while spans and spans[-1][1] > limit:  # waiting for a later block: redo this one too
            spans.pop()
        if spans:
            self._count("private-key", len(spans))
        parts: list[_Bytes] = []
        pos = 0
        for s, e in spans:
            parts.append(self._lines(master, buf, pos, s))
            parts.append(b"[REDACTED:private-key]")
            pos = e
        parts.append(self._lines(master, buf, pos, limit))
        out = b"".join(parts)
        for pat in self._custom:
            out = pat.sub(self._custom_repl, out)
        return out, limit

    def _custom_repl(self, m: re.Match[_Bytes]) -> _Bytes:
        self._count("custom")
        return b"[REDACTED:custom]"

    def _lines(self, master: re.Pattern[_Bytes], buf: _Bytes, a: int, b: int) -> _Bytes:
        """Redact buf[a:b]: the combined regex is tried only where a trigger says a match
        could start, anchored there; leftmost wins, then the first alternative."""
        if a >= b:
            return b""
        region = buf[a:b]
        starts: set[int] = set()
        low: _Bytes | None = None
        for hay_is_low, triggers in ((False, self._cs), (True, self._ci)):
            if hay_is_low:
                low = region.lower()
            hay = low if hay_is_low and low is not None else region
            for t, modes in triggers:
                i = hay.find(t)
                while i >= 0:
                    for mode in modes:
                        if mode >= 0:
                            starts.add(i - mode)
                        else:
                            self._run_starts(region, i, mode, starts)
                    i = hay.find(t, i + 1)
        if not starts:
            return region
        parts: list[_Bytes] = []
        last = 0  # in region coordinates
        pos = 0
        line_end = -1
        handlers = self._alts
        for s in sorted(starts):
            if s < pos or s < 0:
                continue
            if s >= line_end:
                line_end = region.find(b"\n", s)
                if line_end < 0:
                    line_end = len(region)
            m = master.match(buf, a + s, a + line_end)
            if m is None:
                continue
            name = m.lastgroup or "a0"
            res = handlers[int(name[1:])](m, int(name[1:]))
            if isinstance(res, int):
                pos = max(res - a, s + 1)
                continue
            vs, ve, rep = res
            parts.append(region[last:vs - a])
            parts.append(rep)
            last = ve - a
            pos = max(m.end() - a, last)
        parts.append(region[last:])
        return b"".join(parts)

    @staticmethod
    def _run_starts(region: _Bytes, i: int, mode: int, starts: set[int]) -> None:
        """Starts for a trigger inside an identifier (``my_token``) or after a URL scheme."""
        ls = region.rfind(b"\n", 0, i) + 1
        if mode == _SCHEME:
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


def _scan_plan(triggers: dict[bytes, set[int]]) -> tuple[tuple[bytes, tuple[int, ...]], ...]:
    """Drop a trigger when a shorter one that starts it yields the same starts: every
    trigger costs one pass over the text, the dominant cost of the engine."""
    keep = {
        t: modes for t, modes in triggers.items()
        if not any(o != t and t.startswith(o) and modes <= triggers[o] for o in triggers)
    }
    return tuple((t, tuple(sorted(m))) for t, m in keep.items())


def _host_names(host: str | None) -> tuple[str, ...]:
    """The FQDN and its first label, longest first, minus names too common to replace."""
    if not host:
        return ()
    names = {host, host.split(".", 1)[0]}
    return tuple(sorted((h for h in names if _is_name(h)), key=len, reverse=True))


def _compile_custom(pattern: str) -> re.Pattern[bytes]:
    try:
        re.compile(pattern)
        compiled = re.compile(pattern.encode("utf-8"))
    except re.error as e:
        raise ConfigError(f"invalid redact pattern {pattern!r}: {e}") from None
    if compiled.fullmatch(b"") is not None:
        raise ConfigError(f"redact pattern {pattern!r} matches the empty string")
    return compiled
