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
    """The distribution called ``app``, or providing a console script ``app`` or a script
    file of that name, else None."""
    from importlib import metadata

    try:
        return metadata.distribution(app)
    except metadata.PackageNotFoundError:
        pass
    for ep in metadata.entry_points(group="console_scripts"):
        if ep.name == app and ep.dist is not None:
            return ep.dist
    # a script installed as a file, not made from an entry point (setuptools' script-files,
    # as rage's own `rage`): its RECORD lists it under the scripts directory, `bin/APP`.
    # Every RECORD is read (0.1-0.2 s), so only for a Python script found on PATH; the
    # answer is kept with the distributions' (distcache)
    if not _python_script(app):
        return None
    for dist in metadata.distributions():
        for f in dist.files or ():
            parts = f.parts
            if len(parts) >= 2 and parts[-1] == app and parts[-2] in ("bin", "Scripts"):
                return dist
    return None


def _python_script(app: str) -> bool:
    """Whether ``app``, beside this interpreter (its environment's scripts) or on PATH, is
    a script run by a Python interpreter (its `#!` line)."""
    import os
    import shutil
    import sys

    for path in (os.path.join(os.path.dirname(sys.executable), app), shutil.which(app)):
        if path is None:
            continue
        try:
            with open(path, "rb") as f:
                first = f.readline(256)
        except OSError:
            continue
        if first.startswith(b"#!") and b"python" in first:
            return True
    return False


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
