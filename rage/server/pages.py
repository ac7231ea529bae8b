"""HTML pages of the receiver: landing, one page per bundle, admin index, messages.

Everything that comes from a bundle is untrusted and goes through :func:`esc`. Pages carry no
external assets; the one inline ``<style>`` and ``<script>`` are allowed by a per-response
CSP nonce, and the script only adds a filter box: without JavaScript every line is visible.
"""

from __future__ import annotations

import html
import json
import re
import shlex
import signal as _signal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from rage.bundle import CappedMember
from rage.server.storage import StoredBundle
from rage.server.templating import csp, render

__all__ = ["csp"]

MAX_TABLE_ROWS = 2000


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def layout(title: str, body: str, nonce: str, *, script: bool = False) -> str:
    """``body`` (already-escaped HTML) inside ``base.html``."""
    return render("raw.html", nonce=nonce, title=title, content=Markup(body), script=script)


def landing_page(base_url: str, nonce: str, *, token_required: bool) -> str:
    return render("landing.html", nonce=nonce, base_url=base_url, token_required=token_required)


def message_page(title: str, text: str, nonce: str) -> str:
    return render("message.html", nonce=nonce, title=title, text=text)


def delete_form(action: str, token: str, nonce: str) -> str:
    return render("delete.html", nonce=nonce, title="Delete bundle?",
                  text="This removes the bundle and its page for good.",
                  action=action, token=token)


def _rows(pairs: Iterable[tuple[str, str]], *, raw: bool = False) -> str:
    """Two-column table; values are escaped unless ``raw`` (already-built HTML)."""
    cells = "".join(f"<tr><th>{esc(k)}</th><td>{v if raw else esc(v)}</td></tr>"
                    for k, v in pairs)
    return f"<table>{cells}</table>"


def _exit(run: Mapping[str, Any]) -> str:
    sig = run.get("signal")
    if sig:
        try:
            return f"killed by {_signal.Signals(int(sig)).name}"
        except (ValueError, TypeError):
            return f"signal {sig}"
    code = run.get("exit_code")
    return "-" if code is None else str(code)


def _duration(v: Any) -> str:
    return f"{v:.2f}s" if isinstance(v, int | float) else "-"


def _command(argv: Any) -> str:
    if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
        return shlex.join(argv)
    return str(argv)


def _lines(text: str, ident: str, cut: bool, size: int) -> str:
    note = (f'<p class="cut">only the last {len(text.encode())} of {size} bytes are shown; '
            'download the bundle for the rest</p>') if cut else ""
    rows = "".join(f'<div class="line"><span class="n">{i}</span><span>{esc(line)}</span></div>'
                   for i, line in enumerate(text.splitlines(), 1))
    return (f'{note}<input class="filter" type="search" placeholder="filter lines" hidden '
            f'data-target="{esc(ident)}" aria-label="filter lines">'
            f'<span class="muted" id="{esc(ident)}-count"></span>'
            f'<div class="log" id="{esc(ident)}">{rows}</div>')


_FRAME = re.compile(r'^\s*File ".*", line \d+')
_EXC = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Warning)\b.*|^[\w.]+: ")


def _traceback(text: str) -> str:
    out = []
    for line in text.splitlines():
        if _FRAME.match(line):
            cls = "frame"
        elif line.startswith("    "):
            cls = "src"
        elif _EXC.match(line):
            cls = "exc"
        else:
            cls = ""
        out.append(f'<span class="{cls}">{esc(line)}</span>' if cls else esc(line))
    return '<pre class="tb">' + "\n".join(out) + "</pre>"


def _log_table(text: str, ident: str) -> str:
    rows = []
    for line in text.splitlines()[-MAX_TABLE_ROWS:]:
        try:
            rec = json.loads(line)
        except ValueError:
            rec = {"msg": line}
        if not isinstance(rec, dict):
            rec = {"msg": line}
        level = str(rec.get("level", ""))
        lvl_cls = re.sub(r"[^A-Za-z]", "", level.upper())
        exc = rec.get("exc")
        exc_html = f"<pre>{esc(exc)}</pre>" if exc else ""
        rows.append(f'<tr><td class="muted">{esc(rec.get("t", ""))}</td>'
                    f'<td class="lvl-{lvl_cls}">{esc(level)}</td><td>{esc(rec.get("logger", ""))}'
                    f'</td><td><pre>{esc(rec.get("msg", ""))}</pre>{exc_html}</td></tr>')
    return (f'<input class="filter" type="search" placeholder="filter records" hidden '
            f'data-target="{ident}" aria-label="filter records">'
            f'<span class="muted" id="{ident}-count"></span>'
            f'<div class="log" id="{ident}"><table><thead><tr><th>time</th><th>level</th>'
            f'<th>logger</th><th>message</th></tr></thead><tbody>{"".join(rows)}</tbody>'
            "</table></div>")


