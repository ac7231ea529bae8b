"""The report pipeline: a recorded run + collectors, through one redactor, into a bundle.

:func:`prepare` does all the work that decides what a bundle contains: it runs the
collectors (in a background thread while the run's files are redacted), passes everything
through one :class:`~rage.redact.Redactor`, caps oversized files (head and tail kept, and
only the regions that can reach the bundle are read and redacted), and leaves the
redacted members in a private temporary directory with their sizes and checksums. Nothing
is written to the reports directory and nothing leaves the machine, so a preview is
exactly what would be sent. :func:`write` then streams the members into a
``.tar.zst``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import rage.report.summary as _summary
from rage import bundle as _bundle
from rage._version import __version__
from rage.bundle.frames import MEMORY_MAX, FrameCompressor, Framed, FrameWriter
from rage.config import Settings
from rage.defaults import LEARNED_MAX
from rage.fsutil import open_private, private_dir
from rage.paths import home_root
from rage.record.history import Run, now_iso
from rage.redact.capped import redact_capped
from rage.report.model import Member, Prepared, ReportRequest

T = TypeVar("T")

if TYPE_CHECKING:
    from collectors.base import Section

_TAIL_READ = 64 * 1024  # bytes read from the end of a log to find its last lines
# output files, in the order the summary prefers them for "the last lines"
_OUTPUT_FILES = (("output.log", "output"), ("stderr.log", "stderr"), ("stdout.log", "stdout"))


def fair_shares(sizes: Mapping[str, int], budget: int) -> dict[str, int]:
    """Split ``budget`` bytes over files: small files keep everything, big ones share the rest.

    Returns the cap for each name; a file whose cap is below its size gets truncated.
    """
    caps: dict[str, int] = {}
    left = max(budget, 0)
    pending = sorted(sizes.items(), key=lambda kv: kv[1])
    while pending:
        share = left // len(pending)
        name, size = pending[0]
        if size <= share:
            caps[name] = size
            left -= size
            pending.pop(0)
            continue
        for name, _size in pending:  # everything left is bigger than an equal share
            caps[name] = share
        break
    return caps


def _read_tail(m: Member) -> bytes:
    return _member_bytes(m, max(m.size - _TAIL_READ, 0), _TAIL_READ)


def _collect(request: ReportRequest, meta: Mapping[str, Any], environ: dict[str, str] | None
             ) -> tuple[list[Section], list[str]]:
    """The collectors' sections and warnings; ``environ``: the run's recorded environment
    (:func:`recorded_environ`), which the environment collector reports."""
    from collectors.base import Context, discover, run_collectors

    s = request.settings
    found = discover(extra=request.extra_collectors, disable=s.disable_collectors,
                     enable=s.collectors)
    cwd = Path(request.run.cwd) if request.run.cwd else Path.cwd()
    warnings = list(found.warnings)
    ctx = Context(app=request.run.app, run=dict(meta), cwd=cwd if cwd.is_dir() else Path.cwd(),
                  python=meta.get("python") if isinstance(meta.get("python"), str) else None,
                  tools=s.tools, history_root=home_root(), environ=environ)
    sections = run_collectors(found.collectors, ctx, only=request.only, skip=request.skip,
                              deadline_s=request.collector_deadline_s, sources=found.sources)
    return sections, warnings


def recorded_environ(run: Run, warnings: list[str]) -> dict[str, str] | None:
    """The environment the recorder kept for the run (``environ.json``), read within its
    bound (:func:`rage.record.meta.read_environ`). A damaged or oversized one is left out
    with one warning: the environment section then describes the reporting process, and
    says so (``source``)."""
    from rage.record.meta import read_environ

    try:
        data = read_environ(run.dir)
    except (OSError, ValueError) as e:
        warnings.append(f"environ.json of run {run.short_id} not used: {e}")
        return None
    if data is None:
        return None
    return {escape_undecodable(k): escape_undecodable(v) for k, v in data.items()}


def learn_from_record(redactor: Any, run: Run, environ: Mapping[str, str] | None,
                      warnings: list[str]) -> None:
    """Teach ``redactor`` the secrets of ``run``'s context, to remove wherever its files
    repeat them: its argv, its recorded environment (``environ`` from
    :func:`recorded_environ`: what it kept in clear, a URL's password) and the values that
    environment's secret-named variables held, read back from the run's own files
    (:func:`rage.record.hidden.recovered`). What the recording shell knew decides, whatever
    shell the report is made in; a run recorded before environments were kept learns from
    the reporting process's environment instead."""
    from rage.record import hidden
    from rage.redact.known import learnable

    argv = run.meta.get("argv")
    redactor.learn([os.environ if environ is None else environ],
                   argv if isinstance(argv, list) else [])
    try:
        values = hidden.recovered(str(run.dir))
    except ValueError as e:
        warnings.append(f"{hidden.FILE} of run {run.short_id} not used: {e}; secrets of its "
                        "environment that its output repeats may be left in: check the "
                        "preview")
        return
    redactor.add_literals(v for v in values if learnable(v))


def _console_widths(meta: Mapping[str, Any], environ: Mapping[str, str] | None
                    ) -> frozenset[int]:
    """The widths of the consoles the run's output was printed to, besides 80 (a pipe's,
    for Rich): its terminal's (``columns`` in the meta of a run recorded on a pseudo-
    terminal) and ``COLUMNS`` in its recorded ``environ``, which Rich and many tools follow.
    A value cut at the end of a line that wide goes on at the next line (rage.redact.wraps)."""
    found = [meta.get("columns"), (environ or {}).get("COLUMNS")]
    widths = (int(w) if isinstance(w, str) and w.isdigit() else w for w in found)
    return frozenset(w for w in widths
                     if isinstance(w, int) and not isinstance(w, bool) and 20 <= w <= 4096)


class _InThread(Generic[T]):
    """``fn()`` run by a thread of its own while the caller goes on: :meth:`result` waits
    for its value or raises what it raised, and leaving the ``with`` waits for it whatever
    happened (a ThreadPoolExecutor of one call, without importing concurrent.futures and
    logging: 4 ms at every report's start)."""

    def __init__(self, fn: Callable[[], T], name: str) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn,), name=name)

    def _run(self, fn: Callable[[], T]) -> None:
        try:
            self._value = fn()
        except BaseException as e:  # handed to the caller by result()
            self._error = e

    def __enter__(self) -> _InThread[T]:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join()

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return cast(T, self._value)


