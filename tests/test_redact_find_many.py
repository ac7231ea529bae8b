"""find_many: every position of many needles in one pass, as one find per needle gives them.

The pure-Python scan (no `fast` extra) searched each of its ~400 catalogue prefixes and ~190
multi-line needles with a find of its own over the whole text; they are now searched in one
pass of a regular expression of their first bytes.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rage.redact.scan import find_many, finds

_BYTES = st.binary(min_size=1, max_size=6).map(lambda b: bytes(c % 5 + 97 for c in b))


@settings(max_examples=300, deadline=None)
@given(st.lists(_BYTES, min_size=1, max_size=30),
       st.binary(max_size=400).map(lambda b: bytes(c % 6 + 97 for c in b)))
def test_the_same_positions_as_one_find_per_needle(needles: list[bytes], hay: bytes) -> None:
    """Needles of 1 to 6 bytes over a 5-letter alphabet, in a text of 6 letters: prefixes of
    one another, repeated, overlapping, absent; the positions must be those of the finds."""
    got = find_many(hay, tuple(needles))
    want = {n: list(finds(hay, n)) for n in needles}
    assert got == {n: p for n, p in want.items() if p}


def test_the_multiline_needles_and_catalogue_prefixes() -> None:
    """The real needle sets on a real-looking log, against the finds."""
    from rage.redact.multiline import NEEDLES

    hay = b"".join(b"2026-12-05 INFO job %d: value: x, kind: Secret, -token\" done\n" % i
                   for i in range(2000))
    needles = tuple(dict.fromkeys(NEEDLES))
    got = find_many(hay, needles)
    assert got == {n: p for n in needles if (p := list(finds(hay, n)))}
    assert got[b"kind: Secret"] and got[b"value:"]

