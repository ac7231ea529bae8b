"""Discovery through real entry points and the runner's timeouts, errors and ordering."""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from collectors.base import (
    BUILTIN_ORDER,
    Collector,
    Context,
    discover,
    run_collectors,
)
from rage.errors import UsageError
from tests.plugin_fixture.install import install_plugin_fixture


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The dummy plugin distribution, installed on sys.path for this test only."""
    paths = install_plugin_fixture(tmp_path / "site")
    for p in reversed(paths):
        monkeypatch.syspath_prepend(str(p))
    return paths


def sleep_children(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.cmdline() == ["sleep", marker] and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.NoSuchProcess:
            continue
    return found


def test_builtins_are_discovered_in_order() -> None:
    found = discover()
    assert [c.name for c in found.collectors] == list(BUILTIN_ORDER)
    assert set(found.sources.values()) == {"built-in"}
    assert found.warnings == []


def test_plugin_is_discovered_with_its_distribution(plugin: list[Path]) -> None:
    found = discover()
    names = [c.name for c in found.collectors]
    assert names[: len(BUILTIN_ORDER)] == list(BUILTIN_ORDER)
    assert {"dummy", "dummy-raises", "dummy-hangs", "dummy-missing"} <= set(names)
    assert "dummy-optin" not in names  # default_enabled = False
    assert found.sources["dummy"] == "rage-plugin-fixture 1.2.3"
    # the duplicate loses to the built-in, and the warning names both sources
    assert found.sources["platform"] == "built-in"
    dup = [w for w in found.warnings if "'platform'" in w]
    assert len(dup) == 1 and "rage-plugin-fixture 1.2.3" in dup[0] and "built-in" in dup[0]
    missing = [w for w in found.warnings if "dummy-missing" in w]
    assert len(missing) == 1 and "ModuleNotFoundError" in missing[0]


def test_enable_and_disable(plugin: list[Path]) -> None:
    found = discover(disable=["git", "dummy-hangs"], enable=["dummy-optin", "not-installed"])
    names = [c.name for c in found.collectors]
    assert "git" not in names and "dummy-hangs" not in names
    assert "dummy-optin" in names
    assert any("'not-installed'" in w for w in found.warnings)


def test_plugin_sections_ok_error_and_broken(plugin: list[Path]) -> None:
    found = discover()
    sections = run_collectors(found.collectors, Context(app="demo"),
                              only=["dummy", "dummy-raises", "dummy-missing", "platform"])
    by = {s.name: s for s in sections}
    # built-ins first, then plugins by name: the order given is the order returned
    assert [s.name for s in sections] == ["platform", "dummy", "dummy-missing", "dummy-raises"]
    assert by["dummy"].status == "ok"
    assert by["dummy"].data == {"app": "demo", "answer": 42}
    assert by["dummy"].files == {"dummy.txt": "hello\n"}
    assert by["dummy"].source == "rage-plugin-fixture 1.2.3"
    assert by["dummy-raises"].status == "error"
    assert by["dummy-raises"].error == "ValueError: the plugin broke on purpose"
    assert by["dummy-missing"].status == "error"
    assert "ModuleNotFoundError" in (by["dummy-missing"].error or "")
    assert by["platform"].status == "ok" and by["platform"].data != "impostor"
    assert by["platform"].to_dict()["source"] == "built-in"


def test_hung_collector_times_out_and_its_subprocess_dies(
    plugin: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"{60 + uuid.uuid4().int % 1000 / 1000:.3f}"
    monkeypatch.setenv("FIXTURE_SLEEP_SECONDS", marker)
    found = discover()
    sections = run_collectors(found.collectors, Context(), only=["dummy-hangs", "dummy"])
    by = {s.name: s for s in sections}
    assert by["dummy-hangs"].status == "timeout"
    assert by["dummy-hangs"].error == "gave up after 0.5s"  # its own timeout stopped it
    assert by["dummy"].status == "ok"
    deadline = time.monotonic() + 2
    while sleep_children(marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sleep_children(marker) == []


class Slow(Collector):
    name = "slow"
    description = "sleeps in Python until released"
    timeout = 30.0

    def __init__(self) -> None:
        self.release = threading.Event()
        self.finished = threading.Event()

    def collect(self, ctx: Context) -> Any:
        self.release.wait(20)
        self.finished.set()
        return "late"


class Quick(Collector):
    name = "quick"
    description = "answers at once"

    def collect(self, ctx: Context) -> Any:
        return {"cwd": str(ctx.cwd)}


class NotApplicable(Collector):
    name = "never"

    def applies(self, ctx: Context) -> bool:
        return False

    def collect(self, ctx: Context) -> Any:
        raise AssertionError("must not run")


def test_overall_deadline_bounds_the_runner() -> None:
    slow = Slow()
    try:
        sections = run_collectors([slow, Quick(), NotApplicable()], Context(), deadline_s=0.3)
        assert not slow.finished.is_set()  # the runner returned without waiting for it
    finally:
        slow.release.set()
    assert [(s.name, s.status) for s in sections] == [
        ("slow", "timeout"), ("quick", "ok"), ("never", "skipped")]
    assert sections[1].data == {"cwd": str(Path.cwd())}


def test_extra_collectors_from_the_app() -> None:
    found = discover(extra=[Quick, Quick(), object()], disable=BUILTIN_ORDER)  # type: ignore[list-item]
    assert [c.name for c in found.collectors] == ["quick"]
    assert found.sources["quick"].startswith("app")
    assert any("'quick'" in w and "taken" in w for w in found.warnings)
    assert any("is not a collector" in w for w in found.warnings)


def test_unknown_names_are_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown collector 'nope'"):
        run_collectors([Quick()], Context(), only=["nope"])
    with pytest.raises(UsageError, match="unknown collector 'gone'"):
        run_collectors([Quick()], Context(), skip=["gone"])


def test_run_command_kills_the_whole_group_on_timeout() -> None:
    marker = f"{70 + uuid.uuid4().int % 1000 / 1000:.3f}"
    res = Context().run_command(["sh", "-c", f"sleep {marker} & sleep {marker}"], timeout=0.3)
    assert res is not None and res.timed_out and res.returncode is None
    assert sleep_children(marker) == []


def test_run_command_results() -> None:
    ctx = Context()
    res = ctx.run_command([sys.executable, "-c", "import sys; print('out'); "
                           "print('err', file=sys.stderr); sys.exit(3)"], timeout=10)
    assert res is not None
    assert (res.returncode, res.stdout, res.stderr, res.ok) == (3, "out\n", "err\n", False)
    assert ctx.run_command(["/no/such/executable"], timeout=1) is None
    env_res = ctx.run_command([sys.executable, "-c", "import os; print(os.environ['RAGE_T'])"],
                              timeout=10, env={"RAGE_T": "x"})
    assert env_res is not None and env_res.stdout == "x\n"
    assert "RAGE_T" not in os.environ
