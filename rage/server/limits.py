"""Bounds on what one upload may cost the receiver, whatever the bundle holds.

A manifest is stored with the bundle's metadata and read by every page that lists bundles,
so it is bounded three ways before anything keeps it: bytes (checked before it is read),
nesting depth and the number of JSON values (a small compressed upload can carry a manifest
that parses into millions of objects). Lone surrogates (what non-UTF-8 bytes decode to,
legitimately present in a recorded argv) are replaced by U+FFFD so no page or JSON answer
has to encode them, and numbers that are not finite (Python's json reads ``Infinity`` and
``NaN``, which are not JSON) by null, so every JSON answer parses with a strict parser.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from rage.errors import BadInputError

KiB = 1024
MAX_MANIFEST_BYTES = 256 * KiB  # real manifests are a few KiB: run meta + one line per file
MAX_DEPTH = 32
MAX_VALUES = 20_000

_SURROGATE = re.compile(r"[\ud800-\udfff]")
# what PostgreSQL's text cannot hold (NUL) and what no encoder takes (lone surrogates)
_NOT_DB_TEXT = re.compile(r"[\x00\ud800-\udfff]")
# Unicode's format characters (Cf: bidi overrides and isolates, zero-width characters, the
# soft hyphen, tags) and its line and paragraph separators: invisible, or they reorder what
# follows (``invoice\u202efdp.exe`` shows as ``invoiceexe.pdf``). Unicode 15's list; a test
# checks it against the running Python's unicodedata
_INVISIBLE = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f]")
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def loggable(text: str, limit: int = 500) -> str:
    """``text`` for one log line: control characters escaped (an upload cannot forge a line
    or drive the operator's terminal) and long texts cut."""
    text = _UNPRINTABLE.sub(lambda m: ascii(m.group())[1:-1], text)
    return text if len(text) <= limit else text[:limit] + "..."


def clean_text(value: str) -> str:
    """``value`` with lone surrogates replaced (they cannot be encoded as UTF-8)."""
    return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value


def tame_manifest(manifest: dict[str, Any], *, max_depth: int = MAX_DEPTH,
                  max_values: int = MAX_VALUES) -> dict[str, Any]:
    """A copy of ``manifest`` safe to store and render; BadInputError when it is too big.

    Iterative (an explicit stack), so depth costs no Python recursion.
    """
    count = 0
    root: dict[str, Any] = {}
    # (source container, destination container, depth)
    stack: list[tuple[Any, Any, int]] = [(manifest, root, 1)]
    while stack:
        src, dst, depth = stack.pop()
        if depth > max_depth:
            raise BadInputError(f"bad manifest.json in bundle: nested deeper than {max_depth}")
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for key, value in items:
            count += 1
            if count > max_values:
                raise BadInputError(
                    f"bad manifest.json in bundle: more than {max_values} values")
            if isinstance(value, dict):
                new: Any = {}
                stack.append((value, new, depth + 1))
            elif isinstance(value, list):
                new = []
                stack.append((value, new, depth + 1))
            elif isinstance(value, str):
                new = clean_text(value)
            elif isinstance(value, float) and not math.isfinite(value):
                new = None
            else:
                new = value
            if isinstance(dst, dict):
                dst[clean_text(str(key))] = new
            else:
                dst.append(new)
    return root


def json_body(obj: Any) -> bytes:
    """``obj`` as a JSON answer that a strict parser reads: never Infinity or NaN."""
    try:
        text = json.dumps(obj, allow_nan=False)
    except ValueError:  # a manifest stored before non-finite numbers were replaced
        text = json.dumps(_finite(obj), allow_nan=False)
    return (text + "\n").encode()


def _finite(obj: Any) -> Any:
    # recursion: what is answered is a stored manifest (32 levels at most) inside a few more
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def no_constant(name: str) -> Any:
    """``parse_constant`` for json.loads: Infinity, -Infinity and NaN are not JSON."""
    raise ValueError(f"{name} is not a JSON value")


def visible(text: str) -> str:
    """``text`` with every invisible or reordering format character replaced by ``_``."""
    return _INVISIBLE.sub("_", text)


def check_names(manifest: dict[str, Any]) -> None:
    """BadInputError when a member name holds an invisible or bidi format character: a
    name is shown on the page and offered as a download's file name."""
    for entry in manifest.get("files", []):
        name = entry.get("name") if isinstance(entry, dict) else None
        if isinstance(name, str) and (m := _INVISIBLE.search(name)):
            shown = loggable(visible(name), 200)
            raise BadInputError(f"bundle member name {shown!r} holds U+{ord(m.group()):04X}, "
                                "an invisible or bidi format character: refused")


def db_text(value: str) -> str:
    """``value`` as the index keeps and searches it on every database: NUL (which
    PostgreSQL's text refuses, and SQLite keeps) and lone surrogates become U+FFFD, so the
    same upload or query gives the same answer on SQLite and PostgreSQL."""
    return _NOT_DB_TEXT.sub("\ufffd", value) if _NOT_DB_TEXT.search(value) else value
