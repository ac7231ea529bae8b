"""Helpers for the collector tests: install the dummy plugin distribution for real."""

from __future__ import annotations

import tomllib
from pathlib import Path

FIXTURE_SRC = Path(__file__).parent


def install_plugin_fixture(site: Path) -> list[Path]:
    """Write the fixture's ``.dist-info`` into ``site``; return the sys.path entries to add.

    These are the files an installer writes (METADATA, entry_points.txt), so importlib.metadata
    finds the distribution and its ``rage.collectors`` entry points exactly as for a
    pip-installed plugin.
    """
    project = tomllib.loads((FIXTURE_SRC / "pyproject.toml").read_text())["project"]
    info = site / f"rage_plugin_fixture-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = ["[rage.collectors]"]
    for name, target in project["entry-points"]["rage.collectors"].items():
        lines.append(f"{name} = {target}")
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return [site, FIXTURE_SRC]
