"""The triage pages in a real headless chromium: login, filter, search, paging, mark fixed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_server import (
    Server,
    api_upload,
    build_bundle,
    make_manifest,
    start_server,
    stop_server,
)
from tests.test_server_browser import browser, pytestmark  # the chromium fixture, the skip

__all__ = ["browser", "pytestmark"]
from tests.test_server_triage import ADMIN

pytest.importorskip("sqlalchemy")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = start_server(tmp_path / "store", "--admin-token", ADMIN)
    yield s
    stop_server(s)


def _populate(server: Server, tmp: Path) -> None:
    """55 signatures: 50 of mytool (one reported 4 times), 5 of othertool."""
    for i in range(55):
        app = "othertool" if i >= 50 else "mytool"
        for n in range(4 if i == 7 else 1):
            files = {"summary.md": b"s",
                     "run/stderr.log": f"error: step {i} broke at /tmp/x{n} pid {n}\n".encode()}
            manifest = make_manifest(files, app=app, app_version=f"2.{i % 2}",
                                     note="the disk is full" if i == 9 else "")
            manifest["run"]["argv"] = [app, f"task{i}"]
            r = api_upload(server, build_bundle(tmp / f"b{i}-{n}.tar.zst", files,
                                                manifest=manifest))
            assert r.status_code == 201, r.text


def _submit(page: Any, button: str) -> None:
    """Click a form's button and wait for the page it leads to: counting rows while the
    next page loads finds none."""
    with page.expect_navigation():
        page.get_by_role("button", name=button).click()


def test_triage_list_filters_searches_pages_and_marks_fixed(server: Server, browser: Any,
                                                            tmp_path: Path) -> None:
    _populate(server, tmp_path)
    context = browser.new_context()
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    # a browser is sent to the login form, and back to the list once logged in
    page.goto(server.url + "/triage?app=mytool")
    assert page.url.startswith(server.url + "/admin/login")
    page.fill("input[name=token]", ADMIN)
    _submit(page, "Log in")
    assert page.url == server.url + "/triage"
    assert ADMIN not in page.url
    page.goto(server.url + "/triage")
    assert page.title() == "crash signatures — rage receiver"
    rows = page.locator("#signatures tbody tr")
    assert rows.count() == 50
    assert page.get_by_text("Page 1 of 2").is_visible()
    page.screenshot(path=str(tmp_path / "triage-list.png"), full_page=True)

    with page.expect_navigation():  # rows are counted on the new page, not while it loads
        page.get_by_role("link", name="Next page →").click()
    assert rows.count() == 5 and page.get_by_text("Page 2 of 2").is_visible()

    # sort by count: the signature reported 4 times comes first
    page.goto(server.url + "/triage")
    page.select_option("select[name=sort]", "count")
    _submit(page, "Apply")
    assert rows.first.locator("td").first.inner_text() == "4"
    assert "task7" in rows.first.inner_text()

    # filter by app, then search (the note is searched too), keeping the filter
    page.select_option("select[name=app]", "othertool")
    _submit(page, "Apply")
    assert rows.count() == 5 and "othertool" in rows.first.inner_text()
    page.select_option("select[name=app]", "")
    page.fill("input[name=q]", "DISK IS FULL")
    _submit(page, "Apply")
    assert rows.count() == 1 and "task9" in rows.first.inner_text()
    assert page.locator("#total").inner_text() == "1 signature matching “DISK IS FULL”"

    # the signature page: why grouped, then mark it fixed from the form
    with page.expect_navigation():
        rows.first.locator("a").click()
    assert page.locator("#why li").first.inner_text() == "program: mytool"
    assert page.locator("#status").inner_text() == "open"
    page.fill("input[name=fixed_in]", "2.2")
    _submit(page, "Mark fixed")
    assert page.locator("#status").inner_text() == "fixed"
    page.screenshot(path=str(tmp_path / "triage-signature.png"), full_page=True)
    page.goto(server.url + "/triage?status=fixed")
    assert rows.count() == 1 and "fixed in 2.2" in rows.first.inner_text()
    # the stylesheet applies under the nonce CSP (a blocked one logs a console error)
    color = page.locator(".status-fixed").first.evaluate("e => getComputedStyle(e).color")
    assert color == "rgb(10, 122, 47)"
    assert problems == []
    assert (tmp_path / "triage-list.png").stat().st_size > 10_000
    context.close()
