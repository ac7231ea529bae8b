"""The ``packages`` collector: installed distributions, the reporting app's own tree first."""

from __future__ import annotations

import re
from typing import Any

from collectors import _pyprobe
from collectors.base import Collector, Context
from collectors.python import is_other_python, probe_other

MAX_DEPTH = 8
_REQ_NAME_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def app_distribution(app: str) -> Any:
    """The distribution called ``app`` or providing a console script ``app``, else None."""
    from importlib import metadata

    try:
        return metadata.distribution(app)
    except metadata.PackageNotFoundError:
        pass
    for ep in metadata.entry_points(group="console_scripts"):
        if ep.name == app and ep.dist is not None:
            return ep.dist
    return None


def _requirements(dist: Any) -> list[str]:
    """Names of the unconditional requirements of ``dist`` (extras are left out)."""
    names = []
    for req in dist.requires or []:
        marker = req.partition(";")[2]
        if "extra" in marker:
            continue
        m = _REQ_NAME_RE.match(req)
        if m:
            names.append(m.group(1))
    return names


def dependency_tree(dist: Any, seen: set[str] | None = None, depth: int = 0) -> dict[str, Any]:
    """``{"name", "version", "requires": [...]}`` for ``dist``; each project expanded once."""
    from importlib import metadata

    seen = set() if seen is None else seen
    name = str(dist.metadata["Name"])
    seen.add(_pyprobe.normalize(name))
    node: dict[str, Any] = {"name": name, "version": dist.version, "requires": []}
    for req in _requirements(dist):
        key = _pyprobe.normalize(req)
        try:
            sub = metadata.distribution(req)
        except metadata.PackageNotFoundError:
            node["requires"].append({"name": req, "version": None, "missing": True})
            continue
        if key in seen or depth >= MAX_DEPTH:
            node["requires"].append({"name": req, "version": sub.version, "requires": "..."})
            continue
        node["requires"].append(dependency_tree(sub, seen, depth + 1))
    return node


def _tree_names(node: dict[str, Any], out: list[str]) -> list[str]:
    key = _pyprobe.normalize(node["name"])
    if key not in out:
        out.append(key)
    if isinstance(node.get("requires"), list):
        for child in node["requires"]:
            _tree_names(child, out)
    return out


class PackagesCollector(Collector):
    name = "packages"
    description = "Installed Python distributions with versions; the app's dependency tree first"
    timeout = 5.0

    def collect(self, ctx: Context) -> Any:
        if is_other_python(ctx):
            # The app's tree is resolved by rage's interpreter, so it is left out here.
            dists = probe_other(ctx, "packages")["distributions"]
            return {"interpreter": ctx.python, "app": None, "count": len(dists),
                    "distributions": dists}
        from collectors.distcache import app_tree, current

        # (a copy: the cached listing is shared by this process's later reports)
        dists = [dict(d) for d in current()["distributions"]]
        tree = app_tree(ctx.app) if ctx.app else None
        if tree is not None:
            first = _tree_names(tree, [])
            rank = {k: i for i, k in enumerate(first)}
            dists.sort(key=lambda d: (rank.get(_pyprobe.normalize(d["name"]), len(rank)),
                                      _pyprobe.normalize(d["name"])))
        else:
            dists.sort(key=lambda d: _pyprobe.normalize(d["name"]))
        return {"interpreter": ctx.python, "app": tree, "count": len(dists),
                "distributions": dists}
