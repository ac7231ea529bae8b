"""The test suite's own service helpers (tests/services.py): finding what is installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.services import pg_bin


def _server(root: Path, version: str, initdb: bool = True) -> Path:
    bindir = root / version / "bin"
    bindir.mkdir(parents=True)
    if initdb:
        (bindir / "initdb").write_text("#!/bin/sh\n")
        (bindir / "initdb").chmod(0o755)
    return bindir


def test_a_postgres_server_of_any_version_is_found(tmp_path: Path) -> None:
    """Debian installs each server under its version: whichever is there is used, the
    newest of several (numerically: 13 is newer than 9.6), never a client-only directory."""
    root = tmp_path / "postgresql"
    _server(root, "9.6")
    newest = _server(root, "13")
    _server(root, "20", initdb=False)  # a newer version's client, without its server
    assert pg_bin(root) == newest
    lone = _server(tmp_path / "solo", "18")
    assert pg_bin(tmp_path / "solo") == lone


def test_an_initdb_on_path_is_used_where_debian_has_none(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    built = _server(tmp_path / "opt", "pg")  # a server built from source, on PATH
    monkeypatch.setenv("PATH", f"{built}:/usr/bin:/bin")
    assert pg_bin(tmp_path / "no-debian-server") == built
