"""Member names: the fixed ones, and the rules that keep a name inside the extraction root."""

from __future__ import annotations

import re

from rage.errors import BadInputError

SCHEMA = 1  # the manifest's "schema": what this rage writes and reads
MANIFEST = "manifest.json"
SUMMARY = "summary.md"
MAX_NAME = 1024
# control characters would let a name forge log lines or drive a terminal; lone surrogates
# are what non-UTF-8 bytes decode to, and no page or JSON answer can carry them. None of
# them is printable (categories Cc, Cs): a printable name is searched for none, and the
# class compiled at the first that is not (~4M instructions: its range past U+00FF)
_UNPRINTABLE = r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]"


def check_member_name(name: str) -> str:
    """Return ``name`` if it is already a plain relative POSIX path, else raise BadInputError.

    Plain means: not empty, not absolute, no ``\\``, no control characters, valid UTF-8,
    and no empty, ``.`` or ``..`` component. The writer uses this strict form so a bundle
    never depends on normalisation.
    """
    parts = name.split("/")
    if (not name or "\\" in name or len(name) > MAX_NAME
            or (not name.isprintable() and re.search(_UNPRINTABLE, name))
            or any(part in {"", ".", ".."} for part in parts)):
        raise BadInputError(f"unsafe member name in bundle: {name[:200]!a}")
    return name


def normalize_member_name(name: str) -> str:
    """The plain form of a name found in an archive (``./a//b/`` -> ``a/b``), checked.

    Readers accept the harmless spellings other tar writers use, but never an absolute path
    or a ``..`` component: those raise BadInputError like any unsafe name.
    """
    if "/." not in name and "//" not in name and not name.startswith((".", "/")):
        return check_member_name(name.removesuffix("/"))  # the common case: already plain
    if name.startswith("/"):
        raise BadInputError(f"unsafe member name in bundle (absolute): {name[:200]!r}")
    if "\\" in name or "\0" in name:
        return check_member_name(name)  # refused, with the usual message
    plain = "/".join(p for p in name.split("/") if p not in ("", "."))
    return check_member_name(plain or name)
