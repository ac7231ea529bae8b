"""What ``importlib.metadata`` finds on this interpreter's path, kept for the next report.

A report needs the installed distributions three times: the collectors' entry points
(discovery), the ``packages`` listing and pip's version (``python``). Importing
``importlib.metadata`` (email, zipfile, csv...) and reading every distribution's metadata
took 40-60 ms of every report. The answers are kept in ``<rage home>/.cache/`` (one file
per interpreter, 0600, read only if ours: an entry point names code to import) under a
key that says what ``importlib.metadata`` would read: each ``sys.path`` directory that
holds distributions, in order, with every ``*.dist-info``, ``*.egg-info`` and ``*.egg`` in
it and its mtime (a scan and a stat each, ~1 ms for a few hundred distributions).
Installing, upgrading or removing anything changes the key; so does a meta-path finder
that finds distributions of its own, which turns the cache off (its answers cannot be
keyed). A stale or damaged file is ignored: the answers are read again, and saved.

The file is written by :func:`build` (``rage.report.prebuild``, after a recording) and by
any process that had to read the answers itself.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

GROUP = "rage.collectors"
MAX_BYTES = 16 << 20
KEEP = 8  # files kept, the newest (one per interpreter)
_PREFIX = "dists-"
_FORMAT = 2
STATES = 4  # states kept in a file, the newest
_SUFFIXES = (".dist-info", ".egg-info", ".egg")

_lock = threading.Lock()
_current: dict[str, Any] | None = None
_current_key: str | None = None


def state_key() -> str | None:
    """What the metadata lookups would read, in short; None when it cannot be told (a
    meta-path finder other than the standard one may find distributions). A path entry
    that holds no distribution adds nothing to their answers and is left out: `rage
    report`, an app's `mytool rage` and the prebuild (rage.report.prebuild) start with
    different first entries (their scripts' directories, a working directory) and agree."""
    from importlib.machinery import PathFinder

    from rage.digest import sha256

    for finder in sys.meta_path:
        if finder is not PathFinder and hasattr(finder, "find_distributions"):
            return None
    h = sha256(f"{_FORMAT}\0{os.path.realpath(sys.executable)}\0{sys.prefix}\0"
                       f"{sys.version}\0".encode())
    for entry in sys.path:
        where = entry or "."
        try:
            st = os.stat(where)
        except (OSError, ValueError):
            continue  # (one that appears later changes the key then)
        if not os.path.isdir(where):  # a zip file may hold distributions: all of it counts
            h.update(b"\0Z" + os.fsencode(os.path.abspath(where))
                     + b"%d:%d" % (st.st_mtime_ns, st.st_size))
            continue
        try:
            with os.scandir(where) as it:
                found = sorted((e.name, e.stat().st_mtime_ns) for e in it
                               if e.name.lower().endswith(_SUFFIXES))
        except OSError:
            continue
        if found:
            h.update(b"\0P" + os.fsencode(os.path.abspath(where)))
        for name, mtime in found:
            h.update(b"\0D" + os.fsencode(name) + b"%d" % mtime)
    return h.hexdigest()


def _path(root: str) -> str:
    """One file per interpreter and environment (a venv's `python` and `python3` share)."""
    from rage.digest import sha256

    who = sha256(f"{os.path.realpath(sys.executable)}\0{sys.prefix}".encode()
                         ).hexdigest()[:16]
    return os.path.join(root, ".cache", f"{_PREFIX}{who}.json")


def _valid(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    eps, dists = data.get("entry_points"), data.get("distributions")
    return (isinstance(eps, list) and all(
        isinstance(e, list) and len(e) == 4 and all(isinstance(x, str) for x in e[:2])
        and all(x is None or isinstance(x, str) for x in e[2:]) for e in eps)
        and isinstance(dists, list) and all(isinstance(d, dict) for d in dists)
        and (data.get("pip") is None or isinstance(data.get("pip"), str))
        and isinstance(data.get("apps"), dict))


def _states(root: str) -> list[tuple[str, dict[str, Any]]]:
    """The kept states, newest first: (key, answers)."""
    from rage.fsutil import read_own

    raw = read_own(_path(root), MAX_BYTES)
    if not raw:
        return []
    try:
        data = json.loads(raw)
    except ValueError:
        return []
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return []
    states = data.get("states")
    if not isinstance(states, list):
        return []
    return [(k, v) for k, v in (s for s in states if isinstance(s, list) and len(s) == 2)
            if isinstance(k, str) and _valid(v)]


def _save(root: str, key: str, answers: dict[str, Any]) -> None:
    """Keep ``answers`` under ``key``, newest first beside the other states (up to
    :data:`STATES`: a tool run with its own PYTHONPATH and one without do not take turns
    replacing each other's). Best effort: a report never fails for want of a cache."""
    try:
        from rage.fsutil import is_own_dir, private_dir, write_atomic

        path = _path(root)
        head = os.path.dirname(path)
        private_dir(head)
        if not is_own_dir(head):  # never into a planted symlink's target
            return
        states = [[key, answers]] + [[k, v] for k, v in _states(root) if k != key]
        write_atomic(path, json.dumps({"format": _FORMAT, "states": states[:STATES]}).encode())
        from rage.redact.dbcache import prune

        prune(head, _PREFIX, KEEP)
    except Exception:  # any failure only costs the next report the lookups
        pass


def read_live() -> dict[str, Any]:
    """The answers, from ``importlib.metadata`` itself (what the cache holds)."""
    from importlib.metadata import entry_points

    from collectors import _pyprobe

    eps = []
    for ep in entry_points(group=GROUP):
        dist = ep.dist
        eps.append([ep.name, ep.value, dist.metadata["Name"] if dist is not None else None,
                    dist.version if dist is not None else None])
    return {"entry_points": eps, "distributions": _pyprobe.distributions(),
            "pip": _pyprobe.pip_installed(), "apps": {}}


def current(root: str | None = None) -> dict[str, Any]:
    """The answers for this interpreter's path as it is now: from the cache when its key
    still holds, else read (and saved for the next process). Once per process and path."""
    global _current, _current_key
    with _lock:
        key = state_key()
        if _current is not None and key is not None and key == _current_key:
            return _current
        if root is None:
            from rage.paths import home_root_str

            root = home_root_str()
        data = next((v for k, v in _states(root) if k == key), None) if key else None
        if data is None:
            data = read_live()
            if key is not None:
                _save(root, key, data)
        _current, _current_key = data, key
        return data


def build(root: str | None = None, apps: tuple[str, ...] = ()) -> None:
    """Read the answers (and the dependency trees of ``apps``) and save them, unless the
    cache holds them already."""
    current(root)
    for app in apps:
        app_tree(app, root)


def app_tree(app: str, root: str | None = None) -> dict[str, Any] | None:
    """The dependency tree of the distribution called ``app`` or providing its console
    script (``packages``), kept with the answers."""
    data = current(root)
    with _lock:
        trees = data["apps"]
        if app in trees:
            tree = trees[app]
            return tree if isinstance(tree, dict) else None
    from collectors.packages import app_distribution, dependency_tree

    dist = app_distribution(app)
    tree = dependency_tree(dist) if dist is not None else None
    with _lock:
        trees[app] = tree
        key = _current_key
    if key is not None and data is _current:
        if root is None:
            from rage.paths import home_root_str

            root = home_root_str()
        _save(root, key, data)
    return tree


def load_entry_point(value: str) -> Any:
    """What ``importlib.metadata.EntryPoint.load`` gives for ``value`` (``module:attr``,
    extras ignored)."""
    import importlib

    ref = value.split("[", 1)[0].strip()
    module, _, attrs = ref.partition(":")
    obj = importlib.import_module(module.strip())
    for attr in filter(None, attrs.strip().split(".")):
        obj = getattr(obj, attr)
    return obj
