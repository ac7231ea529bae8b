"""What the engine does with a match: the replacement handlers of the combined regex and
the catalogue, the counts per kind and the pseudonyms of names.

A handler takes a match and the number of its alternative, and returns ``(start, end,
replacement)``, or, to decline, the position to resume at. :class:`Handlers` is the part
of :class:`rage.redact.engine.RedactionEngine` that holds them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from rage.redact import patterns as P
from rage.redact.known import secret_shaped
from rage.redact.regexcache import compiled
from rage.redact.reprs import LITERAL, STRING, parse
from rage.redact.values import (
    ESCAPED_EOL,
    LINE_NO,
    NEXT_VALUE,
    a_state_word,
    a_word,
    auth_method,
    chained,
    evidence,
    help_text,
    kept,
    log_message,
    netrc_context,
    not_a_value,
    prompt_prose,
    prose,
    sentence_after,
    token_shaped,
)
from rage.redact.wraps import rest_after_cut
from rage.sensitive import looks_harmless_value, looks_secret_name, password_name

Handler = Callable[["re.Match[bytes]", int], "tuple[int, int, bytes] | int"]
_LINE_ENDS = (b"\n", b"\r")  # a value that ends its line: a console's wrap may have cut it
_PSEUDONYM = compiled(r"user-\d+")
_HOMES_MAX = 4096  # names of other homes whose replacement is remembered
LEARN_MIN = 8  # shorter values are not learned (rage.redact.known.MIN_LEN)
LEARN_MAX = 1024  # values learned at most (a report's outputs rarely name more secrets)
# word characters for whole-word name matching; bytes >= 0x80 are parts of UTF-8 letters
_W = rb"A-Za-z0-9_\x80-\xff"
# what may not stand before a home directory, and after it (its match would be a longer name)
HOME_BEFORE = rb"A-Za-z0-9_.\-\x80-\xff"
HOME_AFTER = rb"A-Za-z0-9_.\-~+\x80-\xff"


_SECRET_KEYS: dict[bytes, bool] = {}  # looks_secret_name of the keys seen: a log repeats them


_AUTH_KEYS = frozenset({b"authorization", b"proxy-authorization"})
_ESCAPED_QUOTE = compiled(rb'(?:\\\\)*\\"')


def _secret_key(key: bytes) -> bool:
    known = _SECRET_KEYS.get(key)
    if known is None:
        known = looks_secret_name(key.decode("ascii", "replace"))
        if len(_SECRET_KEYS) < 4096:
            _SECRET_KEYS[key] = known
    return known


def is_name(name: str | None) -> bool:
    """True for a user or host name worth a pseudonym (long enough, not a shared word)."""
    return bool(name) and len(name or "") >= P.MIN_NAME_LEN and (
        (name or "").lower() not in P.COMMON_NAMES
    ) and not (name or "").isdigit()


def host_names(host: str | None) -> tuple[str, ...]:
    """The FQDN and its first label, longest first, minus names too common to replace."""
    if not host:
        return ()
    names = {host, host.split(".", 1)[0]}
    return tuple(sorted((h for h in names if is_name(h)), key=len, reverse=True))


# what test harnesses print before a test's name (`--- PASS: TestLogin (0.00s)`, automake's
# `PASS: auth.test`, `XPASS:`): a result, not a password
_TEST_STATUS = frozenset({b"PASS", b"XPASS"})
# a piece of a container's element: a string, a container, or a plain word (a shell array's
# `[db]="x"` is a container then a string; `=` between them is no piece)
_ELEMENT_PART = compiled(LITERAL + rb"|[(\[{]|[^\s=:()\[\]{},'\"]+")
_XTRACE_QUOTE = b"'\\''"  # how an xtrace writes a quote inside a single-quoted word
_IDENTIFIER = compiled(rb"[A-Za-z_][A-Za-z_.\-]*")  # a name: `user`, `db-password`
# a password another tool already masked: `****` (pip, SQLAlchemy, kombu), `[secure]` (httpx)
_MASKED = compiled(rb"\*{2,}|%2[aA](?:%2[aA])+|\[(?:secure|redacted|masked|hidden|filtered)\]"
                   rb"|<(?:redacted|masked|hidden)>", re.I)
_VAR_DUMP_CLASS = (b":private]=>", b":protected]=>", b"]=>")  # after `["key":"Class"`
_PY_PREFIX = compiled(rb"(?:[bB][rR]?|[rR][bB]?|[uU]8?|L|@)(?=[\"'])")


_COMPARISON = compiled(rb"[=!]=")
_NAME_START = compiled(rb"[A-Za-z_]")  # a name, not a literal (quoted, a prefix's, a number)
_LITERAL_START = compiled(rb"(?:[bB][rR]?|[rR][bB]?|[uU]8?|L|@)[\"']")


def _basic_credentials(value: bytes) -> bool:
    """Is ``value`` the base64 of ``user:password``, as HTTP Basic sends it?"""
    import binascii

    try:
        raw = binascii.a2b_base64(value + b"=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return False
    _user, colon, pw = raw.partition(b":")
    return bool(colon and pw) and all(32 <= c < 127 or c >= 0x80 for c in raw)


def _unquoted(info: bytes) -> str:
    from urllib.parse import unquote

    return unquote(info.decode("utf-8", "replace"))


def _placeholder_credential(value: bytes) -> bool:
    """``SSWS ${OKTA_API_TOKEN}``, ``Bearer <token>``: a scheme, then a placeholder where
    the credential goes (a README's, a config template's)."""
    parts = value.split(None, 1)
    if len(parts) != 2 or not parts[0].isalnum() or parts[1][:1] not in (b"$", b"<", b"{", b"%"):
        return False
    return looks_harmless_value(parts[1].decode("utf-8", "replace"))


def _literal_prefix(value: bytes) -> int:
    """The length of a Python literal's prefix before its quote (`b'x'`: 1), else 0."""
    m = _PY_PREFIX.match(value)
    return m.end() if m is not None else 0


