"""What the bundle page shows, bounded: the facts first, then the crash, the output, the
environment, and a download link for everything that is not shown in full.

Every list and text taken from a bundle is capped here (lines, characters, rows, members),
so the page's size and the work to build it are bounded whatever the upload holds; what is
left out is one click away (``/b/<id>/files/<member>`` or the whole bundle).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from rage.bundle import CappedMember
from rage.server import human, tracebacks
from rage.server.ansi import Styler, strip
from rage.server.limits import visible
from rage.server.storage import StoredBundle

MAX_LOG_LINES = 1000  # per log: the end of it
MAX_LINE_CHARS = 2000
TEXT_BUDGET = 768 * 1024  # characters of member text on one page, all logs together
MAX_ROWS = 300  # per table
ROW_BUDGET = 2000  # table rows on one page
MAX_RECORDS = 500
MAX_ATTACHMENTS = 20
MAX_COLLECTORS = 40
LOGS = ("run/output.log", "run/stdout.log", "run/stderr.log")
TRACEBACKS = (("run/traceback.txt", "Traceback"), ("run/fatal.log", "Fatal error"))


def wanted() -> Callable[[str, int], bool]:
    """The member filter for the page's one read of the bundle (bounded in count)."""
    counts = {"att": 0, "col": 0}

    def select(name: str, _size: int) -> bool:
        if name in LOGS or name == "run/log.jsonl" or name in dict(TRACEBACKS):
            return True
        for prefix, key, most in (("run/attachments/", "att", MAX_ATTACHMENTS),
                                  ("collectors/", "col", MAX_COLLECTORS)):
            if name.startswith(prefix):
                counts[key] += 1
                return counts[key] <= most
        return False

    return select


@dataclass(frozen=True)
class Links:
    url: str
    raw_url: str

    def member(self, name: str) -> str:
        return f"{self.url}/files/{quote(name)}"


class _Budget:
    def __init__(self) -> None:
        self.text = TEXT_BUDGET
        self.rows = ROW_BUDGET

    def take_rows(self, n: int, most: int = MAX_ROWS) -> int:
        n = max(0, min(n, most, self.rows))
        self.rows -= n
        return n


def command(argv: Any, limit: int = 2000) -> str:
    """A recorded argv as one shell-quoted line (escape sequences dropped), capped."""
    if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
        return human.value(strip(shlex.join(argv)), limit)
    return human.value(argv, limit)


def _log(member: CappedMember, title: str, ident: str, links: Links,
         budget: _Budget) -> dict[str, Any]:
    text = member.text
    first = member.lines_before + 1
    notes = []
    if member.cut:
        notes.append(f"the first {human.size(member.size - len(member.data))} of "
                     f"{human.size(member.size)} are not shown")
    if len(text) > budget.text:
        cut = len(text) - budget.text
        first += text.count("\n", 0, cut)
        text = text[cut:]
        notes.append("the page's size limit was reached")
    lines = text.splitlines()
    if len(lines) > MAX_LOG_LINES:
        first += len(lines) - MAX_LOG_LINES
        notes.append(f"only the last {MAX_LOG_LINES} lines are shown")
        lines = lines[-MAX_LOG_LINES:]
    budget.text -= sum(len(x) for x in lines)
    marked = tracebacks.line_spans([strip(x) for x in lines])
    styler = Styler()
    rows = []
    for i, full in enumerate(lines):
        line = full if len(full) <= MAX_LINE_CHARS else (
            full[:MAX_LINE_CHARS] + f" … ({len(full) - MAX_LINE_CHARS} more characters)")
        rows.append((first + i, styler.line(line), i in marked))
    summary = [f"lines {first:,}\u2013{first + len(lines) - 1:,} shown, the end of the file "
               f"({'; '.join(notes)})"] if notes and lines else notes
    return {"title": visible(title), "ident": ident, "rows": rows, "notes": summary,
            "download": links.member(member.name), "size": human.size(member.size)}


def _records(member: CappedMember, links: Links, budget: _Budget) -> dict[str, Any]:
    lines = member.text.splitlines()
    n = budget.take_rows(len(lines), MAX_RECORDS)
    rows = []
    for line in lines[len(lines) - n:]:  # not lines[-n:]: n may be 0
        if budget.text <= 0:
            break  # the page's text budget also bounds long messages and tracebacks
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            rec = None
        if not isinstance(rec, dict):
            rec = {"msg": line}
        level = human.value(rec.get("level"), 20)
        msg = strip(human.value(rec.get("msg"), MAX_LINE_CHARS))
        exc = strip(str(rec["exc"])[-8000:]) if rec.get("exc") else ""
        budget.text -= len(msg) + len(exc)
        rows.append({"t": _record_time(rec.get("t")), "level": level,
                     "cls": "".join(c for c in level.upper() if c.isalpha()),
                     "logger": human.value(rec.get("logger"), 200), "msg": msg, "exc": exc})
    left_out = len(lines) - len(rows)
    more = ""
    if member.cut:
        more = (f"earlier records (the first {human.size(member.size - len(member.data))} of "
                f"{human.size(member.size)}) are not shown")
    elif left_out:
        more = f"{left_out} earlier records are not shown"
    return {"rows": rows, "more": more, "download": links.member(member.name)}


