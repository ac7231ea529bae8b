"""Every branch of every catalogue regex is spelled out by a sample, and redacted.

One sample per kind left the other alternatives of a regex untested (the Stripe entry lost
``prod`` unnoticed). tests/corpus/branches.py walks each regex's parse tree: every
alternative, every literal of a class of literals, every optional part (taken and left out)
must be covered by a corpus sample or a witness in tests/corpus/branch_witnesses.txt, which
is generated for new entries and never pruned, so deleting a branch fails here.
"""

from __future__ import annotations

import re

import pytest

from rage.redact import Redactor
from rage.redact.formats import FORMATS, SecretFormat
from tests.corpus.branches import sites, texts_of, uncovered, witnesses

WITNESSES = witnesses()
KINDS = {f.kind for f in FORMATS}


@pytest.fixture(autouse=True)
def rage_home() -> None:
    """In-process redaction only: no state directory needed (conftest's per-test one)."""


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(pseudonymize=False)


@pytest.mark.parametrize("fmt", FORMATS, ids=[f"{f.kind}#{i}" for i, f in enumerate(FORMATS)])
def test_every_branch_of_the_entry_is_covered(fmt: SecretFormat) -> None:
    missing = [s.describe(fmt.regex) for s in uncovered(fmt, texts_of(fmt.kind))]
    assert not missing, (
        f"{fmt.kind}: no sample or witness needs {missing}; add a sample to "
        "tests/corpus/secrets.py or run: python -m tests.corpus.branches"
    )


@pytest.mark.parametrize(("kind", "text"), WITNESSES,
                         ids=[f"{k}:{i}" for i, (k, _) in enumerate(WITNESSES)])
def test_branch_witness_is_redacted(redactor: Redactor, kind: str, text: str) -> None:
    assert kind in KINDS, f"{kind}: no longer in the catalogue; delete its witnesses"
    matched = [m for f in FORMATS if f.kind == kind
               for m in [re.fullmatch(f.regex, text)] if m is not None]
    assert matched, f"{kind}: no entry matches {text!r} any more: was a branch removed?"
    m = matched[0]
    secret = m.group("secret") if "secret" in m.re.groupindex else m.group(0)
    for line in (text, f"2026-12-06 11:02:03 INFO login with {text} accepted"):
        out = redactor.text(line)
        assert secret not in out, f"{kind}: {line!r} became {out!r}"
        assert f"[REDACTED:{kind}]" in out, out


def test_the_walk_sees_each_kind_of_branch() -> None:
    """The parse-tree walk itself: alternatives, class literals, optional parts."""
    regex = r"[sr]k_(?:live|prod)(?:-x)?_\d+"
    assert sorted(s.describe(regex) for s in sites(regex)) == [
        "'-x' used", "alternative 1 of 2: 'live'", "alternative 2 of 2: 'prod'",
        "class literal 'r'", "class literal 's'", "optional '-x' left out",
    ]
