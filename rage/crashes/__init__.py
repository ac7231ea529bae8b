"""Crash reports that runtimes print, parsed into frames and signed.

Takes the text of a run's output; returns a :class:`~rage.crashes.model.Crash` (kind,
type, message, frames) for the last crash report in it, and a signature that groups
reports of the same failure. One module per runtime family; the skip, prefix and
library rules are data in :mod:`rage.crashes.rules`, each with its source. The text may
be hostile (the receiver reads uploads): every line and list is bounded and every pattern
is linear.
"""

from __future__ import annotations

from typing import Any

from rage.crashes.model import Crash, Frame

__all__ = ["Crash", "Frame", "parse", "sign", "signature_of"]


def parse(text: str) -> Crash | None:
    """The last crash report in ``text``, or None when there is none."""
    from rage.crashes import (
        dotnet,
        faulthandler,
        golang,
        java,
        native,
        node,
        ruby,
        rust,
        sanitizers,
    )
    from rage.crashes.text import lines

    split = lines(text)
    found = [c for c in (p.parse(split) for p in (rust, golang, node, java, dotnet,
                                                   ruby, sanitizers, native, faulthandler)) if c]
    # the last report is the one that ended the run (sanitizers and terminate print theirs
    # last; a Java program may print caught exceptions before the fatal one)
    return max(found, key=lambda c: c.start) if found else None


def signature_of(text: str, app: str) -> tuple[str, list[dict[str, Any]]] | None:
    """A readable signature (no line numbers, paths or values: at most 1000 characters)
    and the frames (innermost first, ``function``, ``module``, ``in_app``, ``file``,
    ``line``; a Java chain's later links follow, each frame naming its ``exception``) of
    the last crash report in ``text``; None when there is none. ``app`` is the app's
    name: a Rust crate of that name is the app's when paths do not say."""
    crash = parse(text)
    return None if crash is None else sign(crash, app)


def sign(crash: Crash, app: str) -> tuple[str, list[dict[str, Any]]]:
    """:func:`signature_of` of a crash :func:`parse` found already (the receiver's
    signature also needs its kind and type: one parse, not two)."""
    from rage.crashes import rust
    from rage.crashes.signature import signature_text

    if crash.kind == "rust-panic":
        crash = rust.attribute(crash, app)
    frames = [dict(f.as_dict(), exception=crash.type) if crash.causes else f.as_dict()
              for f in crash.frames]
    for cause in crash.causes:
        frames += [dict(f.as_dict(), exception=cause.type) for f in cause.frames]
    return signature_text(crash), frames