class Handlers:
    """Counts, pseudonyms and the handlers that use them."""

    _counts: dict[str, int]
    _pseudonyms: dict[str, str]
    _next_user: int
    _cat_prefix_heads: dict[bytes, tuple[bytes, ...]]  # the catalogue's prefixes, by 3 bytes
    _cat_prefix_set: frozenset[bytes]  # a key that is a bare prefix (`pat:`) is a key
    _heads: dict[bytes, tuple[tuple[Any, Any], ...]]  # the catalogue's formats, by 3 bytes
    # in a worker process: other people's names unknown at fork time are written as
    # marker + name + NUL, for the parent to number in order of first appearance
    _defer: bytes | None
    _deferred: int
    _learned: dict[bytes, None] | None  # values redacted under a name, while learning
    _homes: dict[bytes, bytes]  # other homes' names: their pseudonym, or b"" if kept
    _home: str | None
    _user: str | None
    _hosts: tuple[str, ...]
    wrap_widths: frozenset[int]  # consoles' widths the text was wrapped at (rage.redact.wraps)

    def _count(self, kind: str, n: int = 1) -> None:
        self._counts[kind] = self._counts.get(kind, 0) + n

    def _learner(self) -> Callable[[bytes], None] | None:
        """What takes a value a multi-line rule removed, while learning (else None)."""
        return None if self._learned is None else self._learn

    def _learn(self, value: bytes) -> None:
        learned = self._learned
        if learned is not None and len(value) >= LEARN_MIN and len(learned) < LEARN_MAX and (
                secret_shaped(value)):
            learned[value] = None  # (a multi-line rule's name is not known here)

    def _inside(self, buf: bytes, a: int, b: int) -> bytes:
        """``buf[a:b]`` redacted on its own by the line rules (the engine's): the names in
        a prompt a match takes whole."""
        return buf[a:b]

    def _pseudonym(self, name: str) -> str:
        p = self._pseudonyms.get(name)
        if p is None:
            p = f"user-{self._next_user}"
            self._next_user += 1
            self._pseudonyms[name] = p
        return p

    def _add_names(self, add: Callable[[bytes, Handler], None],
                   trig: Callable[[bytes, bool], None]) -> None:
        terms: list[tuple[int, bytes, Handler, bytes, bool]] = []
        home = (self._home or "").rstrip("/")
        if len(home) >= 2:
            h = home.encode("utf-8", "surrogateescape")
            self._pseudonyms[home] = "~"
            terms.append((len(h), rb"(?<![" + HOME_BEFORE + rb"])" + re.escape(h)
                          + rb"(?![" + HOME_AFTER + rb"])", self._fixed("home", b"~"), h,
                          False))
        for host in self._hosts:
            b = host.encode("utf-8", "surrogateescape")
            self._pseudonyms.setdefault(host, "host-1")
            terms.append((len(b), rb"(?<![" + _W + rb"\-.])(?i:" + re.escape(b) + rb")(?!["
                          + _W + rb"\-])", self._fixed("host", b"host-1"),
                          b.lower(), True))
        if is_name(self._user):
            user = self._user or ""
            u = user.encode("utf-8", "surrogateescape")
            pseudo = self._pseudonym(user).encode()
            terms.append((len(u), rb"(?<![" + _W + rb"])" + re.escape(u) + rb"(?![" + _W
                          + rb"])", self._fixed("user", pseudo), u, False))
        for _n, regex, handler, trigger, insensitive in sorted(terms, key=lambda t: -t[0]):
            add(regex, handler)
            trig(trigger, insensitive)
        add(rb"(?<![" + HOME_BEFORE + rb"])/(?:home|Users)/(?P<v>[A-Za-z0-9_][A-Za-z0-9_.\-]"
            rb"{0,63})(?![" + HOME_BEFORE + rb"])", self._other_home)
        trig(b"/home/", False)
        trig(b"/Users/", False)

    # handlers: return (start, end, replacement) or, to decline, the position to resume at

    def _format_handler(self, kind: str, has_secret: bool) -> Handler:
        if not has_secret:
            return self._whole(kind)
        rep = f"[REDACTED:{kind}]".encode()

        def handle(m: re.Match[bytes], i: int) -> tuple[int, int, bytes] | int:
            s, e = m.span("secret")
            if s < 0:
                return m.start() + 1
            self._count(kind)
            return s, e, rep
        return handle

    def _whole(self, kind: str) -> Handler:
        return self._fixed(kind, f"[REDACTED:{kind}]".encode())

    def _fixed(self, kind: str, rep: bytes) -> Handler:
        def handle(m: re.Match[bytes], i: int) -> tuple[int, int, bytes]:
            self._count(kind)
            return m.start(), m.end(), rep
        return handle

    def _url(self, m: re.Match[bytes], i: int) -> tuple[int, int, bytes] | int:
        g = f"v{i}"
        info = m.group(g)
        if b":" not in info and (len(info) < 20 or not token_shaped(_unquoted(info))):
            # a login name (ssh://git@host, akka.tcp://sparkExecutorActorSystem@host, an
            # e-mail address); names inside still scanned. A token alone is token-shaped
            return m.start(g)
        if _MASKED.fullmatch(info.partition(b":")[2]):
            return m.start(g)  # what the tool already hid: pip's `u:****@`, httpx's `[secure]`
        self._count("url-credentials")
        return m.start(g), m.end(g), b"[REDACTED:url-credentials]"

    def _other_home(self, m: re.Match[bytes], i: int) -> tuple[int, int, bytes] | int:
        g = f"v{i}"
        raw = m.group(g)
        rep = self._homes.get(raw)  # what was decided for this name before
        if rep is None:
            name = raw.decode("utf-8", "surrogateescape")
            if not is_name(name) or _PSEUDONYM.fullmatch(name):
                rep = b""
            elif self._defer is not None and name not in self._pseudonyms:
                self._count("user")
                self._deferred += 1
                return m.start(g), m.end(g), self._defer + raw + b"\x00"
            else:
                rep = self._pseudonym(name).encode()
            if len(self._homes) < _HOMES_MAX:
                self._homes[raw] = rep
        if not rep:
            return m.end()
        self._count("user")
        return m.start(g), m.end(g), rep

    def _format_end(self, buf: bytes, at: int) -> int:
        """Where the catalogue format that matches at ``at`` ends; 0 if none does."""
        for search, _handler in self._heads.get(buf[at:at + 3], ()):
            m = search.match(buf, at)
            if m is not None:
                return int(m.end())
        return 0

    def _container(self, m: re.Match[bytes], kg: str, vs: int, key: bytes
                   ) -> tuple[int, int, bytes] | int:
        """A list or tuple under a secret name, on its line: ``'auth': ('alice', 'x')``,
        ``"password": ["x"]``, a shell array ``CREDS=([db]="x" [api]="y")``. Its strings
        (and plain words) go; containers inside it are redacted as text. Nothing changes
        (the scan goes on inside) when it holds no secret, or does not close on its line."""
        buf = m.string
        box = parse(buf, vs)
        if box is None:
            return m.end(kg)
        skey = key.decode("ascii", "replace")
        out: list[bytes] = []
        last, hits = vs, 0
        for a, _colon, b in box[0]:
            pos = a
            while (t := _ELEMENT_PART.search(buf, pos, b)) is not None:
                part, at = t[0], t.start()
                pos = t.end()
                if part[:1] in b"([{":
                    box_in = parse(buf, at)
                    pos = box_in[2] if box_in is not None else b
                    out += [buf[last:at], self._inside(buf, at, pos)]
                    last = pos
                    continue
                sm = STRING.match(part)
                inner = sm[2] if sm is not None else part
                if (sm is None and _IDENTIFIER.fullmatch(part)) or kept(inner, skey):
                    continue  # (a name in code: `auth=(user, password)`)
                rep = sm[1] + b"[REDACTED:secret-field]" + sm[3] if sm is not None else (
                    b"[REDACTED:secret-field]")
                out += [buf[last:at], rep]
                last = pos
                hits += 1
        if not hits:
            return m.end(kg)
        self._count("secret-field", hits)
        out.append(buf[last:box[2]])
        return vs, box[2], b"".join(out)

    def _key_value_form(self, name: str) -> Handler:
        forced = name.startswith("forced-")
        netrc = name == "forced-netrc"
        curl_user = name == "forced-curl-user"

        def handle(m: re.Match[bytes], i: int) -> tuple[int, int, bytes] | int:
            if netrc and not netrc_context(m.string, m.start(), m.end()):
                return m.start() + 1
            if curl_user and not token_shaped(m.group(f"v{i}").decode("utf-8", "replace")):
                return m.end(f"k{i}")  # a name, pseudonymised as any: `with user 'alice'`
            return self._key_value(m, i, forced=forced, form=name)
        return handle

    def _key_value(self, m: re.Match[bytes], i: int, *, forced: bool = False,
                   form: str = "") -> tuple[int, int, bytes] | int:
        kg, vg = f"k{i}", f"v{i}"
        vs, ve = m.span(vg)
        has_key = kg in m.re.groupindex
        if has_key:
            raw_key = m.group(kg)
            key = raw_key.strip(b"\"'").lstrip(b"-")
            if not forced and not _secret_key(key):
                return m.end(kg)
            if raw_key in _TEST_STATUS and m.string[m.end(kg):vs].strip() == b":":
                return m.end(kg)  # a test's result: Go's `--- PASS: TestLogin`, automake's
            heads = self._cat_prefix_heads.get(key[:3])
            if heads is not None and key.startswith(heads) and key not in self._cat_prefix_set:
                # `"token-abcde:...` is a provider token, not a key: its format takes it (if
                # it matches: `secret_key:` starts like a Notion token and is a key)
                ks = m.start(kg) + (raw_key[:1] in (b'"', b"'"))
                if self._format_end(m.string, ks + len(raw_key.strip(b"\"'")) - len(key)):
                    return ks
            if form == "inline" and prose(m.string, m.start(kg), raw_key, m.group(vg)) and not (
                    key.lower() in _AUTH_KEYS and m.group(vg).lower() in P.AUTH_SCHEMES):
                return m.end(kg)  # `auth: token refreshed`; not `... Authorization: Basic X`
            if form == "cli-arg" and (help_text(m.string, m.end(kg), vs, m.group(vg)) or (
                    m.group(vg).isdigit() and len(m.group(vg)) == 1) or auth_method(
                    key.decode("ascii", "replace"), m.group(vg))):
                return m.end(kg)  # (one digit is no secret: ffmpeg's `-pass 2`)
            if key.lower() in (b"key", b"name") and NEXT_VALUE.match(m.string, ve):
                return m.end(kg)  # `key="ClearTextPassword" value="..."`: the pair form's
            if form == "inline" and _COMPARISON.search(m.string, m.end(kg), vs) and (
                    _NAME_START.match(m.string, vs)) and not _LITERAL_START.match(m.string, vs):
                return m.end(kg)  # `if token != expected:`: code compares with a name
        else:  # a bare "Bearer <token>", "Basic <base64>"
            key = b"authorization"
            if form == "basic" and not _basic_credentials(m.group(vg)):
                return m.end()
        lkey = key.lower()
        buf = m.string
        value = buf[vs:ve]
        if has_key and value[:1] in (b"(", b"["):
            return self._container(m, kg, vs, key)
        if buf.startswith(_XTRACE_QUOTE, vs):  # bash's quote in a quoted word: '\''X'\''
            eol = buf.find(b"\n", vs)
            close = buf.find(_XTRACE_QUOTE, vs + 4, len(buf) if eol < 0 else eol)
            if close > vs + 4:
                vs, ve = vs + 4, close
                value = buf[vs:ve]
        esc = _ESCAPED_QUOTE.match(value) if value[:1] == b"\\" else None
        if esc is not None and value.endswith(esc[0]) and len(value) >= 2 * len(esc[0]):
            q = len(esc[0])  # keep the escaped quotes (`\"`, or `\\\"` escaped twice)
            vs, ve = vs + q, ve - q
        elif buf.startswith(_VAR_DUMP_CLASS, ve):
            return m.end(kg)  # var_dump's `["apiKey":"Config":private]=>`: a class's name
        elif (q := _literal_prefix(value)) < len(value) - 1 and value[q:q + 1] in (b'"', b"'"):
            # keep the quotes, and a Python literal's prefix (`b'x'`); a line cropped before
            # the closing quote keeps the opening one
            vs, ve = vs + q + 1, ve - (value[-1:] == value[q:q + 1])
        else:
            # a value that is a known format is taken whole, whatever separator it holds:
            # the `,` of an argon2 hash ends an unquoted value, the rest of the hash with it
            ve = max(ve, self._format_end(buf, vs))
            if form == "line" and has_key and raw_key[:1] in (b'"', b"'") and (
                    buf[ve - 1:ve] == b","):
                ve -= 1  # pretty-printed JSON or a dict's repr: `"client_key": null,`
        if lkey in (b"cookie", b"set-cookie"):
            kind = "cookie"
        elif lkey in _AUTH_KEYS or lkey.startswith(b"x-"):
            kind = "auth-header"
        else:
            kind = "secret-field"
        if kind != "secret-field" and form != "basic" and buf[vs - 1:vs] not in (b'"', b"'"):
            # header values hold spaces ("Bearer x", "a=1; b=2"): take the rest of the line,
            # or up to the quote that opened the header ("Cookie: a=1; b=2")
            end = buf.find(b"\n", vs, len(buf))
            end = len(buf) if end < 0 else end
            esc = ESCAPED_EOL.search(buf, vs, end)  # a dump: `...\r\nHost: x\r\n'`
            end = esc.start() if esc is not None else end
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
                if parts[0].lower() in P.TOKEN_SCHEMES:
                    # one token68 word (RFC 9110 11.4): what follows is the log line's;
                    # unless a known format of more than one word starts there (a key
                    # log's line), which is taken whole
                    value = value.split(None, 1)[0]
                    ve = max(vs + len(value), min(self._format_end(buf, vs), ve))
                    value = buf[vs:ve]
        low = value.lower()
        skey = lkey.decode("ascii", "replace")
        if low.strip() in P.AUTH_SCHEMES or (form == "inline" and chained(buf, vs, ve)):
            return m.end(kg) if has_key else m.end()  # `auth = 'Basic ' + b64`, `a = b = ''`
        password = password_name(skey)
        if kind == "auth-header" and _placeholder_credential(value):
            return m.end(kg) if has_key else m.end()  # `Authorization: SSWS ${OKTA_TOKEN}`
        if low in P.HARMLESS_VALUES or low.startswith(b"[redacted") or LINE_NO.match(value) or (
            not_a_value(value) or evidence(value, password) or sentence_after(buf, vs)
            or (form not in ("cli-arg", "setenv")
                and (a_state_word(lkey, value) or log_message(key, value)
                     or (kind == "secret-field" and a_word(key, value, password))))
        ) or (
            looks_harmless_value(value.decode("utf-8", "replace"), skey)
        ):
            return m.end(kg) if has_key else m.end()
        if form == "forced-prompt" and prompt_prose(buf[m.start():m.start(kg)], value):
            return m.end(kg)
        self._count(kind)
        # a value a console's width cut: its rest starts the next line (rage.redact.wraps)
        rest = (rest_after_cut(buf, vs, ve, self.wrap_widths) if kind == "secret-field" and (
            buf[ve:ve + 1] in _LINE_ENDS) and form != "forced-prompt" else None)
        # learned only when sure: a password's value, or a value shaped like a token (what a
        # name like `sessionid` or `key` stands before is often an identifier: learned, a
        # wrong guess was removed everywhere else too)
        if self._learned is not None and kind != "cookie" and len(value) >= LEARN_MIN and (
                len(self._learned) < LEARN_MAX) and not self._format_end(buf, vs) and (
                password or secret_shaped(value)):
            self._learned[value] = None  # (a provider's format is found anywhere anyway)
            if rest is not None and len(self._learned) < LEARN_MAX:
                self._learned[value + buf[ve + len(rest[0]):rest[1]]] = None  # unwrapped
        rep = f"[REDACTED:{kind}]".encode()
        if form == "forced-prompt":  # what the prompt names: `for key '/home/alice/.ssh/k'`
            head = self._inside(buf, m.start(), vs)
            if head != buf[m.start():vs]:
                return m.start(), ve, head + rep
        if rest is not None:  # the line break stays: the lines keep their number
            return vs, rest[1], rep + rest[0] + rep
        return vs, ve, rep
