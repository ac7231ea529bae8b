"""The ``tools`` collector: ``--version`` of the executables the app or user named."""

from __future__ import annotations

import os
import threading
from typing import Any

from collectors.base import Collector, Context

TOOL_TIMEOUT = 2.0
MAX_LINE = 200


def tool_version(ctx: Context, tool: str) -> dict[str, Any]:
    """``{"path", "version", "exit_code"}`` or ``{"error"}`` for one executable."""
    if os.path.basename(tool) != tool:
        # A path the user gave means what it names from where rage was started, not from
        # the reported run's directory, where the command runs.
        given = os.path.abspath(os.path.expanduser(tool))
        path = given if os.path.isfile(given) and os.access(given, os.X_OK) else None
    else:
        path = ctx.which(tool)
    if path is None:
        return {"path": None, "error": "not found"}
    res = ctx.run_command([path, "--version"], TOOL_TIMEOUT)
    if res is None:
        return {"path": path, "error": "cannot run"}
    if res.timed_out:
        return {"path": path, "error": f"no answer within {TOOL_TIMEOUT:g}s"}
    # Some tools (java, older gcc wrappers) print their version on stderr.
    lines = [ln.strip() for ln in (res.stdout + "\n" + res.stderr).splitlines() if ln.strip()]
    return {"path": path, "version": lines[0][:MAX_LINE] if lines else None,
            "exit_code": res.returncode}


class ToolsCollector(Collector):
    name = "tools"
    description = "Versions of named executables (`--version`, first line); set `tools`"
    timeout = 5.0

    def applies(self, ctx: Context) -> bool:
        return bool(ctx.tools)

    def collect(self, ctx: Context) -> Any:
        names = list(dict.fromkeys(ctx.tools))
        results: dict[str, dict[str, Any]] = {}
        # One thread per tool: a slow one costs its own timeout, not everyone's.
        threads = []
        for tool in names:
            def probe(tool: str = tool) -> None:
                results[tool] = tool_version(ctx, tool)

            t = threading.Thread(target=probe, name=f"rage-tool-{tool}", daemon=True)
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        return {tool: results[tool] for tool in names if tool in results}
