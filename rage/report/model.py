"""What the report stage passes around: the request, the prepared members, the bundle to be.

A leaf of the stage: :mod:`rage.report.pipeline` makes a :class:`Prepared`,
:mod:`rage.report.writer` writes one, and neither imports the other for these types.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rage.bundle.frames import Framed
from rage.config import Settings
from rage.record.history import Run

if TYPE_CHECKING:
    from collectors.base import Section

COLLECTOR_DEADLINE_S = 10.0


@dataclass(frozen=True)
class ReportRequest:
    """What to report and how: the run, settings, the user's note, collector selection."""

    run: Run
    settings: Settings
    note: str | None = None
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    extra_collectors: tuple[Any, ...] = ()
    collect: bool = True  # False: no collectors at all (tests, --no-collect)
    collector_deadline_s: float = COLLECTOR_DEADLINE_S
    # what changed since it last worked, whose bug (False: --no-findings, left out)
    findings: bool = True


@dataclass(frozen=True)
class Member:
    """One bundle member: its name, its (redacted) content in memory or on disk, its size."""

    name: str
    data: bytes | Path | Framed  # Framed: compressed as it was redacted (rage.bundle.frames)
    size: int
    sha256: str = ""


@dataclass(frozen=True)
class Prepared:
    """Everything a bundle will contain, redacted, not yet written.

    Holds a private temporary directory: call :meth:`discard` (or use ``with``) when done.
    """

    request: ReportRequest
    members: list[Member]
    manifest: dict[str, Any]
    summary_md: str
    redaction_counts: dict[str, int]
    sections: list[Section]
    warnings: list[str]
    workdir: Path = field(repr=False)

    @property
    def total_bytes(self) -> int:
        return sum(m.size for m in self.members)

    def discard(self) -> None:
        """Delete the temporary copies; the Prepared is unusable afterwards."""
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Prepared:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()
