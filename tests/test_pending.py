"""Kept bundles: listing, resolving, the sent sidecar, `rage pending`."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from rage.errors import NotFoundError, UsageError
from rage.report.pending import (
    app_of,
    list_bundles,
    list_pending,
    mark_sent,
    resolve_bundle,
    sent_info,
)
from tests.conftest import run_rage
from tests.test_upload_servers import make_bundle


def _kept(home: Path, app: str, name: str, mtime: float) -> Path:
    p = make_bundle(home / app / "reports" / name, app=app)
    os.utime(p, (mtime, mtime))
    return p


@pytest.fixture
def three(rage_home: Path) -> list[Path]:
    return [
        _kept(rage_home, "mytool", "20250101T000000Z-aaaa1111.tar.zst", 1_700_000_000),
        _kept(rage_home, "other", "20250102T000000Z-bbbb2222.tar.zst", 1_700_001_000),
        _kept(rage_home, "mytool", "20250103T000000Z-cccc3333.tar.zst", 1_700_002_000),
    ]


def test_list_pending_newest_first_across_apps(three: list[Path]) -> None:
    assert [b.path for b in list_pending()] == [three[2], three[1], three[0]]
    assert [b.path for b in list_pending("mytool")] == [three[2], three[0]]
    assert {b.app for b in list_pending()} == {"mytool", "other"}
    assert list_pending("nobody") == []


def test_sent_bundles_are_not_pending(three: list[Path]) -> None:
    mark_sent(three[2], "https://x/1", None, "multipart")
    side = Path(str(three[2]) + ".sent.json")
    assert stat.S_IMODE(side.stat().st_mode) == 0o600
    assert (sent_info(three[2]) or {})["url"] == "https://x/1"
    assert [b.path for b in list_pending()] == [three[1], three[0]]
    assert len(list_bundles(include_sent=True)) == 3


def test_non_bundles_ignored(rage_home: Path, three: list[Path]) -> None:
    (rage_home / "mytool" / "reports" / "notes.txt").write_text("x")
    (rage_home / "mytool" / "reports" / ".tmp.tar.zst.part").write_text("x")
    assert len(list_pending()) == 3


def test_resolve_bundle(three: list[Path]) -> None:
    assert resolve_bundle(str(three[0])) == three[0]
    assert resolve_bundle(three[1].name) == three[1]
    assert resolve_bundle("20250103") == three[2]
    assert resolve_bundle("last") == three[2]
    assert resolve_bundle("last", "other") == three[1]
    with pytest.raises(UsageError):
        resolve_bundle("2025")
    with pytest.raises(NotFoundError):
        resolve_bundle("1999")
    with pytest.raises(NotFoundError):
        resolve_bundle("/no/such/file.tar.zst")
    assert app_of(three[1]) == "other"


def test_rage_pending_cli(three: list[Path]) -> None:
    p = run_rage("pending", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)["bundles"]
    assert [d["path"] for d in data] == [str(x) for x in (three[2], three[1], three[0])]
    assert data[0]["app"] == "mytool" and data[0]["size"] == three[2].stat().st_size
    p = run_rage("pending", "--app", "other")
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert len(lines) == 1 and lines[0].endswith(three[1].name) and "other" in lines[0]


def test_rage_pending_empty(rage_home: Path) -> None:
    p = run_rage("pending")
    assert p.returncode == 0
    assert p.stdout == "" and "no pending bundles" in p.stderr
    assert run_rage("pending", "--app", "../etc").returncode == 2