def flatten(data: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Nested JSON as (dotted key, scalar text) pairs; lists of scalars joined by commas."""
    if isinstance(data, dict):
        if not data:
            return [(prefix or "(empty)", "{}")]
        out: list[tuple[str, str]] = []
        for k, v in data.items():
            out.extend(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(data, list):
        if all(not isinstance(v, dict | list) for v in data):
            return [(prefix, ", ".join("null" if v is None else str(v) for v in data))]
        out = []
        for i, v in enumerate(data):
            out.extend(flatten(v, f"{prefix}[{i}]"))
        return out
    return [(prefix or "(value)", "null" if data is None else str(data))]


def _collector(member: CappedMember) -> str:
    try:
        section = json.loads(member.text) if not member.cut else None
    except ValueError:
        section = None
    if not isinstance(section, dict):
        return f'<p class="muted">{esc(member.name)}: not shown (too large or not JSON)</p>'
    head = (f'<p><b>{esc(section.get("name", member.name))}</b> '
            f'<span class="status-{esc(section.get("status", ""))}">{esc(section.get("status"))}'
            f'</span> <span class="muted">{_duration(section.get("duration_s"))}</span></p>')
    err = section.get("error")
    err_html = f'<pre class="tb">{esc(err)}</pre>' if err else ""
    pairs = flatten(section.get("data"))
    more = (f'<p class="muted">{len(pairs) - MAX_TABLE_ROWS} more rows in the bundle</p>'
            if len(pairs) > MAX_TABLE_ROWS else "")
    return head + err_html + _rows(pairs[:MAX_TABLE_ROWS]) + more


@dataclass(frozen=True)
class Links:
    url: str
    raw_url: str


def bundle_page(meta: StoredBundle, members: Mapping[str, CappedMember], links: Links,
                nonce: str) -> str:
    """The maintainer's page for one bundle: summary first, then crash, output, logs, facts."""
    m = meta.manifest
    run = m.get("run") if isinstance(m.get("run"), dict) else {}
    assert isinstance(run, dict)
    status = str(run.get("status", "unknown"))
    app = f'{m.get("app", "?")} {m.get("app_version") or ""}'.strip()
    summary = [
        ("command", esc(_command(run.get("argv", [])))),
        ("status", f'<span class="status-{esc(status)}">{esc(status)}</span>'),
        ("exit", esc(_exit(run))),
        ("duration", esc(_duration(run.get("duration_s")))),
        ("app", esc(app)),
        ("started", esc(run.get("started_at", "-"))),
        ("cwd", esc(run.get("cwd", "-"))),
        ("bundle", f'{esc(meta.created_at)} · rage {esc(m.get("rage_version", "?"))} · '
                   f'{meta.size} bytes · <a href="{esc(links.raw_url)}" download>'
                   "download .tar.zst</a>"),
    ]
    parts = [f"<h1>{esc(app)}: {esc(status)}</h1>"]
    if m.get("note"):
        parts.append(f'<p class="note">{esc(m["note"])}</p>')
    parts.append(_rows(summary, raw=True))
    for name, title in (("run/traceback.txt", "Traceback"), ("run/fatal.log", "Fatal error")):
        if name in members:
            parts.append(f"<h2>{title}</h2>{_traceback(members[name].text)}")
    for name in ("run/output.log", "run/stdout.log", "run/stderr.log"):
        if name in members:
            mt = members[name]
            ident = "out-" + name.split("/")[-1].split(".")[0]
            parts.append(f"<h2>{esc(name[4:])}</h2>{_lines(mt.text, ident, mt.cut, mt.size)}")
    if "run/log.jsonl" in members:
        parts.append(f"<h2>Log records</h2>{_log_table(members['run/log.jsonl'].text, 'logrecs')}")
    attachments = sorted(n for n in members if n.startswith("run/attachments/"))
    for i, name in enumerate(attachments):
        mt = members[name]
        parts.append(f"<h2>{esc(name[4:])}</h2>{_lines(mt.text, f'att-{i}', mt.cut, mt.size)}")
    collectors = sorted(n for n in members if n.startswith("collectors/"))
    if collectors:
        parts.append("<h2>Environment</h2>" + "".join(_collector(members[n]) for n in collectors))
    counts = m.get("redaction_counts")
    if isinstance(counts, dict) and counts:
        parts.append("<h2>Redactions</h2>" + _rows((str(k), str(v)) for k, v in counts.items()))
    sections = m.get("sections")
    if isinstance(sections, dict) and sections:
        rows = ((str(k), f'{v.get("status")} {_duration(v.get("duration_s"))} '
                 f'{v.get("error") or ""}' if isinstance(v, dict) else str(v))
                for k, v in sections.items())
        parts.append("<h2>Sections</h2>" + _rows(rows))
    truncation = m.get("truncation")
    if isinstance(truncation, list) and truncation:
        parts.append("<h2>Truncated</h2>" + _rows(flatten(truncation)))
    if "summary.md" in members:
        parts.append(f'<h2>summary.md</h2><pre>{esc(members["summary.md"].text)}</pre>')
    files = m.get("files") if isinstance(m.get("files"), list) else []
    assert isinstance(files, list)
    parts.append("<h2>Files</h2>" + _rows(
        (str(f.get("name")), f'{f.get("size")} bytes') for f in files if isinstance(f, dict)))
    return layout(f"{app}: {status} — rage bundle", "".join(parts), nonce, script=True)


def admin_page(bundles: list[StoredBundle], base_url: str, nonce: str) -> str:
    rows = []
    for b in bundles:
        run = b.manifest.get("run") if isinstance(b.manifest.get("run"), dict) else {}
        assert isinstance(run, dict)
        rows.append({"received": b.created_at, "id": b.id, "app": b.manifest.get("app", "?"),
                     "status": run.get("status", "?"), "command": _command(run.get("argv", [])),
                     "size": b.size})
    return render("admin.html", nonce=nonce, rows=rows, base_url=base_url)
