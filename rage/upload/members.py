"""What the uploaders take from a bundle: its text members for a gist, and a description.

The reading itself is rage.bundle's (one reader, the same safety rules everywhere); what is
left here is the uploader's choice of members (text only, within a gist's size limits) and a
tolerant description of the manifest for links and issue titles.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from rage.errors import BadInputError

TEXT_SUFFIXES = frozenset({".json", ".jsonl", ".md", ".txt", ".log", ".toml", ".yaml", ".yml",
                           ".cfg", ".ini", ".csv"})
MAX_MEMBER = 1024 * 1024  # gists show files up to about 1 MB
MAX_TOTAL = 8 * 1024 * 1024


def read_manifest(path: Path) -> dict[str, Any] | None:
    """The bundle's manifest.json as a JSON object, or None if it cannot be read."""
    # the reader's modules load here, not with the uploader: a report imports this module
    # (its hint line) without reading a bundle
    from rage.bundle import peek_manifest

    try:
        return peek_manifest(path)
    except BadInputError:
        return None


def text_members(path: Path, *, max_member: int = MAX_MEMBER,
                 max_total: int = MAX_TOTAL) -> tuple[dict[str, str], list[str]]:
    """Text members by name (UTF-8, no NULs, within the caps) and the names left out.

    Raises BadInputError if the file is not a sound bundle.
    """
    from rage.bundle import iter_capped

    texts: dict[str, str] = {}
    skipped: list[str] = []
    total = 0

    def wanted(name: str, size: int) -> bool:
        # called just before each member is read, so ``total`` is up to date
        ok = (PurePosixPath(name).suffix.lower() in TEXT_SUFFIXES and size <= max_member
              and total + size <= max_total)
        if not ok:
            skipped.append(name)
        return ok

    for m in iter_capped(path, cap=max_member, keep="head", select=wanted):
        try:
            text = m.data.decode("utf-8")
        except UnicodeDecodeError:
            skipped.append(m.name)
            continue
        if "\x00" in text:
            skipped.append(m.name)
            continue
        texts[m.name] = text
        total += len(m.data)
    return texts, skipped


def describe(manifest: dict[str, Any] | None) -> dict[str, Any]:
    """app, status, exit_code, command from a manifest, tolerating missing fields."""
    m = manifest or {}
    run_raw = m.get("run")
    run: dict[str, Any] = run_raw if isinstance(run_raw, dict) else {}
    app = m.get("app")
    if isinstance(app, dict):
        app = app.get("name")
    app = app or run.get("app")
    argv = run.get("argv")
    return {
        "app": app if isinstance(app, str) else None,
        "status": run.get("status") if isinstance(run.get("status"), str) else None,
        "exit_code": run.get("exit_code") if isinstance(run.get("exit_code"), int) else None,
        "signal": run.get("signal") if isinstance(run.get("signal"), int) else None,
        "argv": [str(a) for a in argv] if isinstance(argv, list) else None,
    }