def _record_time(t: Any) -> str:
    """A log record's time (``log.jsonl`` keeps epoch seconds) as ISO 8601 UTC, to the
    millisecond; anything else as it is."""
    if isinstance(t, int | float) and not isinstance(t, bool):
        from datetime import UTC, datetime

        try:
            return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")
        except (OverflowError, OSError, ValueError):
            pass
    return human.value(t, 40)


def _flatten(data: Any, prefix: str = "", out: list[tuple[str, str]] | None = None,
             limit: int = MAX_ROWS + 1) -> list[tuple[str, str]]:
    """Nested JSON as (dotted key, readable value) rows, stopping after ``limit`` rows."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(data, dict) and data:
        for k, v in data.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out, limit)
            if len(out) >= limit:
                break
    elif isinstance(data, list) and any(isinstance(v, dict | list) for v in data):
        for i, v in enumerate(data):
            _flatten(v, f"{prefix}[{i}]", out, limit)
            if len(out) >= limit:
                break
    elif prefix:
        out.append((prefix, human.value(data)))
    return out


def _parse_section(member: CappedMember) -> Any:
    if member.cut:
        return None
    try:
        # Infinity and NaN become null: a section's numbers are shown, and JSON has neither
        return json.loads(member.text, parse_constant=lambda _name: None)
    except (ValueError, RecursionError):
        return None


def _collector(member: CappedMember, section: Any, links: Links,
               budget: _Budget) -> dict[str, Any]:
    name = visible(member.name.removeprefix("collectors/").removesuffix(".json"))
    view: dict[str, Any] = {"name": name, "download": links.member(member.name),
                            "status": "unreadable", "kind": "note", "rows": [], "more": 0,
                            "note": "too large or not JSON: download it to read it"}
    if not isinstance(section, dict):
        return view
    status = human.value(section.get("status"), 40)
    view.update(name=human.value(section.get("name") or name, 80), status=status,
                duration=human.duration(section.get("duration_s")),
                note=human.value(section.get("error"), 2000)
                if section.get("error") else "")
    data = section.get("data")
    if status != "ok" or data is None:
        view["kind"] = "note"
        return view
    dists = data.get("distributions") if isinstance(data, dict) else None
    if isinstance(dists, list):
        n = budget.take_rows(len(dists))
        view.update(kind="packages", more=len(dists) - n, rows=[
            (human.value(d.get("name"), 200), human.value(d.get("version"), 80),
             human.value(d.get("location"), 300)) for d in dists[:n] if isinstance(d, dict)])
        return view
    rows = _flatten(data)
    n = budget.take_rows(len(rows))
    view.update(kind="table", rows=rows[:n], more=len(rows) - n)
    return view


def _get(d: Any, *path: str) -> Any:
    for key in path:
        d = d.get(key) if isinstance(d, dict) else None
    return d


def _environment_facts(collectors: Mapping[str, Any]) -> list[tuple[str, str]]:
    """OS and Python, read from the platform and python collectors for the top table."""
    facts = []
    platform = _get(collectors.get("platform"), "data")
    if isinstance(platform, dict):
        os_name = _get(platform, "os", "pretty_name") or " ".join(
            str(x) for x in (_get(platform, "os", "name"), _get(platform, "os", "version"))
            if x)
        extra = ", ".join(str(x) for x in (platform.get("kernel"), platform.get("machine"))
                          if x)
        facts.append(("OS", human.value(f"{os_name} ({extra})" if extra else os_name, 200)))
    py = _get(collectors.get("python"), "data")
    if isinstance(py, dict):
        text = " ".join(str(x) for x in (py.get("implementation"), py.get("version")) if x)
        if py.get("virtualenv") is True:
            text += " (virtualenv)"
        facts.append(("Python", human.value(text, 200)))
    return facts


def _sections(m: Mapping[str, Any]) -> list[dict[str, str]]:
    """The collectors' outcomes (manifest ``collectors``; older bundles: ``sections``)."""
    raw = m.get("collectors")
    items: list[Any] = raw if isinstance(raw, list) else []
    legacy = m.get("sections")
    if not items and isinstance(legacy, dict):
        items = [{"name": k, **v} if isinstance(v, dict) else {"name": k, "status": v}
                 for k, v in legacy.items()]
    return [{"name": human.value(s.get("name"), 80), "status": human.value(s.get("status"), 40),
             "duration": human.duration(s.get("duration_s")),
             "note": human.value(s.get("error"), 500) if s.get("error") else ""}
            for s in items[:MAX_ROWS] if isinstance(s, dict)]


def _redactions(m: Mapping[str, Any]) -> list[tuple[str, str]]:
    counts = _get(m, "redaction", "counts")
    if not isinstance(counts, dict):
        counts = m.get("redaction_counts")  # bundles written before the "redaction" object
    if not isinstance(counts, dict):
        return []
    return [(human.value(k, 80), human.value(v, 40)) for k, v in list(counts.items())[:MAX_ROWS]]


