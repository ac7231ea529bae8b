"""`rage collect` and `rage collectors` through the real CLI in subprocesses."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import psutil
import pytest

from collectors.base import BUILTIN_ORDER
from tests.conftest import run_rage
from tests.plugin_fixture.install import install_plugin_fixture


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    paths = install_plugin_fixture(tmp_path / "site")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), env.get("PYTHONPATH", "")])
    return env


def test_collect_json_has_every_builtin() -> None:
    res = run_rage("collect", "--json", "--tool", "sh")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert list(doc["sections"]) == list(BUILTIN_ORDER)
    for name, sec in doc["sections"].items():
        assert sec["status"] in {"ok", "skipped"}, (name, sec)
        assert set(sec) >= {"status", "duration_s", "data", "error"}
    assert doc["sections"]["platform"]["data"]["kernel"] == os.uname().release
    assert doc["sections"]["system"]["data"]["cpu"]["logical"] == os.cpu_count()
    assert doc["sections"]["tools"]["data"]["sh"]["path"] is not None
    assert doc["warnings"] == []


def test_collect_text_and_selection() -> None:
    res = run_rage("collect", "--only", "python", "--only", "system", "--skip", "system")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("== python ==")
    assert "== system ==" not in res.stdout
    assert f"  version: {'.'.join(map(str, __import__('sys').version_info[:3]))}" in res.stdout


def test_collect_unknown_name_is_a_usage_error() -> None:
    res = run_rage("collect", "--only", "nope")
    assert res.returncode == 2
    assert res.stderr.splitlines()[0] == "rage: unknown collector 'nope'"
    assert "Traceback" not in res.stderr


def test_disabled_in_config(config_file: Path) -> None:
    config_file.write_text('[default]\ndisable_collectors = ["git", "environment"]\n')
    res = run_rage("collect", "--json", "--skip", "tools")
    assert res.returncode == 0, res.stderr
    assert list(json.loads(res.stdout)["sections"]) == [
        "platform", "python", "packages", "system"]
    res = run_rage("collect", "--only", "git")
    assert res.returncode == 2 and "disabled" in res.stderr


def test_collectors_lists_sources_and_plugin_problems(plugin_env: dict[str, str]) -> None:
    res = run_rage("collectors", "--json", env=plugin_env)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    rows = {r["name"]: r for r in doc["collectors"]}
    assert rows["platform"]["source"] == "built-in"
    assert rows["dummy"]["source"] == "rage-plugin-fixture 1.2.3"
    assert rows["dummy"]["description"] == "A well-behaved plugin"
    assert rows["tools"]["applies"] is False
    assert rows["platform"]["applies"] is True
    assert any("'platform'" in w and "rage-plugin-fixture" in w for w in doc["warnings"])
    assert any("dummy-missing" in w for w in doc["warnings"])
    text = run_rage("collectors", env=plugin_env)
    assert text.returncode == 0
    assert "rage-plugin-fixture 1.2.3" in text.stdout
    assert "rage: warning:" in text.stderr


def test_collect_with_a_hanging_plugin_returns_and_leaves_no_process(
    plugin_env: dict[str, str],
) -> None:
    marker = f"{80 + uuid.uuid4().int % 1000 / 1000:.3f}"
    plugin_env["FIXTURE_SLEEP_SECONDS"] = marker
    # a hang guard: the plugin sleeps 80 s
    res = run_rage("collect", "--json", "--only", "dummy-hangs", "--only", "dummy-raises",
                   "--only", "dummy", env=plugin_env, timeout=60)
    assert res.returncode == 0, res.stderr
    secs = json.loads(res.stdout)["sections"]
    assert secs["dummy-hangs"]["status"] == "timeout"
    assert secs["dummy-raises"]["status"] == "error"
    assert secs["dummy"]["data"] == {"app": None, "answer": 42}
    left = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", marker]]
    assert left == []
