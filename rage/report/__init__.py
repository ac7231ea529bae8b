"""Stage 3, report: a recorded run in, a redacted bundle file out.

Takes a :class:`~rage.record.history.Run` and the settings; returns a
:class:`~rage.report.model.Prepared` (every member redacted, nothing written) and then a
:class:`~rage.report.writer.BuiltBundle` on disk.

- ``select``      which run: RUN, ``--last``, ``--last-failed``, or the user's choice
- ``pipeline``    ``prepare``: collectors and the run's files through one redactor; ``preview``
- ``summary``     the bundle's ``summary.md``
- ``model``       the request, the members, the prepared report (shared types)
- ``writer``      ``write``: only ever a new 0600 file, or standard output
- ``pending``     bundles kept until sent
- ``issue_link``  the line to paste and the pre-filled new-issue URL

``from rage.report import prepare, write, ...`` loads only the module that defines the
name, when it is first used: ``rage pending`` and ``rage send`` never import the pipeline.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (no typing import: recorders import rage.report.prebuild)
if TYPE_CHECKING:  # the names, for the type checker; at run time __getattr__ loads them
    from typing import Any

    from rage.report.model import (
        COLLECTOR_DEADLINE_S as COLLECTOR_DEADLINE_S,
    )
    from rage.report.model import (
        Member as Member,
    )
    from rage.report.model import (
        Prepared as Prepared,
    )
    from rage.report.model import (
        ReportRequest as ReportRequest,
    )
    from rage.report.pipeline import (
        escape_undecodable as escape_undecodable,
    )
    from rage.report.pipeline import (
        fair_shares as fair_shares,
    )
    from rage.report.pipeline import (
        learn_from_record as learn_from_record,
    )
    from rage.report.pipeline import (
        prepare as prepare,
    )
    from rage.report.pipeline import (
        preview as preview,
    )
    from rage.report.pipeline import (
        recorded_environ as recorded_environ,
    )
    from rage.report.writer import (
        STDOUT as STDOUT,
    )
    from rage.report.writer import (
        BuiltBundle as BuiltBundle,
    )
    from rage.report.writer import (
        default_bundle_path as default_bundle_path,
    )
    from rage.report.writer import (
        output_path as output_path,
    )
    from rage.report.writer import (
        write as write,
    )

# name -> the submodule that defines it
_HOME = {
    **dict.fromkeys(("COLLECTOR_DEADLINE_S", "Member", "Prepared", "ReportRequest"), "model"),
    **dict.fromkeys(("escape_undecodable", "fair_shares", "learn_from_record", "prepare",
                     "preview", "recorded_environ"), "pipeline"),
    **dict.fromkeys(("STDOUT", "BuiltBundle", "default_bundle_path", "output_path", "write"),
                    "writer"),
}

__all__ = [
    "COLLECTOR_DEADLINE_S",
    "STDOUT",
    "BuiltBundle",
    "Member",
    "Prepared",
    "ReportRequest",
    "default_bundle_path",
    "escape_undecodable",
    "fair_shares",
    "learn_from_record",
    "output_path",
    "prepare",
    "preview",
    "recorded_environ",
    "write",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'rage.report' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"rage.report.{home}"), name)
