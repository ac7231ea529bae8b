"""Values as a person reads them: sizes, times, durations, yes/no, nothing for None."""

from __future__ import annotations

import math
import signal as _signal
from datetime import UTC, datetime
from typing import Any

NONE = "\u2014"  # an em dash: "nothing here", never the word null


def size(n: Any) -> str:
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        return NONE
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    return f"{n} B"  # unreachable


def _parse_time(v: Any) -> datetime | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        try:
            return datetime.fromtimestamp(v, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(v, str) and v:
        try:
            t = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            return None
        return t if t.tzinfo else t.replace(tzinfo=UTC)
    return None


def when(v: Any, now: datetime | None = None) -> str:
    """``2026-01-01 12:00:05 UTC (3 days ago)``; the raw text when it is not a time."""
    t = _parse_time(v)
    if t is None:
        return NONE if v in (None, "") else str(v)
    text = t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    ago = ((now or datetime.now(UTC)) - t).total_seconds()
    if ago >= 0:
        text += f" ({_ago(ago)})"
    return text


def _ago(s: float) -> str:
    for unit, length in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if s >= length:
            n = int(s // length)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def duration(v: Any) -> str:
    if (not isinstance(v, int | float) or isinstance(v, bool) or v < 0
            or not math.isfinite(v)):
        return NONE
    if v < 1:
        return f"{v * 1000:.0f} ms"
    if v < 60:
        return f"{v:.1f} s"
    m, s = divmod(int(v), 60)
    if m < 60:
        return f"{m} min {s} s"
    h, m = divmod(m, 60)
    return f"{h} h {m} min"


def value(v: Any, limit: int = 300) -> str:
    """A scalar for a table cell: yes/no, a dash for nothing, lists joined, long text cut."""
    if v is None or v == "":
        return NONE
    if v is True:
        return "yes"
    if v is False:
        return "no"
    if isinstance(v, list):
        text = ", ".join(value(x, limit) for x in v[:50]) + (" …" if len(v) > 50 else "")
    else:
        text = str(v)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more)"


def exit_text(run: dict[str, Any]) -> str:
    sig = run.get("signal")
    if sig:
        try:
            return f"killed by {_signal.Signals(int(sig)).name}"
        except (ValueError, TypeError, OverflowError):  # OverflowError: int(Infinity)
            return f"signal {value(sig)}"
    code = run.get("exit_code")
    return NONE if code is None else f"exit code {value(code)}"
