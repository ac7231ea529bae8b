"""Reading selected members of a bundle, each capped to its head or its tail, in one pass.

For showing a bundle rather than checking it: the receiver's page keeps the end of each
member (the end of a log matters most), the gist uploader keeps whole small text members.
The same safety rules apply as for any read (see :mod:`rage.bundle.stream`); checksums are
not verified here (that is :func:`rage.bundle.validate_bundle`'s job).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from rage.bundle.stream import CHUNK, DEFAULT_MAX_DECOMPRESSED, Member, Source, iter_members
from rage.errors import BadInputError

Keep = Literal["head", "tail"]
Select = Callable[[str, int], bool]


@dataclass(frozen=True)
class CappedMember:
    """One member's content for display: at most ``cap`` bytes of it, ``cut`` if it was cut.

    ``size`` is the member's full size; ``data`` its head or its tail, as asked.
    ``lines_before`` counts the newlines in what a tail read left out, so the kept lines can
    be numbered as they are in the whole member.
    """

    name: str
    size: int
    data: bytes
    cut: bool
    lines_before: int = 0

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def _head(m: Member, cap: int) -> bytes:
    buf = bytearray()
    while len(buf) < cap and (chunk := m.read(min(CHUNK, cap - len(buf)))):
        buf += chunk
    if len(buf) < min(cap, m.size):
        raise BadInputError(f"corrupt bundle: member {m.name!r} is truncated")
    return bytes(buf)  # the rest is skipped (still inflated and counted) by the tar stream


def _tail(m: Member, cap: int) -> tuple[bytes, int]:
    buf = bytearray()
    dropped_lines = 0

    def keep_end(chunk: bytes) -> None:
        nonlocal dropped_lines
        buf.extend(chunk)
        if len(buf) > cap:
            cut = len(buf) - cap
            dropped_lines += buf.count(b"\n", 0, cut)
            del buf[:cut]

    m.pump(keep_end)
    return bytes(buf), dropped_lines


def iter_capped(src: Source, *, cap: int, keep: Keep = "tail", select: Select | None = None,
                max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> Iterator[CappedMember]:
    """Yield the members that ``select(name, size)`` accepts (all when None), capped.

    ``select`` is called lazily, just before each member is read, so it may depend on what
    the caller did with the members yielded so far. Raises BadInputError as any read does.
    """
    if cap < 0:
        raise ValueError("cap must be >= 0")
    members = iter_members(src, max_decompressed)
    with contextlib.closing(members):
        for m in members:
            if select is not None and not select(m.name, m.size):
                continue
            if keep == "head":
                yield CappedMember(m.name, m.size, _head(m, cap), m.size > cap)
            else:
                data, lines_before = _tail(m, cap)
                yield CappedMember(m.name, m.size, data, m.size > cap, lines_before)


def read_members(src: Source, *, cap: int, keep: Keep = "tail", select: Select | None = None,
                 max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> dict[str, CappedMember]:
    """:func:`iter_capped`, collected by name (archive order)."""
    return {c.name: c for c in iter_capped(src, cap=cap, keep=keep, select=select,
                                           max_decompressed=max_decompressed)}