def prepare(request: ReportRequest) -> Prepared:
    """Collect and redact everything for ``request`` into a private temporary directory.

    Raises UsageError for unknown collector names; collector failures become sections with
    status ``error`` and never fail the report.
    """
    from rage.redact import Redactor

    run, settings = request.run, request.settings
    redactor = Redactor(literals=(), patterns=settings.redact, pseudonymize=True)
    # read once: its COLUMNS is a console width, and the environment collector reports it
    environ_warnings: list[str] = []
    environ = recorded_environ(run, environ_warnings)
    file_warnings: list[str] = []
    learn_from_record(redactor, run, environ, file_warnings)
    redactor.wrap_widths |= _console_widths(run.meta, environ)
    workdir = Path(tempfile.mkdtemp(prefix="rage-report-"))  # 0700 by construction
    try:
        with _InThread(lambda: _collect(request, run.meta, environ) if request.collect
                       else ([], []), "rage-collect") as collecting:
            redactor.start_learning()
            run_members, notes = _redact_run_files(run, settings, redactor, workdir,
                                                   file_warnings)
            # a secret the output names once (`PASS=X`) is secret where it repeats (`+ echo
            # X`), before or after: the run's files again, and everything after them
            run_members = _scrub_learned(run_members, redactor.learned(), redactor)
            sections, warnings = collecting.result()
        if request.collect:  # (the environment is only the collector's to report)
            warnings = warnings + environ_warnings  # (after discovery's, as before)
        warnings = file_warnings + warnings
        meta = _redact_meta(redactor, escape_undecodable(
            {k: v for k, v in run.meta.items() if k != "fingerprint"}))  # (never sent)
        culprit = _culprit(run, redactor, meta, run_members) if request.findings else None
        changes = _changes(run, redactor, warnings) if request.findings else None
        since = [] if changes is None else [_bytes_member(CHANGES, _json(changes))]
        run_members.insert(0, _bytes_member("run/meta.json", _json(meta)))
        coll_members, coll_data = _collector_members(sections, redactor, warnings)
        note = (redactor.text(escape_undecodable(request.note)).strip() if request.note
                else None)
        others = since + run_members + coll_members
        summary_md = _summary.render(_summary.SummaryInput(
            app=run.app, meta=meta, rage_version=__version__, note=note,
            traceback=_first_text(run_members, ("traceback.txt", "fatal.log",
                                                "backtrace.txt")),
            outputs=_output_tails(run_members),
            facts=_summary.environment_facts(coll_data),
            culprit=culprit,
            changes=_changes_line(changes),
            contents=[(m.name, m.size) for m in others],
            truncated=[f"{n['name']}: {n['dropped_bytes']} bytes dropped from the middle "
                       f"({n['stage']})" for n in notes],
        ))
        summary_md = escape_undecodable(summary_md)
        summary_member = _bytes_member(_bundle.SUMMARY, summary_md.encode())
        counts = dict(redactor.counts)
        manifest: dict[str, Any] = {
            "schema": _bundle.SCHEMA,
            "created_at": now_iso(),
            "rage_version": __version__,
            "app": run.app,
            "app_version": meta.get("app_version"),
            "run": meta,
            "collectors": [
                {"name": s.name, "status": s.status, "duration_s": round(s.duration_s, 6),
                 "error": redactor.text(s.error) if s.error else None}
                for s in sections
            ],
            "redaction": {"counts": counts, "total": sum(counts.values())},
            "truncation": notes,
            "note": note,
            "culprit": culprit,
            "since_it_worked": _changes_line(changes),
            "files": [{"name": m.name, "size": m.size, "sha256": m.sha256}
                      for m in [summary_member, *others]],
        }
        members = [_bytes_member(_bundle.MANIFEST, _json(manifest)), summary_member, *others]
        return Prepared(request=request, members=members, manifest=manifest,
                        summary_md=summary_md, redaction_counts=counts, sections=sections,
                        warnings=warnings, workdir=workdir)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise


