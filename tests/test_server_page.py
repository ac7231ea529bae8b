"""The bundle page and the login as a maintainer meets them: real runs recorded by `rage run`
(on a real pty, and with pipes), real bundles from `rage report`, a real `rage serve`, and
Debian's chromium driven by Playwright. Each case leaves a screenshot (in the test's tmp dir,
or in $RAGE_TEST_SCREENSHOTS when set, to look at them).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.conftest import rage_cmd, run_rage
from tests.test_server import (
    ADMIN,
    Server,
    api_upload,
    build_bundle,
    default_files,
    make_manifest,
    start_server,
    stop_server,
)
from tests.test_server_browser import CHROMIUM, browser  # browser: the chromium fixture
from tests.test_wrapper_pty import terminal

SHOTS = os.environ.get("RAGE_TEST_SCREENSHOTS")  # read before conftest clears RAGE_*

__all__ = ["browser"]  # the fixture, shared with test_server_browser

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not (os.access(CHROMIUM, os.X_OK) or shutil.which("chromium")),
                       reason="chromium is not installed (apt-get install chromium)"),
]

APP = '''\
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
print("\\x1b[0m\\x1b[01;34mbuild\\x1b[0m  \\x1b[01;32mdist\\x1b[0m  notes.txt")
print("home is", os.path.expanduser("~"))
sys.stdout.flush()
from mymod import load
load("{bad")
'''
MODULE = '''\
import json


def load(text):
    return parse(text)


def parse(text):
    return json.loads(text)
'''


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = start_server(tmp_path / "store", "--admin-token", ADMIN)
    yield s
    stop_server(s)


def shot(page: Any, tmp_path: Path, name: str) -> Path:
    out = Path(SHOTS) if SHOTS else tmp_path / "shots"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    page.screenshot(path=str(out / f"{name}-first-screen.png"))  # what is seen on arrival
    assert path.stat().st_size > 1000
    return path


def _app(tmp_path: Path) -> Path:
    d = tmp_path / "app"
    d.mkdir()
    (d / "mymod.py").write_text(MODULE)
    (d / "tool.py").write_text(APP)
    return d / "tool.py"


def _report(tmp_path: Path) -> Path:
    out = tmp_path / "bundle.tar.zst"
    proc = run_rage("report", "--last", "--yes", "--no-upload", "--output", str(out),
                    "--note", "it broke after the update")
    assert proc.returncode == 0, proc.stderr
    return out


def _upload_real(server: Server, bundle: Path) -> str:
    r = api_upload(server, bundle)
    assert r.status_code == 201, r.text
    url: str = r.json()["url"]
    return url


def test_terminal_run_page_reads_at_a_glance(server: Server, browser: Any,
                                             tmp_path: Path) -> None:
    tool = _app(tmp_path)
    with terminal(sys.executable, str(tool)) as term:
        assert term.finish() == 1
    url = _upload_real(server, _report(tmp_path))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.goto(url)
    shot(page, tmp_path, "terminal-run")
    body = page.locator("body").inner_text()
    # no escape codes: redaction matches (and keeps) the text as the terminal showed it,
    # escapes resolved (rage.redact.normalize); the page renders colours a bundle still has
    # (tests/test_server_units.py and older bundles)
    assert "[0m" not in body and "\x1b" not in body
    assert page.locator(".log", has_text="build").first.is_visible()
    # OS and Python in the first screenful, times for people
    for label in ("OS", "Python", "Started"):
        cell = page.locator("table.facts th", has_text=re.compile(f"^{label}$"))
        assert cell.bounding_box()["y"] < 900, label
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(", body)
    assert not re.search(r"\b1\d{9}\.\d+", body)  # no epoch floats
    # no raw JSON-isms, no summary.md repeated
    assert not re.search(r"\b(null|None|False|True)\b", body)
    assert "## What the user says" not in body
    # the crash: app frames shown, library frames folded
    crash = page.locator("#crash")
    assert crash.locator(".app-frame", has_text="mymod.py").count() == 2
    assert crash.locator(".exc", has_text="JSONDecodeError").is_visible()
    folded = crash.locator("details.lib").first
    assert not folded.locator(".lib-frame").first.is_visible()
    folded.locator("summary").click()
    assert folded.locator(".lib-frame").first.is_visible()
    # redaction counts, each collector's outcome once (in Environment: no Sections table
    # repeating it), packages as a table, skipped not an error
    assert page.locator("#redactions th", has_text="home").is_visible()
    assert page.locator("#sections").count() == 0
    collectors = page.locator("#environment")
    skipped = collectors.locator("summary .st-skipped").first
    assert skipped.evaluate("e => getComputedStyle(e).color") == "rgb(119, 119, 136)"
    assert collectors.locator("summary .st-ok").count() >= 3
    pkgs = page.locator("table.pkgs tbody tr")
    assert pkgs.count() > 5 and "distributions[" not in body
    # every file downloads on its own
    with page.expect_download() as dl:
        page.locator("#files a", has_text="run/output.log").click()
    saved = tmp_path / "output.log"
    dl.value.save_as(saved)
    assert b"home is" in saved.read_bytes()
    assert problems == []


def test_traceback_in_stderr_log_is_found_and_highlighted(server: Server, browser: Any,
                                                          tmp_path: Path) -> None:
    tool = _app(tmp_path)
    proc = subprocess.run(rage_cmd("run", sys.executable, str(tool)), capture_output=True,
                          timeout=60, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1 and b"JSONDecodeError" in proc.stderr
    url = _upload_real(server, _report(tmp_path))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(url)
    shot(page, tmp_path, "stderr-traceback")
    assert page.locator("#crash h2").inner_text().endswith("from run/stderr.log")
    marked = page.locator("#out-stderr .line.tbline")
    assert marked.count() >= 6
    assert "JSONDecodeError" in marked.last.inner_text()  # down to the exception line
    bg = marked.first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert bg == "rgb(255, 240, 240)"


def test_a_huge_output_gives_a_bounded_page_numbered_as_the_file(
        server: Server, browser: Any, tmp_path: Path) -> None:
    files = default_files()
    n = 400_000
    files["run/output.log"] = b"".join(b"line %d of the build\n" % i for i in range(1, n + 1))
    assert len(files["run/output.log"]) > 8 * 1024 * 1024
    manifest = make_manifest(files, truncation=[{"name": "run/output.log", "stage": "bundle",
                                                 "total_bytes": 30 * 1024**2,
                                                 "dropped_bytes": 21 * 1024**2}])
    url = _upload_real(server, build_bundle(tmp_path / "big.tar.zst", files,
                                            manifest=manifest))
    r = requests.get(url, timeout=60)
    assert len(r.content) < 1_000_000
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(url)
    lines = page.locator("#out-output .line")
    assert lines.count() == 1000
    # the numbers are the file's own, after the cut
    first = lines.first.inner_text().split(None, 1)
    assert first[0] == str(n - 999) and first[1] == f"line {n - 999} of the build"
    last = lines.last.inner_text().split(None, 1)
    assert last[0] == str(n) and last[1] == f"line {n} of the build"
    assert page.locator("p.cut").first.inner_text().startswith(
        f"lines {n - 999:,}\u2013{n:,} shown, the end of the file (the first 9.2 MiB of 9.4 MiB")
    assert page.locator("p.cut a", has_text="download the whole file").count() == 1
    assert page.locator("#truncation li").inner_text() == (
        "run/output.log: 21.0 MiB of 30.0 MiB left out of the middle "
        "(when the bundle was made)")
    shot(page, tmp_path, "huge-output")
    with page.expect_download() as dl:
        page.locator("#files a", has_text="run/output.log").click()
    saved = tmp_path / "whole.log"
    dl.value.save_as(saved)
    assert saved.read_bytes() == files["run/output.log"]


def test_browser_gets_an_html_404_and_scripts_get_json(server: Server, browser: Any,
                                                       tmp_path: Path) -> None:
    page = browser.new_page()
    resp = page.goto(f"{server.url}/b/{'A' * 22}")
    assert resp.status == 404
    assert page.locator("h1").inner_text() == "Not found"
    shot(page, tmp_path, "not-found")
    r = requests.get(f"{server.url}/b/{'A' * 22}", timeout=10)
    assert r.status_code == 404 and "error" in r.json()


def test_admin_login_sets_a_safe_cookie_and_no_token_in_urls(server: Server, browser: Any,
                                                             tmp_path: Path) -> None:
    url = _upload_real(server, build_bundle(tmp_path / "b.tar.zst"))
    context = browser.new_context()
    page = context.new_page()
    seen: list[str] = []
    page.on("request", lambda req: seen.append(req.url))
    page.goto(f"{server.url}/admin")
    assert page.url.startswith(f"{server.url}/admin/login")
    shot(page, tmp_path, "login")
    page.fill("#token", "not the token")
    page.click("button[type=submit]")
    assert page.locator(".error").inner_text() == "That is not the admin token."
    page.fill("#token", ADMIN)
    page.click("button[type=submit]")
    assert page.url == f"{server.url}/admin"
    assert page.locator("h1").inner_text() == "Recent bundles"
    assert page.locator(f'a[href="{url}"]').count() == 1
    shot(page, tmp_path, "admin")
    [cookie] = context.cookies()
    assert (cookie["name"], cookie["httpOnly"], cookie["secure"], cookie["sameSite"]) == (
        "rage_admin", True, True, "Strict")
    assert page.evaluate("document.cookie") == ""  # no script can read it
    assert not any(ADMIN in u for u in seen)
    page.click("text=Log out")
    assert page.url.startswith(f"{server.url}/admin/login")
    page.goto(f"{server.url}/admin")
    assert page.url.startswith(f"{server.url}/admin/login")
    context.close()
    # scripts: a Bearer header, JSON refusals
    assert requests.get(f"{server.url}/admin", timeout=10).status_code == 401
    ok = requests.get(f"{server.url}/admin", timeout=10,
                      headers={"Authorization": f"Bearer {ADMIN}"})
    assert ok.status_code == 200
