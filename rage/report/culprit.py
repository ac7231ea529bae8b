"""Whose bug is it? The third-party distribution (or system package) a crash happened in.

When the innermost frames of a Python traceback are in a distribution that is not the app's
own (``requests``, ``urllib3``), the report names it with its version and its issue
tracker, read from its installed metadata (``Project-URL: Issues``, ``Bug Tracker``, ...),
so the user can tell its maintainers too. Frames are mapped to distributions through the
``*.dist-info/RECORD`` files beside them (any interpreter's site-packages, a ``--target``
directory), never by importing anything of the run's. For a wrapped native program that
crashed, the system's package manager names the package its executable belongs to
(``dpkg -S``, ``rpm -qf``; Homebrew by its ``Cellar`` path).

Everything here reads the local machine only; what it returns is public metadata (names,
versions, URLs) and goes into the bundle's manifest and summary.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

LINE_MAX = 8192  # characters of a traceback line read: a frame's path is at most PATH_MAX
TEXT_MAX = 1024 * 1024  # of a run file: the traceback that ended a run is near its end
RECORD_MAX = 4 * 1024 * 1024  # bytes of a RECORD or METADATA file read
_FRAME = re.compile(r'^\s{0,16}File "(?P<path>[^"\n]{1,4096})", line \d{1,9}, in ')
TB_START = "Traceback (most recent call last):"
# Project-URL labels that name an issue tracker (as PyPI shows them, lower case, no spaces)
_TRACKER_LABELS = ("issues", "bugtracker", "issuetracker", "bugs", "tracker", "bugreports",
                   "issue", "bugreport")
_SOURCE_LABELS = ("source", "sourcecode", "repository", "code", "github", "gitlab", "homepage",
                  "home")
_FORGES = ("https://github.com/", "https://gitlab.com/", "https://codeberg.org/")


@dataclass(frozen=True)
class Culprit:
    """A distribution or system package a crash happened in."""

    name: str
    version: str | None
    tracker: str | None  # its issue tracker's address
    kind: str = "python"  # python | dpkg | rpm | homebrew
    where: str | None = None  # the innermost frame's file, or the executable

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def traceback_frames(text: str) -> list[str]:
    """The file of each frame of the last Python traceback in ``text``, outermost first."""
    at = text.rfind(TB_START)
    if at < 0:
        return []
    out = []
    for line in text[at:].splitlines()[1:]:
        m = _FRAME.match(line[:LINE_MAX])
        if m:
            out.append(m["path"])
        elif line[:1] not in (" ", "\t", "") and not line.startswith("  "):
            break  # the exception line: the traceback ends
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _headers(text: str) -> list[tuple[str, str]]:
    """The header fields of a METADATA file (RFC 822 style, up to the first blank line)."""
    out: list[tuple[str, str]] = []
    for line in text.splitlines():
        if not line.strip():
            break
        if line[:1] in (" ", "\t") and out:
            continue  # a continuation line (a long Description-Content-Type, a licence)
        key, sep, value = line.partition(":")
        if sep:
            out.append((key.strip(), value.strip()))
    return out


def tracker_of(headers: Iterable[tuple[str, str]]) -> str | None:
    """The issue tracker a distribution's metadata names: a ``Project-URL`` labelled as one,
    else its source or home page on a forge, plus ``/issues``."""
    trackers, sources = [], []
    for key, value in headers:
        if key.lower() == "project-url" and "," in value:
            label, _, url = value.partition(",")
            label, url = re.sub(r"[\s_.\-]", "", label.lower()), url.strip()
            if not url.startswith(("https://", "http://")):
                continue
            if label in _TRACKER_LABELS:
                trackers.append(url)
            elif label in _SOURCE_LABELS:
                sources.append(url)
        elif key.lower() == "home-page" and value.startswith(("https://", "http://")):
            sources.append(value)
    if trackers:
        return trackers[0]
    for url in sources:
        if url.startswith(_FORGES):
            parts = url[len("https://"):].rstrip("/").split("/")
            if len(parts) >= 3:
                return "https://" + "/".join(parts[:3]) + "/issues"
    return None


@dataclass(frozen=True)
class _Dist:
    name: str
    version: str | None
    tracker: str | None
    files: frozenset[str]


def _read(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(RECORD_MAX).decode("utf-8", "replace")
    except OSError:
        return ""


def _dists(directory: Path, cache: dict[Path, list[_Dist]]) -> list[_Dist]:
    """The distributions installed in ``directory`` (its ``*.dist-info``), with their files."""
    if directory in cache:
        return cache[directory]
    found: list[_Dist] = []
    try:
        infos = [p for p in directory.iterdir() if p.name.endswith(".dist-info") and p.is_dir()]
    except OSError:
        infos = []
    for info in infos[:2000]:
        headers = _headers(_read(info / "METADATA"))
        fields = dict(headers)
        name = fields.get("Name")
        if not name:
            continue
        files = frozenset(line.split(",", 1)[0] for line in _read(info / "RECORD").splitlines())
        found.append(_Dist(name, fields.get("Version"), tracker_of(headers), files))
    cache[directory] = found
    return found


def owner(path: str, cache: dict[Path, list[_Dist]] | None = None) -> _Dist | None:
    """The distribution that installed the file ``path``: its RECORD, in an ancestor
    directory of ``path`` (site-packages, dist-packages, a ``--target`` directory), lists
    it."""
    cache = {} if cache is None else cache
    p = Path(path)
    for depth, parent in enumerate(p.parents):
        if depth >= 8 or parent == parent.parent:
            break
        dists = _dists(parent, cache)
        if not dists:
            continue
        rel = p.relative_to(parent).as_posix()
        for d in dists:
            if rel in d.files:
                return d
        if parent.name in ("site-packages", "dist-packages"):
            break
    return None


def _stdlib(path: str) -> bool:
    """A frame of the interpreter's own library (``lib/python3.X/``, not its packages)."""
    if path.startswith("<"):
        return True  # <frozen runpy>, <string>
    return bool(re.search(r"[/\\]lib[/\\]python\d(?:\.\d+)?[/\\]", path)) and not re.search(
        r"[/\\](?:site|dist)-packages[/\\]", path)


