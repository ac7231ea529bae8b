"""Values a program hard-wrapped at its console's width.

Rich folds a word longer than its console at the width (80 columns when its output is a
pipe, unless ``COLUMNS`` says otherwise; the terminal's width on a terminal), and ``fold``
any line (80 by default). A value under a secret name that such a wrap cut goes on at the
next line's start, and where it goes on is told two ways:

- lines of token bytes of one console-wide width after it (40 or more): the multi-line rule
  (:func:`rage.redact.multiline.redact_multiline`) takes those, then the leading token
  bytes of the line after them;
- the line it ends is exactly as wide as a console the run's output had (:data:`WIDTH`, or
  one the run recorded): the rest may be shorter than a line, so only the width tells that
  the value was cut. :func:`rest_after_cut` gives the rest, the leading token bytes of the
  next line, for the key/value handler to take with the value.

The rest must look like a token's tail (:func:`tail_of_token`): a digit, base64's padding or
mixed case in 8 bytes or more, and no ``=`` but padding; the next text's first word (`Done`,
`for the job`, a timestamp, `retries=3`) stays.
"""

from __future__ import annotations

from rage.redact.regexcache import compiled

WIDTH = 80  # Rich's console on a pipe, fold's default, most terminals' default
# a whole line of token bytes as wide as a console: the multi-line rule's to take
CONSOLE_LINE = compiled(rb"[A-Za-z0-9._~+/=\-]{40,}\r?")
# the leading token bytes of a line, up to a blank or the line's end
_LEAD = compiled(rb"[A-Za-z0-9._~+/=\-]+(?=[ \t\r\n]|\Z)")


def tail_of_token(run: bytes) -> bool:
    """The last piece of a wrapped token, rather than the next text's first word (a token
    that filled its last line exactly: `Done`, `for the job`): a digit, base64's padding,
    or mixed case in 8 bytes or more."""
    return any(48 <= c <= 57 for c in run) or run.endswith(b"=") or (
        len(run) >= 8 and run.lower() != run and run.upper() != run)


def rest_after_cut(buf: bytes, vs: int, ve: int, widths: frozenset[int]
                   ) -> tuple[bytes, int] | None:
    """The line break after the value ``buf[vs:ve]`` and where the rest of it ends on the
    next line, if its line is exactly as wide as one of ``widths`` and the next line starts
    with what can be a token's tail; else None.

    The value must end its line and be token bytes. A next line that is one run of token
    bytes (40 or more) is left to the multi-line rule, which also takes the lines after it.
    """
    brk = b"\n" if buf[ve:ve + 1] == b"\n" else b"\r\n" if buf[ve:ve + 2] == b"\r\n" else b""
    if not brk or _LEAD.fullmatch(buf, vs, ve) is None:
        return None
    line = buf[buf.rfind(b"\n", 0, vs) + 1:ve]
    width = len(line) if line.isascii() else len(line.decode("utf-8", "replace"))
    if width not in widths:
        return None
    start = ve + len(brk)
    m = _LEAD.match(buf, start)
    if m is None:
        return None
    run = m[0]
    if b"=" in run.rstrip(b"=") or not tail_of_token(run) or len(run) >= width:
        return None
    eol = buf.find(b"\n", start)
    if m.end() in (eol, eol - 1, len(buf)) and CONSOLE_LINE.fullmatch(
            buf, start, len(buf) if eol < 0 else eol) is not None:
        return None  # a line of token bytes: the multi-line rule's
    return brk, m.end()
