"""Credentials passed to a function by position, as a traceback's source line or a log of
code shows them: ``server.login("me@example.com", "x")`` (the classic SMTP authentication
error's traceback), ``ftplib.FTP(host, "alice", "x")``, ``aiohttp.BasicAuth("alice", "x")``,
``HTTPBasicAuth(...)``, ``user.set_password("x")``, ``keyring.set_password(svc, u, "x")``.
A keyword argument (``password="x"``) is a key/value the line rules already take; here only
a string literal at the position the function documents as its password goes.
"""

from __future__ import annotations

from collections.abc import Callable

from rage.redact.reprs import STRING, parse
from rage.redact.values import kept

Count = Callable[[str], None]
REDACTED = b"[REDACTED:secret-field]"
LAST = -1

# the function's name (what ends the needle, before its `(`) -> the password's position
_POSITION: dict[bytes, int] = {
    b"login": 1, b"BasicAuth": 1, b"DigestAuth": 1, b"ProxyAuth": 1, b"FTP": 2,
    b"FTP_TLS": 2, b"set_password": LAST, b"make_password": 0, b"check_password": 0,
    b"pass_": 0,
}
NEEDLES = tuple(name + b"(" for name in _POSITION)


def positional_passwords(lines: list[bytes], at: list[int], count: Count) -> bool:
    """The password literal of each call of :data:`_POSITION`'s functions on lines ``at``."""
    hit = False
    for i in dict.fromkeys(at):
        line = lines[i]
        spans: list[tuple[int, int]] = []
        for needle in NEEDLES:
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
