"""Credentials passed to a function by position, as a traceback's source line or a log of
code shows them: ``server.login("me@example.com", "x")`` (the classic SMTP authentication
error's traceback), ``ftplib.FTP(host, "alice", "x")``, ``aiohttp.BasicAuth("alice", "x")``,
``HTTPBasicAuth(...)``, ``user.set_password("x")``, ``keyring.set_password(svc, u, "x")``.
A keyword argument (``password="x"``) is a key/value the line rules already take; here only
a string literal at the position the function documents as its password goes.

And the values a traceback prints under a source line, each below the name it is the value
of (loguru's default ``diagnose=True``, better_exceptions)::

    connect("db.example.com", "alice", db_password)
    │                                  └ 'x'

And a literal compared with a secret name, the literal first (``if ("x" == my_password)``,
Yoda's order; the name first is a key/value the line rules take).
"""

from __future__ import annotations

from collections.abc import Callable

from rage.redact.patterns import AUTH_SCHEMES
from rage.redact.regexcache import compiled
from rage.redact.reprs import STRING, parse
from rage.redact.values import kept
from rage.sensitive import looks_secret_name

Count = Callable[[str], None]
REDACTED = b"[REDACTED:secret-field]"
LAST = -1

# the function's name (what ends the needle, before its `(`) -> the password's position
_POSITION: dict[bytes, int] = {
    b"login": 1, b"BasicAuth": 1, b"DigestAuth": 1, b"ProxyAuth": 1, b"FTP": 2,
    b"FTP_TLS": 2, b"set_password": LAST, b"make_password": 0, b"check_password": 0,
    b"pass_": 0,
}
_CALLS = tuple(name + b"(" for name in _POSITION)
# what each call holds (few: without Hyperscan each is one search of the whole text)
NEEDLES = (b"login(", b"Auth(", b"FTP", b"_password(", b"pass_(")
ANNOTATION = "\u2514 ".encode()  # `└ `, the mark of a value under its name
_MARKS = compiled(r"[ \u2502]*\u2514 (.*?)\r?")  # `│   └ value`
_NAME_AT = compiled(r"[A-Za-z_][\w.]*")


def positional_passwords(lines: list[bytes], at: list[int], count: Count) -> bool:
    """The password literal of each call of :data:`_POSITION`'s functions on lines ``at``."""
    hit = False
    for i in dict.fromkeys(at):
        line = lines[i]
        spans: list[tuple[int, int]] = []
        for needle in _CALLS:
            pos = line.find(needle)
            while pos >= 0:
                name = needle[:-1]
                before = line[pos - 1:pos]
                # the name whole (`smtp.login(`, `BasicAuth(`, `aiohttp.BasicAuth(`), not the
                # end of another (`relogin(`): a short name needs a dot or a boundary before it
                if not before or not (before.isalnum() or before == b"_") or name[:1].isupper():
                    spans += _password(line, pos + len(needle) - 1, _POSITION[name])
                pos = line.find(needle, pos + 1)
        for a, b in sorted(set(spans), reverse=True):
            line = line[:a] + REDACTED + line[b:]
            count("secret-field")
            hit = True
        lines[i] = line
    return hit


def _password(line: bytes, opener: int, position: int) -> list[tuple[int, int]]:
    """The span inside the quotes of the call's password argument, if it is a literal."""
    box = parse(line, opener)
    if box is None:
        return []
    args = [(a, b) for a, _colon, b in box[0] if not _keyword(line[a:b])]
    if not args or not -len(args) <= position < len(args):
        return []
    a, b = args[position]
    m = STRING.match(line[a:b])
    if m is None or kept(m[2], "password"):
        return []
    return [(a + len(m[1]), b - len(m[3]))]


def _keyword(arg: bytes) -> bool:
    """``password="x"``: an argument given by name (a literal that holds a ``=`` is none)."""
    return STRING.match(arg) is None and b"=" in arg


def annotated_values(lines: list[bytes], at: list[int], count: Count) -> bool:
    """Each ``└ value`` line whose mark stands under a secret name of the source line
    above the marks."""
    hit = False
    for i in dict.fromkeys(at):
        text = lines[i].decode("utf-8", "surrogateescape")
        m = _MARKS.fullmatch(text)
        if m is None:
            continue
        j = i - 1
        while j >= 0 and i - j < 64 and _is_marks(lines[j]):
            j -= 1
        if j < 0:
            continue
        source = lines[j].decode("utf-8", "surrogateescape")
        name = _NAME_AT.match(source, m.start(1) - 2)
        value = m[1].encode("utf-8", "surrogateescape")
        if name is None or not looks_secret_name(name[0].rsplit(".", 1)[-1]):
            continue
        s = STRING.match(value)
        if kept(s[2] if s is not None else value, name[0]) or value.startswith(b"<"):
            continue  # evidence, or an object's repr (`<function f at 0x7f...>`)
        new = s[1] + REDACTED + s[3] if s is not None else REDACTED
        lines[i] = (text[:m.start(1)].encode("utf-8", "surrogateescape") + new
                    + text[m.end(1):].encode("utf-8", "surrogateescape"))
        count("secret-field")
        hit = True
    return hit


def _is_marks(line: bytes) -> bool:
    """A line of marks only (``│     │``), or a mark and a value (``│  └ 'x'``)."""
    text = line.decode("utf-8", "replace").rstrip("\r")
    return bool(text.strip()) and (not text.strip(" \u2502") or _MARKS.fullmatch(text) is not None)


# a literal compared with a name, the literal first: `"x" == password`, `'x' !== pw`
COMPARE_NEEDLES = tuple(q + op for q in (b'"', b"'") for op in (b" ==", b"==", b" !=", b"!="))
_COMPARED = compiled(rb"(?<![\w\\])([\"'])((?:(?!\1)[^\\\r\n]|\\.){1,4096})\1[ \t]*"
                     rb"(?:===?|!==?)[ \t]*([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)")


def compared_literals(lines: list[bytes], at: list[int], count: Count) -> bool:
    """The literal each line ``at`` compares with a secret name, the literal first."""
    hit = False
    for i in dict.fromkeys(at):
        line = lines[i]
        spans = [m.span(2) for m in _COMPARED.finditer(line)
                 if looks_secret_name(m[3].rsplit(b".", 1)[-1].decode("ascii"))
                 and not kept(m[2], m[3].decode("ascii")) and m[2].lower() not in AUTH_SCHEMES]
        for a, b in reversed(spans):
            line = line[:a] + REDACTED + line[b:]
            count("secret-field")
            hit = True
        lines[i] = line
    return hit
