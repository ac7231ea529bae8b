"""The README's quick start: CI runs its test command verbatim, and the first command
works as written and leaves nothing in the checkout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def quick_start() -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Quick start")
    section = text[start:text.index("\n## ", start)]
    return re.findall(r"```sh\n(.+?)\n```", section, re.DOTALL)


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    commands = quick_start()
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert commands[1] in ci  # a line of its own, character for character


def test_quick_start_needs_no_system_pip_and_writes_outside_the_checkout() -> None:
    first, second = quick_start()
    for cmd in (first, second):
        assert "python3 -m venv" in cmd and "python3 -m pip" not in cmd
        assert "--break-system-packages" not in cmd
    assert 'rage-report.tar.zst' not in first.replace('"$v"', "")


@pytest.mark.skipif(not os.environ.get("RAGE_TEST_QUICK_START"),
                    reason="installs from PyPI into a new venv (~30 s, needs the network); "
                           "set RAGE_TEST_QUICK_START=1")
def test_quick_start_first_command_as_written(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT, checkout, ignore=shutil.ignore_patterns(
        "__pycache__", "*.egg-info", "build", ".mypy_cache", ".ruff_cache", ".pytest_cache"))
    before = sorted(p.relative_to(checkout) for p in checkout.rglob("*"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env["PATH"] = "/usr/bin:/bin"
    env["HOME"] = str(tmp_path / "home")
    p = subprocess.run(["sh", "-c", quick_start()[0]], cwd=checkout, env=env,
                       capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr
    assert "checksums: ok" in p.stdout
    assert sorted(p.relative_to(checkout) for p in checkout.rglob("*")) == before