CHANGES = "changes.json"  # what changed since the run's app last worked (rage.report.changes)


def _changes(run: Run, redactor: Any, warnings: list[str]) -> dict[str, Any] | None:
    """The run against the last successful run of its app before it (:mod:`rage.report.changes`),
    redacted; None for a run that worked (or an app that never did). Any failure is a
    warning, never a failed report."""
    if run.status == "ok":
        return None
    from rage.report import changes

    try:
        found = changes.for_run(run, redactor)
    except Exception as e:  # one answer missing, not the report
        warnings.append(f"cannot tell what changed since the last run that worked: {e}")
        return None
    return found if found is not None else {"schema": changes.SCHEMA, "baseline": None}


def _changes_line(found: Mapping[str, Any] | None) -> str | None:
    if found is None:
        return None
    from rage.report import changes

    return changes.headline(found if found.get("baseline") else None)


_CULPRIT_FILES = ("traceback.txt", "stderr.log", "output.log", "stdout.log")
# rage.report.culprit's, for a run with no Python traceback and no signal: it then finds
# nothing, and a report does without importing it (two dataclasses, a regex: ~7M
# instructions, 1.5% of a small report)
_TB_START = "Traceback (most recent call last):"
_CULPRIT_TEXT_MAX = 1024 * 1024


