"""Reading the text members of a bundle (.tar.zst) without extracting it anywhere."""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from rage.errors import BadInputError

TEXT_SUFFIXES = frozenset({".json", ".jsonl", ".md", ".txt", ".log", ".toml", ".yaml", ".yml",
                           ".cfg", ".ini", ".csv"})
MAX_MEMBER = 1024 * 1024  # gists show files up to about 1 MB
MAX_TOTAL = 8 * 1024 * 1024


def _safe(name: str) -> bool:
    p = PurePosixPath(name)
    return bool(name) and not p.is_absolute() and ".." not in p.parts


def iter_members(path: Path) -> Iterator[tuple[str, int, Any]]:
    """Yield ``(name, size, fileobj)`` for each regular, safely named member, in order."""
    import zstandard

    try:
        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as zr, \
                tarfile.open(fileobj=zr, mode="r|") as tar:
            for info in tar:
                if info.isfile() and _safe(info.name):
                    yield info.name, info.size, tar.extractfile(info)
    except (tarfile.TarError, zstandard.ZstdError, EOFError) as e:
        raise BadInputError(f"{path} is not a readable bundle: {e}") from None


def read_manifest(path: Path) -> dict[str, Any] | None:
    """The bundle's manifest.json (the first member by convention), or None."""
    try:
        for name, size, f in iter_members(path):
            if name == "manifest.json" and size <= MAX_MEMBER:
                data = json.loads(f.read())
                return data if isinstance(data, dict) else None
    except (BadInputError, OSError, ValueError):
        return None
    return None


def text_members(path: Path, *, max_member: int = MAX_MEMBER,
                 max_total: int = MAX_TOTAL) -> tuple[dict[str, str], list[str]]:
    """Text members by name (UTF-8, no NULs, within the caps) and the names left out."""
    texts: dict[str, str] = {}
    skipped: list[str] = []
    total = 0
    for name, size, f in iter_members(path):
        if PurePosixPath(name).suffix.lower() not in TEXT_SUFFIXES or size > max_member \
                or total + size > max_total:
            skipped.append(name)
            continue
        data = f.read(max_member + 1)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            skipped.append(name)
            continue
        if "\x00" in text:
            skipped.append(name)
            continue
        texts[name] = text
        total += len(data)
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
