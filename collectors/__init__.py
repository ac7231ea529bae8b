"""Collectors: pluggable, time-boxed gatherers of environment, system and package facts.

Built-ins and plugins register in the ``rage.collectors`` entry-point group; see
:mod:`collectors.base` for the contract, discovery and the runner.
"""

from __future__ import annotations

from collectors.base import (
    Collector,
    CollectorOutput,
    CommandResult,
    Context,
    Discovery,
    Section,
    discover,
    run_collectors,
)

__all__ = [
    "Collector",
    "CollectorOutput",
    "CommandResult",
    "Context",
    "Discovery",
    "Section",
    "discover",
    "run_collectors",
]