def _culprit(run: Run, redactor: Any, meta: Mapping[str, Any], members: Sequence[Member]
             ) -> dict[str, Any] | None:
    """Whose bug the run is (:mod:`rage.report.culprit`), from its raw traceback and output (the
    frames' real paths find their distribution); what leaves is public metadata, the frame's
    path redacted, and a pre-filled issue for that project built from redacted text."""
    from rage.fsutil import read_tail

    texts = []
    for name in _CULPRIT_FILES:
        try:  # regular files only: never a FIFO or a link planted in the history
            texts.append(read_tail(run.dir / name, _CULPRIT_TEXT_MAX).decode("utf-8",
                                                                             "replace"))
        except (OSError, ValueError):
            continue
    exe = run.meta.get("executable")
    if not any(_TB_START in t for t in texts) and not (run.meta.get("signal")
                                                       and isinstance(exe, str)):
        return None  # what culprit.find answers then, said without importing it
    from rage.report import culprit as _c

    try:
        found = _c.find(run.app, run.meta, texts)
    except Exception:  # never a failed report for want of this answer
        return None
    if found is None:
        return None
    out = found.to_dict()
    out["where"] = redactor.text(found.where) if found.where else None
    what = _c.describe(found)
    # the traceback as the bundle has it (redacted): its own file, or the end of the output
    text = next((t for n in _CULPRIT_FILES
                 if (t := _first_text(members, (n,))) and _c.TB_START in t), "")
    tb = text[text.rfind(_c.TB_START):].strip().splitlines() if text else []
    last = next((line for line in tb[1:] if line[:1] not in (" ", "\t", "")),
                f"{run.app} {run.status}")
    version = meta.get("app_version")
    title = f"{last[:150]} (in {run.app}{' ' + str(version) if version else ''})"
    body = (f"While running {run.app}{' ' + str(version) if version else ''}, a crash inside "
            f"{what}:\n\n```\n" + "\n".join(tb[-30:]) + "\n```\n\n(Found with rage, in a report of "
            "the run.)\n")
    out["issue_url"] = _c.issue_link(found, title, body)
    return out


