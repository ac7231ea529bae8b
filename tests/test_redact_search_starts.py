"""catalogue.search_starts with the scan's finds (``found``) gives what it gives searching
each prefix itself, in the same order at a start; and when the scan found no prefix (the
marker alone, as for most strings) it returns before looking at the searched formats."""

from __future__ import annotations

import re
from typing import Any

from rage.redact.catalogue import search_starts
from rage.redact.scan import finds

Entry = tuple[re.Pattern[bytes], str]
A: Entry = (re.compile(rb"[A-Za-z0-9]{6}tok_[a-z0-9]{8}"), "a")
B: Entry = (re.compile(rb"\w{6}tok_\w+"), "b")  # the same prefix and start as A
C: Entry = (re.compile(rb"[0-9]+-key-[a-z]+"), "c")
D: Entry = (re.compile(rb"id=[a-f0-9]{8}:sec"), "d")

SEARCHED: dict[bytes, tuple[Entry, ...]] = {b"tok_": (A, B), b"-key-": (C,), b":sec": (D,)}
TEXTS = [b"", b"plain line\nnothing here\n", b"xxABCDEFtok_abcdefgh and 12-key-xy\n",
         b"12-key-ab 34-key-cd\nid=deadbeef:sec tok_ too short\nABCDEFtok_12345678",
         b"tok_tok_tok_abcdefgh\n99-key-z", b"no prefix at all" * 50]


def scanned(text: bytes) -> dict[bytes, list[int]]:
    """What the native scan leaves in ``found``: the marker, and each prefix it found."""
    found: dict[bytes, list[int]] = {b"": []}
    for prefix in SEARCHED:
        found.update({prefix: list(finds(text, prefix))} if prefix in text else {})
    return found


def test_the_scan_s_finds_give_the_same_hits_in_the_same_order() -> None:
    for text in TEXTS:
        searching: dict[int, list[Entry]] = {}
        search_starts(text, SEARCHED, searching)
        given: dict[int, list[Entry]] = {}
        search_starts(text, SEARCHED, given, scanned(text))
        assert [(k, [e[1] for e in v]) for k, v in given.items()] == [
            (k, [e[1] for e in v]) for k, v in searching.items()], text
    hits: dict[int, list[Entry]] = {}
    search_starts(TEXTS[2], SEARCHED, hits, scanned(TEXTS[2]))
    assert {k: [e[1] for e in v] for k, v in hits.items()} == {2: ["a", "b"], 25: ["c"]}


class Watched(dict[bytes, tuple[Entry, ...]]):
    """The searched formats, counting the walks over them."""

    walks = 0

    def items(self) -> Any:
        type(self).walks += 1
        return super().items()


def test_no_prefix_found_returns_without_a_walk() -> None:
    searched = Watched(SEARCHED)
    hits: dict[int, list[Entry]] = {}
    for text in TEXTS[:2] + TEXTS[-1:]:
        search_starts(text, searched, hits, scanned(text))
    assert hits == {} and Watched.walks == 0
    search_starts(TEXTS[2], searched, hits, scanned(TEXTS[2]))
    assert len(hits) == 2 and Watched.walks == 1
