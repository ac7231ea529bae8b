"""Shared fixtures: every test gets its own RAGE_HOME and config file under tmp_path."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tests.services import Postgres, SeaweedFS


@pytest.fixture(scope="session")
def rage_on_path(tmp_path_factory: pytest.TempPathFactory) -> str | None:
    """A directory holding only this environment's `rage` script (as a user's install puts
    it on PATH; hints name `rage` then), or None where the checkout is not installed."""
    script = Path(sys.executable).with_name("rage")
    if not script.is_file():
        return None
    directory = tmp_path_factory.mktemp("rage-on-path")
    (directory / "rage").symlink_to(script)
    return str(directory)


@pytest.fixture(autouse=True)
def rage_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              rage_on_path: str | None) -> Iterator[Path]:
    """Point rage at a private, empty state directory and config file for each test, with
    `rage` on PATH (tests/test_invocation.py tries it off PATH)."""
    if rage_on_path is not None:
        monkeypatch.setenv("PATH", os.pathsep.join([rage_on_path, os.environ.get("PATH", "")]))
    home = tmp_path / "rage-home"
    monkeypatch.setenv("RAGE_HOME", str(home))
    # empty, not absent: a RAGE_CONFIG naming a missing file is an error
    (tmp_path / "rage-config.toml").touch(mode=0o600)
    monkeypatch.setenv("RAGE_CONFIG", str(tmp_path / "rage-config.toml"))
    for var in list(os.environ):
        if var.startswith("RAGE_") and var not in {"RAGE_HOME", "RAGE_CONFIG"}:
            monkeypatch.delenv(var)
    # no idle child building a first report's caches after each test's first recording
    # (tests/test_report_prebuild.py turns it on where it is the subject)
    monkeypatch.setenv("RAGE_PREBUILD", "0")
    yield home


@pytest.fixture(scope="module")
def weed() -> Iterator[SeaweedFS]:
    """A SeaweedFS S3 endpoint on 127.0.0.1 for the module's tests (tests/services.py)."""
    from tests.services import run_seaweedfs

    with run_seaweedfs() as sw:
        yield sw


@pytest.fixture(scope="module")
def pg() -> Iterator[Postgres]:
    """A PostgreSQL server on 127.0.0.1 for the module's tests (tests/services.py)."""
    from tests.services import run_postgres

    with run_postgres() as server:
        yield server


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    """The config file path rage reads in this test (empty until a test writes it)."""
    return tmp_path / "rage-config.toml"


def rage_cmd(*args: str) -> list[str]:
    """argv that runs this checkout's rage with the test interpreter."""
    return [sys.executable, "-m", "rage", *args]


def run_rage(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run the real `rage` CLI in a subprocess and capture its text output."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("timeout", 60)
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(rage_cmd(*args), check=False, **kwargs)  # type: ignore[call-overload,no-any-return]
