"""The distributions a report's collectors need (entry points, the packages listing, pip's
version) are kept in the rage home: a second report reads no distribution metadata (it
never imports importlib.metadata), says the same, and sees at once a plugin installed,
upgraded or removed. A cache file others could have written is never loaded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.plugin_fixture.install import install_plugin_fixture

ROOT = Path(__file__).resolve().parent.parent

# discovery and the two collectors that read distributions, as a report runs them
CHILD = """
import json, sys
from collectors.base import Context, discover, run_collectors
found = discover()
sections = run_collectors(found.collectors, Context(app="demo"), only=["python", "packages"])
print(json.dumps({"metadata": "importlib.metadata" in sys.modules,
                  "collectors": found.sources,
                  "sections": {s.name: s.data for s in sections}}))
"""


def child(home: Path, *path: Path) -> dict[str, Any]:
    env = {**os.environ, "RAGE_HOME": str(home),
           "PYTHONPATH": os.pathsep.join([*map(str, path), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                         text=True, timeout=60, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def versions(got: dict[str, Any]) -> dict[str, str]:
    return {d["name"]: d["version"] for d in got["sections"]["packages"]["distributions"]}


def test_the_second_report_reads_no_metadata_and_says_the_same(rage_home: Path) -> None:
    first = child(rage_home)
    assert first["metadata"]  # read for real, and kept
    second = child(rage_home)
    assert not second["metadata"]
    assert second["collectors"] == first["collectors"]
    assert second["sections"] == first["sections"]
    assert first["sections"]["packages"]["count"] > 10
    assert list((rage_home / ".cache").glob("dists-*.json"))


def test_a_plugin_installed_upgraded_and_removed_is_seen_at_once(rage_home: Path,
                                                                 tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    before = child(rage_home, site)
    assert "dummy" not in before["collectors"]
    assert not child(rage_home, site)["metadata"]  # kept

    paths = install_plugin_fixture(site)
    installed = child(rage_home, *paths)
    assert installed["collectors"]["dummy"] == "rage-plugin-fixture 1.2.3"
    assert versions(installed)["rage_plugin_fixture"] == "1.2.3"

    info = site / "rage_plugin_fixture-1.2.3.dist-info"
    new = site / "rage_plugin_fixture-1.3.0.dist-info"
    info.rename(new)
    meta = new / "METADATA"
    meta.write_text(meta.read_text().replace("1.2.3", "1.3.0"))
    upgraded = child(rage_home, *paths)
    assert upgraded["collectors"]["dummy"] == "rage-plugin-fixture 1.3.0"
    assert versions(upgraded)["rage_plugin_fixture"] == "1.3.0"

    shutil.rmtree(new)
    removed = child(rage_home, *paths)
    assert "dummy" not in removed["collectors"]
    assert "rage_plugin_fixture" not in versions(removed)


def test_a_cache_others_could_write_is_never_loaded(rage_home: Path, tmp_path: Path) -> None:
    planted = tmp_path / "planted"
    planted.mkdir()
    marker = tmp_path / "imported"
    (planted / "planted_mod.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "from collectors.platform import PlatformCollector as Planted\n")
    child(rage_home, planted)  # keeps the answers for this path
    [cache] = (rage_home / ".cache").glob("dists-*.json")
    data = json.loads(cache.read_text())
    data["states"][0][1]["entry_points"].append(["planted", "planted_mod:Planted", "evil", "1"])
    cache.write_text(json.dumps(data))

    cache.chmod(0o646)  # others may write it: not ours to trust
    got = child(rage_home, planted)
    assert not marker.exists() and "planted" not in got["collectors"]
    assert got["metadata"]  # read again for real

    # the control: the same file, private, is loaded (what the test would miss otherwise)
    cache.write_text(json.dumps(data))
    cache.chmod(0o600)
    child(rage_home, planted)
    assert marker.exists()


def test_path_entries_without_distributions_do_not_matter(rage_home: Path,
                                                          tmp_path: Path) -> None:
    """`rage report`, an app's `mytool rage` and the prebuild start with different first
    path entries (their scripts' directories) that hold no distribution: they share."""
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (two / "some_module.py").write_text("")
    assert child(rage_home, one)["metadata"]
    again = child(rage_home, two)
    assert not again["metadata"]
    assert again["sections"]["packages"] == child(rage_home, one)["sections"]["packages"]


def test_two_paths_taking_turns_both_stay_kept(rage_home: Path, tmp_path: Path) -> None:
    """A tool run with its own PYTHONPATH (a plugin there) and one without."""
    site = tmp_path / "site"
    paths = install_plugin_fixture(site)
    assert child(rage_home)["metadata"]
    assert child(rage_home, *paths)["metadata"]
    for _ in range(2):
        assert not child(rage_home)["metadata"]
        with_plugin = child(rage_home, *paths)
        assert not with_plugin["metadata"] and "dummy" in with_plugin["collectors"]