def python_culprit(text: str, app: str) -> Culprit | None:
    """The distribution the last traceback in ``text`` ended in, when it is not ``app``'s
    own: its innermost frame outside the standard library is in a distribution whose name
    is not the app's and which is not the one its outermost frame (the app's entry
    point) is in. None for a crash in the app's own code."""
    frames = [f for f in traceback_frames(text) if not _stdlib(f)]
    if not frames:
        return None
    cache: dict[Path, list[_Dist]] = {}
    inner = owner(frames[-1], cache)
    if inner is None or _norm(inner.name) == _norm(app):
        return None
    outer = owner(frames[0], cache)
    if outer is not None and outer.name == inner.name:
        return None  # the whole traceback is the app's (installed as this distribution)
    return Culprit(inner.name, inner.version, inner.tracker, "python", frames[-1])


def _run(argv: list[str]) -> str | None:
    """What a package manager's query printed; None if it is not here or found nothing.
    No shell, no pager, no prompt, a short timeout."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=5, check=False,
                              stdin=subprocess.DEVNULL,
                              env={**os.environ, "PAGER": "cat", "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 and proc.stdout.strip() else None


def native_culprit(executable: str) -> Culprit | None:
    """The system package ``executable`` belongs to: dpkg, rpm, or a Homebrew Cellar."""
    if not os.path.isabs(executable):
        return None
    real = os.path.realpath(executable)
    m = re.search(r"/Cellar/(?P<name>[^/]+)/(?P<version>[^/]+)/", real)
    if m:
        return Culprit(m["name"], m["version"], None, "homebrew", real)
    import shutil

    if shutil.which("dpkg-query"):
        # merged /usr: dpkg may know /bin/dash where the file is /usr/bin/dash
        merged = [p[4:] for p in (executable, real) if p.startswith(("/usr/bin/", "/usr/sbin/",
                                                                      "/usr/lib/"))]
        for path in dict.fromkeys((executable, real, *merged)):
            out = _run(["dpkg-query", "-S", path])
            if out:
                pkg = out.splitlines()[0].split(":", 1)[0].strip()
                info = _run(["dpkg-query", "-W", "-f", "${Version}\n${Homepage}\n", pkg])
                version, _, home = (info or "\n").partition("\n")
                tracker = f"https://bugs.debian.org/{pkg}" if _debian() else (
                    home.strip() or None)
                return Culprit(pkg, version.strip() or None, tracker, "dpkg", path)
    if shutil.which("rpm"):
        out = _run(["rpm", "-qf", "--qf", "%{NAME}\n%{VERSION}-%{RELEASE}\n%{BUGURL}\n", real])
        if out:
            name, version, bugurl = [*out.splitlines(), "", ""][:3]
            return Culprit(name, version or None,
                           bugurl if bugurl.startswith("http") else None, "rpm", real)
    return None


def _debian() -> bool:
    try:
        text = Path("/etc/os-release").read_text()[:4096]
    except OSError:
        return False
    return bool(re.search(r"^ID=\"?debian\"?$", text, re.M))


def find(app: str, meta: Mapping[str, Any], texts: Iterable[str]) -> Culprit | None:
    """Whose bug the run ``meta`` of ``app`` is: the distribution its last Python traceback
    (in ``texts``, the run's traceback and output, raw) ended in, else, for a wrapped
    program that crashed (a signal), the system package of its executable."""
    for text in texts:
        if TB_START in text:
            return python_culprit(text, app)
    exe = meta.get("executable")
    if meta.get("signal") and isinstance(exe, str):
        return native_culprit(exe)
    return None


def issue_link(culprit: Culprit, title: str, body: str) -> str | None:
    """A pre-filled new issue on the culprit's tracker, when it is a forge's issue list
    (GitHub, GitLab, Codeberg); else its tracker's address as it is."""
    if not culprit.tracker:
        return None
    if culprit.tracker.startswith(_FORGES) and culprit.tracker.rstrip("/").endswith("/issues"):
        from rage.report.issue_link import new_issue_url

        return new_issue_url(culprit.tracker, title, body)
    return culprit.tracker


def describe(culprit: Culprit) -> str:
    """``requests 2.32.3`` / ``the package coreutils 9.1-1``."""
    what = culprit.name + (f" {culprit.version}" if culprit.version else "")
    return what if culprit.kind == "python" else f"the {culprit.kind} package {what}"
