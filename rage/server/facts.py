"""What the triage index keeps of a bundle, and what recording one returns (a leaf: the
index and its group commit both use these without importing each other)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

Event = Literal["new", "regression"]


@dataclass(frozen=True)
class BundleFacts:
    """What the index keeps of one bundle (besides its signature)."""

    id: str
    received_at: datetime  # naive UTC
    app: str
    app_version: str | None
    reporter: str  # pseudonymous: see Index.reporter
    run_status: str | None
    command: str
    note: str
    size: int
    findings: tuple[str, ...] = ()  # what the client found (culprit, what changed)


@dataclass(frozen=True)
class Recorded:
    signature_id: int
    signature_hash: str
    event: Event | None