def _redact_meta(redactor: Any, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The run's metadata through the engine; argv as the command line it is."""
    argv = raw.get("argv")
    if not isinstance(argv, list | tuple):
        return dict(redactor.data(dict(raw)))
    rest = redactor.data({k: v for k, v in raw.items() if k != "argv"})
    at = list(raw).index("argv")
    items = list(rest.items())
    items.insert(at, ("argv", redactor.argv([str(a) for a in argv])))
    return dict(items)


def _json(obj: Any) -> bytes:
    text = json.dumps(escape_undecodable(obj), indent=2, ensure_ascii=False, default=str)
    return (text + "\n").encode()


# compiled at the first string that holds one (~2M instructions: a range past U+00FF);
# only lone surrogates make a str unencodable as UTF-8, which finds them in C
_SURROGATES = "[\ud800-\udfff]"


def _escape_char(m: re.Match[str]) -> str:
    c = ord(m.group())
    # surrogateescape keeps an undecodable byte B as U+DC00+B: show it as the byte it was
    return f"\\x{c - 0xDC00:02x}" if 0xDC80 <= c <= 0xDCFF else f"\\u{c:04x}"


def escape_undecodable(obj: Any) -> Any:
    """``obj`` with every undecodable byte in its strings written as ``\\xNN``.

    Recorded argv, cwd and environment values are OS strings: a byte that is not UTF-8
    (a Latin-1 directory name, ``LANG=C``) arrives as a lone surrogate, which no UTF-8
    file can hold. Escaping keeps every recorded byte visible in the bundle.
    """
    if isinstance(obj, str):
        if obj.isascii():
            return obj
        try:
            obj.encode()
        except UnicodeEncodeError:
            return re.sub(_SURROGATES, _escape_char, obj)
        return obj
    if isinstance(obj, dict):
        return {escape_undecodable(k): escape_undecodable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [escape_undecodable(v) for v in obj]
    return obj


def _bytes_member(name: str, data: bytes) -> Member:
    size, digest = _bundle.sha256_of(data)
    return Member(name, data, size, digest)


def _file_member(name: str, path: Path) -> Member:
    size, digest = _bundle.sha256_of(path)
    return Member(name, path, size, digest)


def _scrub_learned(members: list[Member], learned: Sequence[str], redactor: Any
                   ) -> list[Member]:
    """``members`` with every other occurrence of the ``learned`` values redacted. Only
    members held as plain files: those redacted in this process (a large one, redacted and
    compressed by the workers, taught nothing here)."""
    if not learned:
        return members
    out = []
    for m in members:
        if isinstance(m.data, Path):
            data = m.data.read_bytes()
            new = redactor.replace_learned(data, learned)
            if new != data:
                with open_private(m.data, "wb") as f:
                    f.write(new)
                out.append(_file_member(m.name, m.data))
                continue
        out.append(m)
    return out


# meta.json is rewritten from the redacted meta; environ.json is the environment collector's;
# hidden.json (what the report learns) and a core kept with --keep-core never leave
_NOT_BUNDLED = frozenset({"meta.json", "environ.json", "hidden.json", "core"})


def _redact_run_files(
    run: Run, settings: Settings, redactor: Any, workdir: Path, warnings: list[str]
) -> tuple[list[Member], list[dict[str, Any]]]:
    """Redact the run's files into ``workdir/run``; cap each at its share of the budget."""
    sources: dict[str, Path] = {}
    for p in run.files():
        rel = p.relative_to(run.dir).as_posix()
        if rel in _NOT_BUNDLED:
            continue
        try:
            # a name is a surface too (an attachment named after its user, or holding a
            # token): redacted as meta.json's list of attachments is, with the same names
            name = _unique("run/" + _bundle.check_member_name(redactor.text(rel)), sources)
        except Exception:  # an odd file name in the run store is skipped, not fatal
            continue
        sources[name] = p
    sizes: dict[str, int] = {}
    for name, p in list(sources.items()):
        try:
            sizes[name] = p.stat().st_size
        except OSError:
            del sources[name]  # vanished since the listing (a concurrent prune)
    caps = fair_shares(sizes, settings.bundle_max_bytes)
    compress: FrameCompressor | None = None
    notes: list[dict[str, Any]] = [
        {**t, "name": redactor.text(str(t.get("name", ""))), "stage": "recording"}
        for t in run.meta.get("truncation") or []
        if isinstance(t, dict) and t.get("dropped_bytes")
    ]
    members: list[Member] = []
    held = 0  # bytes of frames the members so far hold in memory: at most MEMORY_MAX in all
    for name, src in sorted(sources.items(), key=lambda kv: _run_order(kv[0])):
        dst = workdir.joinpath(*name.split("/"))
        private_dir(dst.parent)
        frames = None
        # up to LEARNED_MAX a file is redacted here, where the redactor learns what it names
        # (removed from every member after, _scrub_learned); past it (past the workers'
        # threshold too, PARALLEL_MIN) by the workers, which compress it too, as they go
        in_process = sizes[name] <= LEARNED_MAX
        if not in_process:
            compress = compress or FrameCompressor()
            framedir = private_dir(workdir / ".frames")
            frames = FrameWriter(framedir / f"{len(members)}.zst", compress,
                                 memory_max=MEMORY_MAX - held)
        try:
            note, digest, framed = redact_capped(src, dst, caps[name], sizes[name], redactor,
                                                 frames=frames,
                                                 workers=1 if in_process else None)
        except OSError as e:
            warnings.append(f"cannot read {name}: {e.strerror or e}; left out of the bundle")
            dst.unlink(missing_ok=True)
            if frames is not None:
                frames.discard()
            continue
        if note:
            notes.append({"name": name, **note, "stage": "bundle"})
        if frames is not None and framed and digest:
            member = frames.close()
            held += sum(map(len, member.held))
            members.append(Member(name, member, *digest))
            continue
        if frames is not None:
            frames.discard()
        members.append(Member(name, dst, *digest) if digest else _file_member(name, dst))
    return members, notes


def _unique(name: str, taken: Mapping[str, object]) -> str:
    """``name``, or ``name-2``, ``name-3``... (before its extension) if it is taken: two
    file names may redact to the same one."""
    if name not in taken:
        return name
    stem, dot, ext = name.rpartition(".")
    if not dot or "/" in ext:
        stem, dot, ext = name, "", ""
    n = 2
    while f"{stem}-{n}{dot}{ext}" in taken:
        n += 1
    return f"{stem}-{n}{dot}{ext}"


def _run_order(name: str) -> tuple[int, str]:
    order = ("run/output.log", "run/stdout.log", "run/stderr.log", "run/traceback.txt",
             "run/fatal.log", "run/log.jsonl")
    return (order.index(name), name) if name in order else (len(order), name)


def _collector_members(
    sections: Sequence[Section], redactor: Any, warnings: list[str]
) -> tuple[list[Member], dict[str, dict[str, Any]]]:
    """``collectors/<name>.json`` (+ the collector's files), and the redacted data by name."""
    out: list[Member] = []
    data: dict[str, dict[str, Any]] = {}
    for s in sections:
        try:
            base = "collectors/" + _bundle.check_member_name(s.name)
        except Exception:
            warnings.append(f"collector name {s.name!r} is not usable as a file name: skipped")
            continue
        d = escape_undecodable(s.to_dict())
        files = dict(d.pop("files") or {})
        d["files"] = sorted(files)
        clean = redactor.data(d)
        if isinstance(clean.get("data"), dict):
            data[s.name] = clean["data"]
        out.append(_bytes_member(base + ".json", _json(clean)))
        for fname, text in sorted(files.items()):
            try:
                name = f"{base}/{_bundle.check_member_name(str(fname))}"
            except Exception:
                warnings.append(f"collector {s.name}: unsafe file name {fname!r}: skipped")
                continue
            out.append(_bytes_member(name, redactor.text(str(text)).encode()))
    return out, data


def _first_text(members: Sequence[Member], names: Sequence[str]) -> str | None:
    """The end of the first non-empty redacted run file among ``names``."""
    by_name = {m.name: m for m in members}
    for n in names:
        m = by_name.get("run/" + n)
        if m is not None and m.size:
            return _read_tail(m).decode("utf-8", "replace")
    return None


def _output_tails(members: Sequence[Member]) -> list[tuple[str, str]]:
    """Last lines of the terminal session, or of stderr then stdout in pipe mode."""
    by_name = {m.name: m for m in members}
    out = []
    for name, label in _OUTPUT_FILES:
        m = by_name.get("run/" + name)
        if m is not None and m.size:
            tail = _summary.tail_lines(_read_tail(m))
            if tail:
                out.append((label, tail))
                if name == "output.log":
                    break
    return out


PREVIEW_BYTES = 32 * 1024  # per member: more than this shows the head and the tail


def _member_bytes(m: Member, start: int, length: int) -> bytes:
    if isinstance(m.data, bytes):
        return m.data[start:start + length]
    if isinstance(m.data, Framed):
        return m.data.read(start, length)
    with open(m.data, "rb") as f:
        f.seek(start)
        return f.read(length)


def preview(prepared: Prepared, *, max_bytes: int = PREVIEW_BYTES) -> dict[str, Any]:
    """Everything that would be sent, as plain data: each member's (redacted) text, with
    only the head and the tail of members above ``max_bytes``."""
    items: list[dict[str, Any]] = []
    for m in prepared.members:
        item: dict[str, Any] = {"name": m.name, "size": m.size, "sha256": m.sha256}
        if m.size <= max_bytes:
            raw = _member_bytes(m, 0, m.size)
            item["content"] = raw.decode("utf-8", "replace")
        else:
            half = max_bytes // 2
            item["head"] = _member_bytes(m, 0, half).decode("utf-8", "replace")
            item["tail"] = _member_bytes(m, m.size - half, half).decode("utf-8", "replace")
            item["omitted_bytes"] = m.size - 2 * half
        if b"\0" in _member_bytes(m, 0, 8192):
            item = {k: v for k, v in item.items() if k not in {"content", "head", "tail"}}
            item["binary"] = True
        items.append(item)
    return {"run": prepared.request.run.id, "app": prepared.request.run.app,
            "total_bytes": prepared.total_bytes, "redaction_counts": prepared.redaction_counts,
            "warnings": prepared.warnings, "members": items}


__all__ = [
    "escape_undecodable",
    "fair_shares",
    "learn_from_record",
    "prepare",
    "preview",
    "recorded_environ",
]
