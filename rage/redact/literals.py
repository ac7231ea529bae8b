"""Literal secrets registered process-wide (``rage.redact_value``) and the cheap scrubber.

Kept apart from the engine so a log handler can scrub literals without compiling anything.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_literals: tuple[str, ...] = ()  # longest first, so a literal inside another never wins


def register_literal(secret: str) -> None:
    """Remember ``secret`` process-wide: every Redactor and :func:`scrub_literals` replace it.

    Values shorter than 4 characters are ignored: replacing "abc" everywhere would destroy
    the text and protect nothing.
    """
    global _literals
    if not isinstance(secret, str) or len(secret) < 4:
        return
    with _lock:
        if secret not in _literals:
            _literals = tuple(sorted((*_literals, secret), key=len, reverse=True))


def registered_literals() -> tuple[str, ...]:
    """The literals registered so far, longest first."""
    return _literals


def scrub_literals(text: str) -> str:
    """Replace registered literals in ``text`` with ``[REDACTED:literal]`` (no regex layers).

    Meant for hot paths such as log handlers: with nothing registered it returns at once.
    """
    lits = _literals
    if not lits:
        return text
    for lit in lits:
        if lit in text:
            text = text.replace(lit, "[REDACTED:literal]")
    return text
