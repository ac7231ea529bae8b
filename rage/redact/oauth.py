"""OAuth 2.0 authorization codes, where the name ``code`` alone says nothing.

A program that logs in through a browser (a CLI's ``auth login``, a local callback server)
prints the authorization response it received, ``GET /callback?code=X&state=Y`` (RFC 6749
4.1.2), and the token request it sends, ``grant_type=authorization_code&code=X&
redirect_uri=...`` (4.1.3), as a form body, a dict or JSON. With the PKCE verifier (or the
client secret) the code is worth a token until it is used or expires. ``code`` is no secret
name (``exit code=1``, ``?code=200``), so it goes only in those two shapes:

- a parameter string (``a=1&b=2``, or one after ``?`` or ``#``) whose parameters include
  ``code`` and ``state`` (or ``session_state``, ``redirect_uri``, ``code_verifier``, or
  ``grant_type=authorization_code``);
- ``"code": "X"`` (or ``'code': 'X'``) on a line that also says ``authorization_code``.

What is evidence stays (``?code=200&state=ok``: a number, as under any name that is not a
password's). ``code_verifier`` and ``device_code`` are secret names of their own
(:mod:`rage.sensitive`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rage.redact.regexcache import compiled
from rage.redact.values import kept

Count = Callable[[str], None]
REDACTED = b"[REDACTED:oauth-code]"

# where the rule looks: a `code` parameter after `?`, `&` or `#`, a form body's `&state=`,
# the grant type and the verifier; not `state=` alone, which a controller's log holds on
# every line (each needle's every place is a call into Python)
NEEDLES = (b"?code=", b"&code=", b"#code=", b"&state=", b"authorization_code",
           b"code_verifier=")

# a run of parameters: name=value, joined by `&`; a value holds no blank, quote, `&` or `#`
_PARAMS = compiled(rb"(?:(?<=[?#])|(?<![^\s\"'(\[{<,;=]))"
                   rb"[A-Za-z0-9_.~%\-]{1,64}=[^&\s\"'#<>]*(?:&[A-Za-z0-9_.~%\-]{1,64}="
                   rb"[^&\s\"'#<>]*)*")
_PARAM = compiled(rb"([^&=]*)=([^&]*)")
_COMPANIONS = frozenset({b"state", b"session_state", b"redirect_uri", b"code_verifier"})
_QUOTED_CODE = compiled(rb"""(["'])code\1[ \t]*:[ \t]*(["'])([^"'\\\s]{1,4096})\2""")


def authorization_codes(lines: list[bytes], at: list[int], count: Count) -> bool:
    """Redact the authorization codes on the lines ``at`` (where a needle is)."""
    hit = False
    for i in dict.fromkeys(at):
        line = lines[i]
        if b"code" not in line:
            continue  # `state=Running` of every line of a controller's log: one find each
        new = _in_parameters(line, count) if b"code=" in line else line
        if b"authorization_code" in new:
            new = _QUOTED_CODE.sub(lambda m: _quoted(m, count), new)
        if new != line:
            lines[i] = new
            hit = True
    return hit


def _in_parameters(line: bytes, count: Count) -> bytes:
    parts: list[bytes] = []
    last = 0
    for m in _PARAMS.finditer(line):
        run = m[0]
        params = [(p[1], p.span(2)) for p in _PARAM.finditer(run)]
        names = {name for name, _ in params}
        if b"code" not in names or not (
                names & _COMPANIONS or b"grant_type=authorization_code" in run):
            continue
        for name, (a, b) in params:
            if name == b"code" and not kept(run[a:b], "code"):
                parts += [line[last:m.start() + a], REDACTED]
                last = m.start() + b
                count("oauth-code")
    if not parts:
        return line
    parts.append(line[last:])
    return b"".join(parts)


def _quoted(m: re.Match[bytes], count: Count) -> bytes:
    if kept(m[3], "code"):
        return m[0]
    count("oauth-code")
    return m[0][:m.start(3) - m.start()] + REDACTED + m[0][m.end(3) - m.start():]
