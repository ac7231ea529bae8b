"""The bundle page in a real headless chromium (Debian's), driven by Playwright."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_server import (
    Server,
    api_upload,
    build_bundle,
    default_files,
    start_server,
    stop_server,
)

CHROMIUM = "/usr/bin/chromium"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not (os.access(CHROMIUM, os.X_OK) or shutil.which("chromium")),
                       reason="chromium is not installed (apt-get install chromium)"),
]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = start_server(tmp_path / "store")
    yield s
    stop_server(s)


@pytest.fixture
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium"),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"])
        yield b
        b.close()


def _upload(server: Server, tmp_path: Path) -> str:
    files = default_files()
    files["run/output.log"] = b"".join(
        f"step {i}: {'fail' if i % 10 == 0 else 'ok'}\n".encode() for i in range(1, 101))
    r = api_upload(server, build_bundle(tmp_path / "b.tar.zst", files))
    assert r.status_code == 201, r.text
    url: str = r.json()["url"]
    return url


def test_page_renders_and_filter_box_filters(server: Server, browser: Any,
                                             tmp_path: Path) -> None:
    url = _upload(server, tmp_path)
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.goto(url)
    assert page.title() == "mytool 1.2.3: failed — rage bundle"
    assert page.get_by_text("mytool sync --all").is_visible()
    assert page.get_by_text("it broke after the update").is_visible()
    lines = page.locator("#out-output .line")
    assert lines.count() == 100
    box = page.locator('input.filter[data-target="out-output"]')
    assert box.is_visible()  # the script un-hid it: it ran under the CSP
    box.fill("fail")
    visible = page.locator("#out-output .line:visible")
    assert visible.count() == 10
    assert visible.first.inner_text().replace("\n", "") == "10step 10: fail"
    assert page.locator("#out-output-count").inner_text() == "10 of 100 lines"
    box.fill("")
    assert page.locator("#out-output .line:visible").count() == 100
    log_box = page.locator('input.filter[data-target="logrecs"]')
    log_box.fill("no such record")
    assert page.locator("#logrecs tbody tr:visible").count() == 0
    assert problems == []
    page.close()


def test_page_readable_without_javascript(server: Server, browser: Any, tmp_path: Path) -> None:
    url = _upload(server, tmp_path)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(url)
    assert page.locator("#out-output .line:visible").count() == 100
    assert not page.locator('input.filter[data-target="out-output"]').is_visible()
    # the stylesheet applies (allowed by its nonce): line numbers are styled grey
    color = page.locator("#out-output .n").first.evaluate("e => getComputedStyle(e).color")
    assert color == "rgb(153, 153, 170)"
    context.close()
