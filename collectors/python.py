"""The ``python`` collector: the interpreter of the run (or of rage when that is unknown)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from collectors import _pyprobe
from collectors.base import Collector, Context

PROBE_TIMEOUT = 3.0
# `python -c` puts the current directory, the reported run's, first on sys.path, so a
# json.py or platform.py there would run in place of the standard module: the probe is
# started by a stub that drops that entry before anything is imported.
_STUB = ("import sys\nif sys.path[:1] == ['']: del sys.path[0]\n"
         "exec(compile({!r}, 'rage-probe', 'exec'))")


def is_other_python(ctx: Context) -> bool:
    """True when the run used an interpreter other than the one running rage.

    Paths are compared without resolving symlinks: a virtualenv's ``python`` links to the
    base interpreter but has another ``sys.prefix``.
    """
    if not ctx.python:
        return False
    return os.path.abspath(ctx.python) != os.path.abspath(sys.executable)


def probe_other(ctx: Context, *args: str) -> dict[str, Any]:
    """Run the probe script under ``ctx.python``; raise RuntimeError with the reason if not."""
    assert ctx.python
    if not os.path.isabs(ctx.python):
        # relative to which directory? Not to the reported run's, where the probe runs.
        raise RuntimeError(f"the run's interpreter {ctx.python!r} is not an absolute path")
    source = Path(_pyprobe.__file__).read_text(encoding="utf-8")
    res = ctx.run_command([ctx.python, "-c", _STUB.format(source), *args], PROBE_TIMEOUT)
    if res is None:
        raise RuntimeError(f"cannot run {ctx.python}")
    if res.timed_out:
        raise RuntimeError(f"{ctx.python} did not answer within {PROBE_TIMEOUT:g}s")
    if not res.ok:
        last = (res.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{ctx.python} exited with {res.returncode}: {last}")
    try:
        data = json.loads(res.stdout)
    except ValueError:
        raise RuntimeError(f"{ctx.python} printed something that is not JSON") from None
    if not isinstance(data, dict):
        raise RuntimeError(f"{ctx.python} printed unexpected JSON")
    return data


class PythonCollector(Collector):
    name = "python"
    description = "Python interpreter: version, implementation, prefix, venv/conda, pip, sys.path"
    timeout = 5.0

    def collect(self, ctx: Context) -> Any:
        if is_other_python(ctx):
            info = probe_other(ctx)["interpreter"]
            info["source"] = "run"
        else:
            from collectors.distcache import current

            info = _pyprobe.interpreter(pip=current()["pip"])
            info["source"] = "rage" if ctx.python is None else "run"
        info["virtual_env_var"] = os.environ.get("VIRTUAL_ENV")
        return info