def _truncation(m: Mapping[str, Any]) -> list[str]:
    out = []
    notes = m.get("truncation")
    for n in (notes if isinstance(notes, list) else [])[:50]:
        if not isinstance(n, dict) or not n.get("dropped_bytes"):
            continue
        stage = {"recording": "while recording", "bundle": "when the bundle was made"}.get(
            str(n.get("stage")), human.value(n.get("stage"), 40))
        out.append(f"{human.value(n.get('name'), 200)}: {human.size(n.get('dropped_bytes'))} "
                   f"of {human.size(n.get('total_bytes'))} left out of the middle ({stage})")
    return out


def _culprit(c: Any, app: str) -> dict[str, str] | None:
    """Whose bug the client said the crash is: a line, and its tracker when it is a web
    address (never a ``javascript:`` or other scheme: the manifest is uploaded text)."""
    if not isinstance(c, dict) or not isinstance(c.get("name"), str):
        return None
    from rage.report.summary import culprit_line

    safe = {k: human.value(c.get(k), 300) for k in ("name", "version", "kind", "where")
            if c.get(k)}
    tracker = c.get("tracker")
    link = tracker if isinstance(tracker, str) and len(tracker) <= 2000 and (
        tracker.startswith(("https://", "http://"))) else ""
    return {"text": culprit_line(app[:200], safe), "tracker": human.value(link, 2000)}


def context(meta: StoredBundle, members: Mapping[str, CappedMember],
            links: Links) -> dict[str, Any]:
    """Everything ``bundle.html`` needs."""
    m = meta.manifest
    run = m.get("run") if isinstance(m.get("run"), dict) else {}
    assert isinstance(run, dict)
    budget = _Budget()
    status = human.value(run.get("status") or "unknown", 40)
    app = human.value(f'{m.get("app") or "?"} {m.get("app_version") or ""}'.strip(), 200)
    collectors = {n: members[n] for n in sorted(members) if n.startswith("collectors/")}
    sections = {name: _parse_section(member) for name, member in collectors.items()}
    parsed = {name.removeprefix("collectors/").removesuffix(".json"): section
              for name, section in sections.items()}
    facts = [("Command", command(run.get("argv"))), ("Result", human.exit_text(run)),
             ("Started", human.when(run.get("started_at"))),
             ("Duration", human.duration(run.get("duration_s"))),
             *_environment_facts(parsed),
             ("Working directory", human.value(run.get("cwd"), 500)),
             ("Received", human.when(meta.created_at)),
             ("rage", human.value(m.get("rage_version"), 40))]
    crash = None
    for name, title in TRACEBACKS:
        if name in members:
            crash = {"title": title, "source": name,
                     "blocks": tracebacks.parse(strip(members[name].text))}
            break
    for name in ("run/stderr.log", "run/output.log"):  # a wrapped run's own traceback
        if crash is None and name in members:
            found = tracebacks.last_in(strip(members[name].text).splitlines())
            if found:
                crash = {"title": "Traceback", "source": name,
                         "blocks": tracebacks.parse(found)}
    logs = [_log(members[n], n.removeprefix("run/"), "out-" + n[4:].split(".")[0], links,
                 budget) for n in LOGS if n in members]
    attachments = sorted(n for n in members if n.startswith("run/attachments/"))
    logs += [_log(members[n], n.removeprefix("run/"), f"att-{i}", links, budget)
             for i, n in enumerate(attachments)]
    listed = m.get("files")
    files = [f for f in (listed if isinstance(listed, list) else [])
             if isinstance(f, dict) and isinstance(f.get("name"), str)]
    shown_files = files[:MAX_ROWS]
    return {
        "title": f"{app}: {status}", "app": app, "status": status,
        "note": human.value(m.get("note"), 5000) if m.get("note") else "",
        # what the client found before sending (rage.report.changes, rage.report.culprit):
        # uploaded text, shown as text; a tracker is a link only when it is an http(s) URL
        "since": human.value(m.get("since_it_worked"), 2000) if m.get("since_it_worked")
        else "",
        "culprit": _culprit(m.get("culprit"), str(m.get("app") or "")),
        "facts": facts, "crash": crash, "logs": logs,
        "records": _records(members["run/log.jsonl"], links, budget)
        if "run/log.jsonl" in members else None,
        "environment": [_collector(mb, sections[n], links, budget)
                        for n, mb in collectors.items()],
        # the collectors the Environment block shows are not listed again
        "sections": [x for x in _sections(m) if f"collectors/{x['name']}.json" not in collectors],
        "redactions": _redactions(m),
        "redaction_total": human.value(_get(m, "redaction", "total")),
        "truncation": _truncation(m),
        # shown with invisible and bidi format characters as "_" (a name stored before such
        # names were refused must not read as another); the link keeps the real name
        "files": [(visible(f["name"]), human.size(f.get("size")), links.member(f["name"]))
                  for f in shown_files],
        "more_files": len(files) - len(shown_files),
        "bundle_size": human.size(meta.size), "raw_url": links.raw_url,
        "status_class": "bad" if status in ("failed", "crashed") else (
            "warn" if status in ("interrupted", "lost") else "ok"),
    }
