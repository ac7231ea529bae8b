"""Pre-filled "new issue" links and the one line to paste into a bug report."""

from __future__ import annotations

import shlex
import signal as _signal
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

TRUNCATED = "\n…(truncated)"
TITLE_MAX = 200


def _issues_base(issues_url: str) -> str:
    base = issues_url.strip()
    if "?" not in base:
        base = base.rstrip("/")
        if base.endswith("/issues"):
            base += "/new"
    return base


def _largest(n: int, fits: Callable[[int], bool]) -> int:
    """The largest k in [0, n] with fits(k), given fits is monotone and fits(0)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def new_issue_url(issues_url: str, title: str, body: str, *, limit: int = 7500) -> str:
    """``<issues_url>?title=...&body=...`` (``/issues`` gets ``/new``), at most ``limit`` chars.

    The body is shortened at a line boundary (a single overlong line at a character) and
    marked "…(truncated)"; cutting happens before encoding, so no percent-escape is broken.
    If even the bare address with the title does not fit, the title is shortened too.
    """
    base = _issues_base(issues_url)
    sep = "&" if "?" in base else "?"
    title = title[:TITLE_MAX]

    def build(t: str, b: str) -> str:
        return f"{base}{sep}title={quote(t, safe='')}&body={quote(b, safe='')}"

    url = build(title, body)
    if len(url) <= limit:
        return url
    if len(build(title, TRUNCATED.lstrip())) > limit:
        t = _largest(len(title), lambda k: len(build(title[:k], "")) <= limit)
        return build(title[:t], "") if t else base
    lines = body.splitlines(keepends=True)
    k = _largest(len(lines), lambda k: len(build(title, "".join(lines[:k]) + TRUNCATED)) <= limit)
    kept = "".join(lines[:k])
    if k < len(lines):
        rest = lines[k]
        c = _largest(len(rest), lambda c: len(build(title, kept + rest[:c] + TRUNCATED)) <= limit)
        if k == 0 or c > len(rest) // 2:
            kept += rest[:c]
    return build(title, kept.rstrip("\n") + TRUNCATED if kept else TRUNCATED.lstrip())


def describe_failure(info: dict[str, Any]) -> str:
    """``failed, exit 1`` / ``crashed, SIGSEGV`` from a bundle description (may be empty)."""
    parts = []
    if info.get("status"):
        parts.append(str(info["status"]))
    if info.get("signal"):
        try:
            parts.append(_signal.Signals(int(info["signal"])).name)
        except ValueError:
            parts.append(f"signal {info['signal']}")
    elif info.get("exit_code") is not None:
        parts.append(f"exit {info['exit_code']}")
    return ", ".join(parts)


def markdown_line(url: str, info: dict[str, Any]) -> str:
    """``[rage report for mytool (failed, exit 1)](URL)``: the line to paste."""
    what = info.get("app") or "a command"
    failure = describe_failure(info)
    label = f"rage report for {what}" + (f" ({failure})" if failure else "")
    label = label.replace("[", "(").replace("]", ")")
    return f"[{label}]({url.replace(')', '%29').replace(' ', '%20')})"


def issue_title(info: dict[str, Any]) -> str:
    what = info.get("app") or "command"
    failure = describe_failure(info) or "problem"
    argv = info.get("argv")
    cmd = f": {shlex.join(argv)}" if argv else ""
    return f"{what} {failure}{cmd}"[:TITLE_MAX]


def issue_body(url: str, summary: str | None) -> str:
    body = f"Bug report bundle (made with rage): {url}\n"
    if summary:
        body += "\n" + summary.strip() + "\n"
    return body
