"""The crash signature of a stored bundle: which reports are "the same failure".

Deterministic and versioned: the same bundle always gets the same signature under one
:data:`ALGORITHM_VERSION`; when the rules improve, the version goes up and the index
recomputes every bundle signed with an older one. In order of precedence:

1. ``fingerprint`` set by the app (manifest or run metadata): the app knows best.
2. A Python traceback (``run/traceback.txt``, else the last one in the output): the
   exception type and the in-app frames' module and function, innermost first. No line
   numbers, paths or values, so a line shift, another checkout or another input still
   groups. Library frames count only when there are no in-app frames.
3. A fatal signal: program, signal, and the top frames of a faulthandler dump if any.
4. A plain exit: program, subcommand, exit code, and the last error-like line of stderr
   with its values replaced by placeholders (:mod:`rage.server.placeholders`). A run that
   exited 0 is kind ``report``, not a crash: it was reported for what it did.

The readable ``text`` is at most 255 characters; the ``hash`` covers the whole key.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rage.server.placeholders import parameterise

# 2: the crash reports of other runtimes (Rust, Go, Node, Java, C++, sanitizers, ...) are
# signed by their frames (rage.crashes) before a signal or an exit line is
ALGORITHM_VERSION = 2
TEXT_MAX = 255
LINE_MAX = 300  # characters of an output line considered
# characters of a traceback or faulthandler line considered: a frame names a path (at most
# PATH_MAX, 4096 bytes) and a function, so a real frame is never cut
FRAME_LINE_MAX = 8 * 1024
MAX_FRAMES = 6  # innermost in-app frames kept: deeper callers rarely tell failures apart
# members the signature reads (their tails), in the order they are tried
MEMBERS = ("run/traceback.txt", "run/fatal.log", "run/stderr.log", "run/output.log",
           "run/backtrace.txt")

_TB_START = "Traceback (most recent call last):"
# every regex here sees uploaded text: each is linear in its input (no lazy quantifier
# before an optional tail: `\S.*?\s*$` was quadratic on a line of blanks), and each sees
# one line cut (`_lines`), so a line costs a bounded number of steps
_PY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]*)", line \d+, in (?P<func>\S.*)$')
_FH_FRAME = re.compile(r'^\s*File "(?P<path>[^"]*)", line (?:\d+|\?\?\?) in (?P<func>\S.*)$')
_EXC_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::|$)")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_PYDIR = re.compile(r"python\d(?:\.\d+)?")  # lib/python3.12/: the standard library
_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
# words that make a line "error-like"; plain substring tests on the lowered line (a regex
# alternation costs ~50x more on long lines of word characters)
_ERRORISH = ("error", "fatal", "fail", "exception", "cannot", "can't", "could not", "unable",
             "denied", "not found", "no such", "invalid", "refused", "timed out", "timeout",
             "abort", "panic", "missing", "unknown", "unexpected", "illegal", "bad ")


@dataclass(frozen=True)
class Frame:
    module: str
    function: str
    in_app: bool

    def __str__(self) -> str:
        return f"{self.module}.{self.function}"


@dataclass(frozen=True)
class Signature:
    """``kind`` is fingerprint, python, signal, exit or report (a run that succeeded);
    ``reasons`` say why it groups."""

    version: int
    kind: str
    app: str
    text: str
    hash: str
    exception: str | None = None
    reasons: tuple[str, ...] = field(default_factory=tuple)


def compute(manifest: Mapping[str, Any], texts: Mapping[str, str]) -> Signature:
    """The signature of a bundle from its manifest and the tails of :data:`MEMBERS`."""
    run = manifest.get("run") if isinstance(manifest.get("run"), dict) else {}
    assert isinstance(run, dict)
    app = _clean(manifest.get("app") or run.get("app")) or _program(run) or "unknown"
    fp = manifest.get("fingerprint", run.get("fingerprint"))
    if isinstance(fp, list):
        fp = " ".join(str(p) for p in fp)
    if isinstance(fp, str | int) and str(fp).strip():
        value = _clean(fp)[:200]
        return _make("fingerprint", app, [value], f"{app}: {value}", None,
                     reasons=["the app set this fingerprint itself; nothing else was compared"])
    tb = texts.get("run/traceback.txt") or _last_traceback(_output(texts))
    if tb and (parsed := _parse_traceback(tb, app)):
        return _python(app, *parsed)
    sig = run.get("signal")
    failed = (sig is not None and sig != 0) or run.get("exit_code") not in (0, None) or (
        run.get("status") in ("crashed", "failed"))
    if failed and (native := _runtime_crash(app, texts)):
        return native
    if sig is not None and sig != 0:
        return _signal(app, _program(run) or app, _signal_name(sig), texts)
    return _exit(app, run, _output(texts))


def _runtime_crash(app: str, texts: Mapping[str, str]) -> Signature | None:
    """A crash report another runtime printed (a Rust panic, a Java exception, an
    AddressSanitizer report...), signed by its frames (:mod:`rage.crashes`: Socorro's rules
    for native stacks, Sentry's in-app rule for managed ones). Only for a run that failed:
    a program that merely logged a stack trace and went on is not its crash."""
    from rage.crashes import parse, sign

    text = "\n".join(t for t in (_output(texts), texts.get("run/fatal.log") or "") if t)
    crash = parse(text) if text else None
    if crash is None or crash.kind == "python-faulthandler":
        return None  # (a Python dump: the signal's signature reads it, as before)
    full, frames = sign(crash, app)
    kind = crash.kind
    exc = crash.type or None

    def name(f: Mapping[str, Any]) -> str:
        return f"{f.get('module') or ''}::{f.get('function')}".lstrip(":")

    # the app's own frames first (innermost first), then the libraries' it went through
    shown = [name(f) for f in frames if f.get("in_app")][:5] + [
        name(f) + " (library)" for f in frames if not f.get("in_app")][:3]
    reasons = [f"a {kind} report in the output",
               "compared: " + full[:400],
               "frames compared, the app's own first: " + (", ".join(shown) or "none"),
               "ignored: line numbers, file paths, addresses, values in the message"]
    # the hash covers the whole signature text; the readable text is cut by _make
    return _make("crash", app, [kind, full], f"{app}: {full}", exc, reasons=reasons)


# -- Python tracebacks ---------------------------------------------------------------------

def _last_traceback(text: str) -> str | None:
    at = text.rfind(_TB_START)
    return text[at:] if at >= 0 else None


def _parse_traceback(tb: str, app: str) -> tuple[str, list[Frame]] | None:
    # the last "Traceback" block is the exception that propagated (earlier ones are its
    # causes, or exceptions in threads recorded before the crash)
    at = tb.rfind(_TB_START)
    lines = _lines(tb[at:] if at >= 0 else tb)
    frames: list[Frame] = []
    exc = None
    for line in lines[1:]:
        if m := _PY_FRAME.match(line):
            frames.append(_frame(m["path"], m["func"].rstrip(), app))
        elif line and not line[0].isspace() and (e := _EXC_LINE.match(line)):
            exc = e["type"]
            break
    if exc is None:
        return None
    return exc, frames


def _python(app: str, exc: str, frames: list[Frame]) -> Signature:
    in_app = [f for f in frames if f.in_app]
    chosen = in_app or frames
    chosen = _collapse(list(reversed(chosen)))[:MAX_FRAMES]  # innermost first
    names = [str(f) for f in chosen]
    reasons = [f"exception type: {exc}",
               ("in-app frames" if in_app else "library frames (there are no in-app frames)")
               + " compared, innermost first: " + (", ".join(names) or "none"),
               "ignored: line numbers, file paths, the exception message"
               + (f", {len(frames) - len(in_app)} library frame(s)"
                  if in_app and len(frames) > len(in_app) else "")]
    text = f"{exc} in {' < '.join(names)}" if names else exc
    return _make("python", app, [exc, *names], f"{app}: {text}", exc, reasons=reasons)


def _frame(path: str, func: str, app: str) -> Frame:
    path = path.replace("\\", "/")
    if path.startswith("<"):
        name = path.strip("<>").removeprefix("frozen ")
        return Frame(name, func, not path.startswith("<frozen"))
    parts = [p for p in path.split("/") if p] or ["?"]
    parts[-1] = parts[-1].removesuffix(".py")
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    lowered = [p.lower() for p in parts]
    app_pkg = app.replace("-", "_").lower()
    if app_pkg in lowered[:-1]:
        # the app's own package, wherever it is installed: the module from the package down
        return Frame(".".join(parts[len(lowered) - 1 - lowered[::-1].index(app_pkg):]),
                     func, True)
    for i in range(len(parts) - 2, -1, -1):
        if lowered[i] in ("site-packages", "dist-packages") or _PYDIR.fullmatch(lowered[i]):
            return Frame(".".join(parts[i + 1:]), func, False)
    # outside a package tree only the file name is stable across machines
    return Frame(parts[-1], func, True)


def _collapse(frames: list[Frame]) -> list[Frame]:
    """Recursion of any depth reads the same: repeats of a frame (or pair) collapse."""
    out: list[Frame] = []
    for f in frames:
        if out and out[-1] == f:
            continue
        if len(out) >= 3 and out[-2] == f and out[-3] == out[-1]:
            continue
        out.append(f)
    return out


# -- fatal signals -------------------------------------------------------------------------

def _signal_name(sig: Any) -> str:
    import signal as _signal

    if isinstance(sig, int):
        try:
            return _signal.Signals(sig).name
        except ValueError:
            return f"signal {sig}"
    return _clean(sig)[:20] or "signal"


def _signal(app: str, program: str, name: str, texts: Mapping[str, str]) -> Signature:
    gdb = _gdb_frames(texts.get("run/backtrace.txt") or "")
    if gdb:  # the native backtrace the wrapper made from the program's core
        names = gdb[:MAX_FRAMES]
        what = "top frames of the native backtrace (gdb), skipping the abort machinery: "
    else:
        dump = texts.get("run/fatal.log") or _output(texts)
        frames = _faulthandler_frames(dump, app)
        names = [str(f) for f in _collapse(frames)[:3]]  # where it crashed, library or not
        what = "top frames of the faulthandler dump: "
    reasons = [f"program: {program}", f"signal: {name}",
               (what + ", ".join(names)) if names
               else "no faulthandler dump in the bundle: program and signal only"]
    text = f"{_titled(app, [program])} killed by {name}" + (
        f" in {' < '.join(names)}" if names else "")
    return _make("signal", app, [program, name, *names], text, None, reasons=reasons)


_GDB_FRAME = re.compile(r"^#\d{1,4} {1,4}(?:0x[0-9a-fA-F]{1,16} in )?(?P<func>[^\s(]{1,1024})")


def _gdb_frames(text: str) -> list[str]:
    """The functions of the crashing thread's stack in ``gdb``'s ``bt`` (innermost first),
    Socorro's irrelevant frames (``raise``, ``abort``, ``__GI_*``...) skipped, names
    normalised (templates, arguments, Rust hashes); ``??`` (no symbol) kept as it is."""
    from rage.crashes.rules import skipped
    from rage.crashes.symbols import normalise

    lines = _lines(text)[:2000]
    # `thread apply 1 bt` heads the stack with `Thread 1 (...)`: gdb's own first `#0` line
    # above it is where the core stopped, once more
    at = next((i for i, ln in enumerate(lines) if ln.startswith("Thread ")), -1)
    out: list[str] = []
    for line in lines[at + 1:]:
        m = _GDB_FRAME.match(line)
        if m is None:
            continue
        if line.startswith("#0 ") and out:
            break  # a second thread's stack: the first is the crashing one
        func = normalise(m["func"])
        if not skipped(func):
            out.append(func)
    return _collapse_names(out)


def _collapse_names(names: list[str]) -> list[str]:
    return [n for i, n in enumerate(names) if i == 0 or names[i - 1] != n]


def _titled(app: str, words: list[str]) -> str:
    """``app`` and the words that say which command it was, the app's name said once
    (``bash: exit 3``, not ``bash: bash: exit 3``)."""
    if words and words[0] == app:
        return " ".join(words)
    return f"{app}: {' '.join(words)}" if words else app


def _faulthandler_frames(dump: str, app: str) -> list[Frame]:
    lines = _lines(dump)
    for i, line in enumerate(lines):
        # "Current thread 0x... (most recent call first):" is the thread that crashed
        if line.startswith("Current thread") and "most recent call first" in line:
            out = []
            for frame_line in lines[i + 1:]:
                m = _FH_FRAME.match(frame_line)
                if not m:
                    break
                out.append(_frame(m["path"], m["func"].rstrip(), app))
            return out
    return []


# -- plain exits ---------------------------------------------------------------------------

def _exit(app: str, run: Mapping[str, Any], output: str) -> Signature:
    program = _program(run) or app
    argv = run.get("argv") if isinstance(run.get("argv"), list) else []
    assert isinstance(argv, list)
    sub = next((a for a in argv[1:2] if isinstance(a, str) and _WORD.match(a)), None)
    code = run.get("exit_code")
    status = _clean(run.get("status")) or "unknown"
    line = _error_line(output)
    if line:
        # "prog: error" and "prog[123]: error" are the same error as "error"
        line = re.sub(rf"^(?:{re.escape(program)}(?:\[\d+\])?:\s*)+", "", line) or line
    shown = parameterise(line)[:160] if line else None
    words = [program] + ([sub] if sub else [])
    code_text = f"exit {code}" if isinstance(code, int) else status
    # a run that succeeded was reported for its output, not for a failure: not a crash
    kind = "report" if code == 0 and status in {"ok", "unknown"} else "exit"
    reasons = [f"program: {program}", f"subcommand: {sub or 'none'}", f"exit: {code_text}",
               (f"last error-like line of the output, values replaced: {shown}" if shown
                else "no error-like line in the output")]
    if kind == "report":
        reasons.insert(0, "the run succeeded (exit 0): reported for what it did, not a crash")
        code_text = "reported, no failure (exit 0)"
    text = f"{_titled(app, words)}: {code_text}" + (f": {shown}" if shown else "")
    return _make(kind, app, [*words, code_text, shown or ""], text, None, reasons=reasons)


def _error_line(output: str) -> str | None:
    # the last 200 lines, each cut to LINE_MAX: an error message is short, and a megabyte
    # on one line (a progress bar, a blob) must not cost a megabyte of regex work
    lines = [ln.strip()[:LINE_MAX] for ln in output[-64 * 1024:].splitlines()[-200:]]
    lines = [ln for ln in (_ANSI.sub("", ln) for ln in lines) if ln]
    for ln in reversed(lines):
        low = ln.lower()
        if any(word in low for word in _ERRORISH):
            return ln
    return lines[-1] if lines else None


# -- shared --------------------------------------------------------------------------------

def _lines(text: str) -> list[str]:
    """``text``'s lines, each cut to FRAME_LINE_MAX characters before any regex sees it, colours
    removed: the only way uploaded text reaches this module's patterns. A frame or an
    error message is short; a megabyte on one line (a progress bar, a blob, a hostile
    run of blanks) must not cost a megabyte of regex work."""
    return [_ANSI.sub("", ln[:FRAME_LINE_MAX]) for ln in text.splitlines()]


def _output(texts: Mapping[str, str]) -> str:
    return texts.get("run/stderr.log") or texts.get("run/output.log") or ""


def _program(run: Mapping[str, Any]) -> str:
    argv = run.get("argv")
    if isinstance(argv, list) and argv and isinstance(argv[0], str):
        return _clean(argv[0].replace("\\", "/").rsplit("/", 1)[-1])[:64]
    return ""


def _clean(value: Any) -> str:
    if value is None:
        return ""
    return " ".join(str(value).split()).replace("\x00", "")


def _make(kind: str, app: str, key: list[str], text: str, exc: str | None, *,
          reasons: list[str]) -> Signature:
    material = "\x1f".join([str(ALGORITHM_VERSION), kind, app, *key])
    digest = hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    if len(text) > TEXT_MAX:
        text = text[:TEXT_MAX - 1] + "\u2026"
    return Signature(ALGORITHM_VERSION, kind, app[:200], text, digest,
                     exc[:200] if exc else None, tuple(reasons))
