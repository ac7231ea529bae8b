"""Secrets a report already knows: what redaction removes from the run's context (its
environment and its argv) is removed wherever else it appears, whatever surrounds it.

A program's output repeats its secrets in shapes no rule can know: an xtrace's ``+ echo X``,
a tool that prints its configuration, an error that quotes its input, a connection string
built from ``$DB_PASSWORD``. CI systems mask their secrets' values everywhere for the same
reason. The values are found by the engine itself (the environment as the environment
section redacts it, argv as a command line), kept in memory only, and matched as the
literals :func:`rage.redact_value` registers (``[REDACTED:literal]``). The recorder masks
the secret values it keeps of a run's environment, so a report learns from its own, which is
the run's in the usual case: the same shell, minutes later.

Only values shaped like secrets are learned (:func:`learnable`): ``POSTGRES_PASSWORD=postgres``
is redacted where it is named, but ``postgres`` stays everywhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, AnyStr

from rage.redact.regexcache import compiled
from rage.sensitive import looks_harmless_value

_MARKER = compiled(r"\[REDACTED:[a-z0-9-]+\]")
MIN_LEN = 8  # shorter values are too likely to be ordinary text elsewhere
LONG = 16  # at this length a value is learned whatever its characters


def removed(original: str, redacted: str) -> list[str]:
    """The parts of ``original`` that redaction replaced with markers (``[]`` when the two
    cannot be aligned, e.g. when a pseudonym replaced a name)."""
    pieces = _MARKER.split(redacted)
    if len(pieces) == 1:
        return []
    spans = marker_spans(original, pieces)
    return [] if spans is None else [original[a:b] for a, b in spans]


def marker_spans(text: AnyStr, pieces: Sequence[AnyStr]) -> list[tuple[int, int]] | None:
    """Where each marker between ``pieces`` (a redacted text split at its markers) stands
    in ``text``, the text it was made from: each replaced at least one character, and the
    text after it starts at its earliest place; None if they cannot be aligned. The
    earliest place never rules out an alignment a later one allows (it leaves more of the
    text to what follows), so this finds what ``(.+?)`` between the pieces, matched whole,
    finds first, in one pass, where that expression took the square of the text to fail
    (1.9 s for 400 KB and 800 markers)."""
    if not text.startswith(pieces[0]):
        return None
    spans = []
    pos = len(pieces[0])
    for k, piece in enumerate(pieces[1:], 1):
        if k == len(pieces) - 1:
            at = len(text) - len(piece)
            if not text.endswith(piece) or at <= pos:
                return None
        else:
            at = text.find(piece, pos + 1)
            if at < 0:
                return None
        spans.append((pos, at))
        pos = at + len(piece)
    return spans


def learnable(value: str) -> bool:
    """Is ``value`` shaped like a secret, rather than a word that is also ordinary text?
    At least :data:`MIN_LEN` characters with a letter and a digit or a symbol, or
    :data:`LONG` characters of anything; never evidence (numbers, paths, placeholders)."""
    v = value.strip()
    if len(v) < MIN_LEN or looks_harmless_value(v) or v.startswith("[REDACTED"):
        return False
    if len(v) >= LONG:
        return True
    return any(c.isalpha() for c in v) and any(not c.isalpha() and not c.isspace() for c in v)


def secret_shaped(value: str | bytes) -> bool:
    """Is ``value`` shaped like a token, sure enough to be learned when nothing but a name
    like ``sessionid`` or ``key`` said it was secret (such a name stands before identifiers
    as often: ``sessionid: 0x14ede63a5a70002``, ``key=0|com.example|121|null|10111``)?
    :func:`learnable`, and a token's characters (:func:`rage.redact.values.token_shaped`:
    20 or more with letters and digits, or 12 with both cases and digits)."""
    from rage.redact.values import token_shaped

    v = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return learnable(v) and token_shaped(v.strip())


def known_secrets(redactor: Any, environments: Iterable[Mapping[str, str]],
                  argv: Sequence[str]) -> tuple[str, ...]:
    """The learnable values ``redactor`` removes from each environment (as the environment
    section redacts it) and from ``argv`` (as a command line). A value in which a name was
    also pseudonymised does not align with its input, and is not learned."""
    found: dict[str, None] = {}
    for env in environments:
        clean = redactor.data(dict(env))
        for k, v in env.items():
            found.update(dict.fromkeys(removed(v, clean.get(k, v))))
    argv = [str(a) for a in argv]
    for a, b in zip(argv, redactor.argv(argv), strict=False):
        found.update(dict.fromkeys(removed(a, b)))
    return tuple(s for s in found if learnable(s))
