"""Reading ``meta.json`` (and ``environ.json``) back: only what rage itself writes is accepted.

A record can be damaged (a crash mid-write, a full disk, an editor, a hostile user of a shared
home): :func:`read_meta` raises OSError or ValueError for anything rage would not have
written, so one bad record is skipped with a warning instead of breaking every command
that lists, shows, reports or prunes runs. :func:`fatal_signal` reads the Python
recorder's faulthandler dump the same careful way.
"""

from __future__ import annotations

import json
import signal as _signal
from pathlib import Path
from typing import Any

from rage.fsutil import read_own

META_MAX_BYTES = 4 * 1024 * 1024  # rage writes a few KiB; argv can be long, not this long
META_MAX_DEPTH = 32  # rage writes 3 levels


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number rage writes")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):  # 1e400
        raise ValueError(f"{text} is out of range")
    return value


def _check_value(value: object, depth: int = 0) -> None:
    """ValueError unless ``value`` is plain data every renderer can print: nested at most
    :data:`META_MAX_DEPTH` deep, its strings valid Unicode. The one kind of lone surrogate
    allowed is U+DC80..U+DCFF: how Python (and so the recorder) spells an undecodable byte of
    argv, a path or an environment value; every renderer escapes those as ``\\xNN``."""
    if depth > META_MAX_DEPTH:
        raise ValueError(f"nested deeper than {META_MAX_DEPTH}")
    if isinstance(value, str):
        if not value.isascii():
            # UnicodeEncodeError (a ValueError) on any other lone surrogate
            value.encode("utf-8", "surrogateescape")
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_value(k, depth + 1)
            _check_value(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_value(v, depth + 1)


def _parse(raw: bytes, limit: int, size: str) -> Any:
    """JSON that rage wrote, read back within ``limit`` bytes (``size`` says it): finite
    numbers only; ValueError for more, or nested past what the parser can take."""
    if len(raw) > limit:
        raise ValueError(f"larger than {size}")
    try:
        return json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError("nested too deep") from None


def read_meta(run_dir: Path) -> dict[str, Any]:
    """``meta.json`` as rage wrote it; OSError/ValueError for anything else: missing, a
    symlink, a FIFO or device, too large, NaN or out-of-range numbers, deep nesting, lone
    surrogates, not an object."""
    raw = read_own(run_dir / "meta.json", META_MAX_BYTES + 1)
    if raw is None:
        if not (run_dir / "meta.json").exists():
            raise FileNotFoundError("meta.json is missing")
        raise ValueError("not a regular file of yours")
    meta = _parse(raw, META_MAX_BYTES, f"{META_MAX_BYTES} bytes")
    if not isinstance(meta, dict):
        raise ValueError("not an object")
    _check_value(meta)
    return meta


ENVIRON_MAX_BYTES = 4 * 1024 * 1024  # Linux caps a process's environment near 2 MiB


def read_environ(run_dir: Path) -> dict[str, str] | None:
    """``environ.json`` as a recorder wrote it (variable names to values, secret-named
    values already masked); None when the run has none (older records, no recorder kept
    it). ValueError or OSError, with the reason, for anything a recorder would not have
    written: larger than :data:`ENVIRON_MAX_BYTES` (only that much is ever read), a
    symlink, FIFO or device, not yours, not JSON, nested or not all strings, lone
    surrogates other than undecodable bytes."""
    path = run_dir / "environ.json"
    raw = read_own(path, ENVIRON_MAX_BYTES + 1)
    if raw is None:
        if not path.exists() and not path.is_symlink():
            return None
        raise ValueError("not a regular file of yours")
    data = _parse(raw, ENVIRON_MAX_BYTES, f"{ENVIRON_MAX_BYTES // (1024 * 1024)} MiB")
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError("not an object of strings")
    _check_value(data)
    return data


_FATAL_NAMES = {
    "Segmentation fault": "SIGSEGV", "Aborted": "SIGABRT", "Bus error": "SIGBUS",
    "Illegal instruction": "SIGILL", "Floating point exception": "SIGFPE",
}


def fatal_signal(run_dir: Path) -> int | None:
    """The signal named in a non-empty ``fatal.log`` (0 if unnamed), None if there is none."""
    data = read_own(run_dir / "fatal.log", 4096)
    if data is None:
        return None
    head = data.decode("utf-8", "replace")
    if not head.strip():
        return None
    for text, name in _FATAL_NAMES.items():
        if text in head and hasattr(_signal, name):
            return int(getattr(_signal, name))
    return 0
