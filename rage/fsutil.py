"""Private files and atomic writes: everything rage stores is 0700/0600."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) as 0700 directories; return it."""
    missing: list[Path] = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(d, DIR_MODE)
    return path


def open_private(path: Path, mode: str = "wb") -> Any:
    """Open ``path`` for writing, created 0600 (existing files keep their mode)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC
    flags |= os.O_APPEND if "a" in mode else os.O_TRUNC
    fd = os.open(path, flags, FILE_MODE)
    return os.fdopen(fd, mode)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open_private(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json_atomic(path: Path, obj: Any) -> None:
    """Serialise ``obj`` as indented JSON and write it atomically."""
    write_atomic(path, (json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n").encode())
