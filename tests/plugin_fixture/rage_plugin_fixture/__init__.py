"""Collectors that behave well and badly, for the plugin tests."""

from __future__ import annotations

import os
import time
from typing import Any

from collectors.base import Collector, CollectorOutput, Context


class DummyCollector(Collector):
    name = "dummy"
    description = "A well-behaved plugin"
    timeout = 2.0

    def collect(self, ctx: Context) -> Any:
        return CollectorOutput({"app": ctx.app, "answer": 42}, files={"dummy.txt": "hello\n"})


class RaisingCollector(Collector):
    name = "dummy-raises"
    description = "A plugin whose collect() raises"

    def collect(self, ctx: Context) -> Any:
        raise ValueError("the plugin broke on purpose")


class HangingCollector(Collector):
    """Starts a long `sleep` through ctx.run_command, then would sleep in Python too."""

    name = "dummy-hangs"
    description = "A plugin that hangs past its timeout"
    timeout = 0.5

    def collect(self, ctx: Context) -> Any:
        seconds = os.environ.get("FIXTURE_SLEEP_SECONDS", "60")
        ctx.run_command(["sleep", seconds], timeout=120)
        time.sleep(float(seconds))
        return "finished"


class DuplicateCollector(Collector):
    name = "platform"
    description = "Claims a built-in's name"

    def collect(self, ctx: Context) -> Any:
        return "impostor"


class OptInCollector(Collector):
    name = "dummy-optin"
    description = "Runs only when enabled by name"
    default_enabled = False

    def collect(self, ctx: Context) -> Any:
        return {"enabled": True}
