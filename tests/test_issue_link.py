"""Pre-filled new-issue URLs: shape, length bound, truncation that never breaks an escape."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, unquote, urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from rage.report.issue_link import issue_title, markdown_line, new_issue_url

INFO = {"app": "mytool", "status": "crashed", "exit_code": None, "signal": 11,
        "argv": ["mytool", "sync", "a b"]}


def _query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query, strict_parsing=True, errors="strict")


def test_issues_gets_new_and_fields_encoded() -> None:
    url = new_issue_url("https://github.com/me/mytool/issues/", "a & b", "line 1\n#2 ?=")
    assert url.startswith("https://github.com/me/mytool/issues/new?title=")
    assert _query(url) == {"title": ["a & b"], "body": ["line 1\n#2 ?="]}


def test_other_urls_kept_and_existing_query_extended() -> None:
    assert new_issue_url("https://gitlab.example/g/p/-/issues/new", "t", "b").startswith(
        "https://gitlab.example/g/p/-/issues/new?title=t&body=b")
    url = new_issue_url("https://github.com/me/t/issues/new?labels=bug", "t", "b")
    assert url == "https://github.com/me/t/issues/new?labels=bug&title=t&body=b"


def test_long_body_cut_at_a_line() -> None:
    body = "".join(f"line {i:04d} ünïcode\n" for i in range(2000))
    url = new_issue_url("https://github.com/me/t/issues", "title", body)
    assert len(url) <= 7500
    got = _query(url)["body"][0]
    assert got.endswith("\n…(truncated)")
    kept = got.removesuffix("\n…(truncated)")
    assert body.startswith(kept + "\n")  # whole lines only
    assert len(kept) > 1000  # the room was used


def test_single_overlong_line_cut_inside() -> None:
    body = "é" * 10_000
    url = new_issue_url("https://h/issues", "t", body, limit=2000)
    assert len(url) <= 2000
    got = _query(url)["body"][0]
    assert got.startswith("éé") and got.endswith("…(truncated)")


def test_huge_title_shortened_when_nothing_else_fits() -> None:
    url = new_issue_url("https://h/issues", "x" * 190, "body", limit=120)
    assert len(url) <= 120 and "title=xx" in url


@settings(max_examples=60, deadline=None)
@given(title=st.text(max_size=300), body=st.text(max_size=3000),
       limit=st.integers(min_value=300, max_value=4000))
def test_never_over_limit_never_broken_escape(title: str, body: str, limit: int) -> None:
    url = new_issue_url("https://github.com/o/r/issues", title, body, limit=limit)
    assert len(url) <= limit
    assert not re.search(r"%(?![0-9A-F]{2})", url)
    q = urlsplit(url).query
    for part in q.split("&"):
        unquote(part, errors="strict")  # every escape sequence is whole UTF-8


def test_markdown_line_and_title() -> None:
    assert markdown_line("https://x/b/1", INFO) == \
        "[rage report for mytool (crashed, SIGSEGV)](https://x/b/1)"
    assert markdown_line("https://x/(1)", {"app": "t[1]"}) == \
        "[rage report for t(1)](https://x/(1%29)"
    assert issue_title(INFO) == "mytool crashed, SIGSEGV: mytool sync 'a b'"
