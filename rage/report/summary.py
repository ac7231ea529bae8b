"""summary.md: the page a maintainer reads first when a bundle arrives.

Built only from data that has already been redacted; this module never reads the run store.
"""

from __future__ import annotations

import re
import shlex
import signal as _signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rage.config import format_size

TAIL_LINES = 40


def strip_ansi(text: str) -> str:
    """Plain text as the terminal showed it: escapes removed, ``\r`` redraws and backspaces
    replayed (the redaction engine's own normalisation, :mod:`rage.redact.normalize`).

    Bundle members were normalised *before* they were matched, so on them this changes
    nothing: the summary never re-joins a secret that escapes had split (normalising
    twice is normalising once).
    """
    from rage.redact.normalize import normalize

    raw = normalize(text.encode("utf-8", "surrogateescape"))
    return raw.decode("utf-8", "surrogateescape").replace("\r\n", "\n").rstrip("\r")


def tail_lines(data: bytes, n: int = TAIL_LINES) -> str:
    """The last ``n`` non-empty-trailing lines of ``data`` as clean text."""
    text = strip_ansi(data.decode("utf-8", "replace")).rstrip("\n")
    return "\n".join(text.split("\n")[-n:]) if text else ""


def _fence(text: str, lang: str = "") -> str:
    # a fence longer than any backtick run inside keeps the block intact
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def signal_name(sig: int | None) -> str | None:
    if not sig:
        return None
    try:
        return _signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


@dataclass(frozen=True)
class SummaryInput:
    """Everything the summary shows, already redacted."""

    app: str
    meta: Mapping[str, Any]
    rage_version: str
    note: str | None = None
    traceback: str | None = None
    outputs: Sequence[tuple[str, str]] = ()  # (stream label, its last lines), most telling first
    facts: Sequence[tuple[str, str]] = ()
    contents: Sequence[tuple[str, int]] = ()
    truncated: Sequence[str] = field(default_factory=tuple)
    culprit: Mapping[str, Any] | None = None  # whose bug (rage.report.culprit), when not the app's
    changes: str | None = None  # what changed since it last worked (rage.report.changes.headline)


def environment_facts(sections: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Pick OS, architecture and Python from collector data, whatever keys they used."""
    facts: list[tuple[str, str]] = []
    plat = sections.get("platform") or {}
    py = sections.get("python") or {}

    def first(d: Mapping[str, Any], *keys: str) -> str | None:
        for k in keys:
            v = d.get(k)
            if isinstance(v, str | int | float) and str(v):
                return str(v)
        return None

    os_raw = plat.get("os")
    os_info: Mapping[str, Any] = os_raw if isinstance(os_raw, Mapping) else {}
    os_name = first(os_info, "pretty_name", "name") or first(plat, "pretty_name", "os", "system")
    if os_name:
        kernel = first(plat, "kernel")
        system = first(plat, "system")
        extra = " ".join(x for x in (system, kernel) if x and x not in os_name)
        facts.append(("OS", f"{os_name} ({extra})" if extra else os_name))
    arch = first(plat, "machine", "arch", "architecture")
    if arch:
        facts.append(("Arch", arch))
    for key, label in (("libc", "libc"), ("container", "Container"), ("ci", "CI")):
        v = first(plat, key)
        if v:
            facts.append((label, v))
    pyv = first(py, "version", "python_version") or first(plat, "python", "python_version")
    if pyv:
        impl = first(py, "implementation")
        facts.append(("Python", f"{impl} {pyv}" if impl and impl not in pyv else pyv))
    return facts


def culprit_line(app: str, c: Mapping[str, Any]) -> str:
    """``The crash is inside requests 2.32.3 (`path`), not mytool's own code; its tracker:
    URL``."""
    what = str(c.get("name")) + (f" {c['version']}" if c.get("version") else "")
    if c.get("kind") not in (None, "python"):
        what = f"the {c['kind']} package {what}"
    where = f" (`{c['where']}`)" if c.get("where") else ""
    tracker = f"; its issue tracker: {c['tracker']}" if c.get("tracker") else ""
    return f"The crash is inside {what}{where}, not {app}'s own code{tracker}."


def render(inp: SummaryInput) -> str:
    """The markdown summary of one report."""
    m = inp.meta
    status = str(m.get("status") or "unknown")
    argv_raw = m.get("argv")
    argv: list[Any] = argv_raw if isinstance(argv_raw, list) else []
    lines = [f"# {inp.app}: {status} run", ""]
    rows: list[tuple[str, str]] = [("Command", f"`{shlex.join(str(a) for a in argv)}`")]
    rows.append(("Status", status))
    sig = signal_name(m.get("signal") if isinstance(m.get("signal"), int) else None)
    if sig:
        rows.append(("Signal", sig))
    elif m.get("exit_code") is not None:
        rows.append(("Exit code", str(m.get("exit_code"))))
    if isinstance(m.get("duration_s"), int | float):
        rows.append(("Duration", f"{m['duration_s']:.3f} s"))
    for key, label in (("started_at", "Started"), ("cwd", "Working dir")):
        if m.get(key):
            rows.append((label, f"`{m[key]}`" if key == "cwd" else str(m[key])))
    rows.append(("App version", str(m.get("app_version") or "unknown")))
    rows.append(("rage version", inp.rage_version))
    rows.append(("Run id", str(m.get("id") or "-")))
    lines += [f"- **{k}:** {v}" for k, v in rows]
    if inp.note:
        lines += ["", "## What the user says", "", inp.note.strip()]
    if inp.traceback and inp.traceback.strip():
        lines += ["", "## Traceback", "", _fence(strip_ansi(inp.traceback.rstrip("\n")))]
    else:
        for label, tail in inp.outputs:
            n = tail.count("\n") + 1
            lines += ["", f"## Last {n} lines of {label}", "", _fence(tail)]
    if inp.changes:
        lines += ["", "## Since it last worked", "", inp.changes]
    if inp.culprit:
        lines += ["", "## Whose bug", "", culprit_line(inp.app, inp.culprit)]
    if inp.facts:
        lines += ["", "## Environment", ""]
        lines += [f"- **{k}:** {v}" for k, v in inp.facts]
    if inp.truncated:
        lines += ["", "## Truncated", ""]
        lines += [f"- {t}" for t in inp.truncated]
    if inp.contents:
        lines += ["", "## Bundle contents", ""]
        lines += [f"- `{name}` ({format_size(size)})" for name, size in inp.contents]
    return "\n".join(lines) + "\n"
