"""Facts about a Python interpreter, computed inside it.

Imported by the ``python`` and ``packages`` collectors for the reporting interpreter. For the
interpreter of a reported run, when that is another one, run as ``<python> -c <this source>
[packages]``, printing JSON (not as a file: its directory would go first on sys.path and this
package's ``platform.py`` would shadow the standard one). Standard library only, Python 3.8+.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any

_ASK = object()


def pip_installed() -> str | None:
    """The version of pip this interpreter has installed, None without one."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # Python < 3.8
        return None
    try:
        return version("pip")
    except PackageNotFoundError:
        return None


def interpreter(pip: Any = _ASK) -> dict[str, Any]:
    """The interpreter, its prefixes, venv/conda detection, pip version and sys.path;
    ``pip``: its version when the caller knows it (collectors.distcache)."""
    prefix, base = sys.prefix, getattr(sys, "base_prefix", sys.prefix)
    conda = os.path.isdir(os.path.join(prefix, "conda-meta"))
    pip_version = pip_installed() if pip is _ASK else pip
    return {
        "executable": sys.executable,
        "version": platform.python_version(),
        "version_info": list(sys.version_info[:3]),
        "implementation": platform.python_implementation(),
        "build": " ".join(platform.python_build()),
        "compiler": platform.python_compiler(),
        "prefix": prefix,
        "base_prefix": base,
        "virtualenv": prefix != base,
        "conda": conda,
        "conda_env": os.environ.get("CONDA_DEFAULT_ENV") if conda else None,
        "pip": pip_version,
        "gil_disabled": bool(getattr(sys, "_is_gil_enabled", lambda: True)() is False),
        "filesystem_encoding": sys.getfilesystemencoding(),
        "sys_path": [p for p in sys.path],
    }


def _dist_name_version(dist: Any) -> tuple[str, str]:
    # Wheel-installed metadata directories are named "<name>-<version>.dist-info": reading
    # the name there avoids parsing every METADATA file, which is most of the cost.
    path = getattr(dist, "_path", None)
    base = os.path.basename(str(path)) if path is not None else ""
    if base.endswith(".dist-info"):
        parts = base[: -len(".dist-info")].split("-")
        if len(parts) == 2 and all(parts):
            return parts[0], parts[1]
    meta = dist.metadata
    return str(meta["Name"] or "?"), str(dist.version or "?")


def distributions() -> list[dict[str, Any]]:
    """Every installed distribution visible on sys.path: name, version, location, shadowed.

    A distribution found again later on sys.path is marked ``shadowed`` (Python imports the
    first one).
    """
    from importlib.metadata import distributions as all_dists

    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for dist in all_dists():
        name, ver = _dist_name_version(dist)
        key = normalize(name)
        path = getattr(dist, "_path", None)
        location = os.path.dirname(os.path.abspath(str(path))) if path is not None else None
        out.append({"name": name, "version": ver, "location": location,
                    "shadowed": key in seen})
        seen.add(key)
    return out


def normalize(name: str) -> str:
    """PEP 503 normalised project name."""
    out = []
    prev_sep = False
    for ch in name.lower():
        if ch in "-_.":
            if not prev_sep:
                out.append("-")
            prev_sep = True
        else:
            out.append(ch)
            prev_sep = False
    return "".join(out)


def main(argv: list[str]) -> int:
    # Run with -c, the first entry is "" (the current directory), which belongs to how the
    # probe was started, not to the interpreter.
    if sys.path and sys.path[0] == "":
        del sys.path[0]
    result: dict[str, Any] = {"interpreter": interpreter()}
    if "packages" in argv:
        result["distributions"] = distributions()
    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
