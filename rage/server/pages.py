"""HTML pages of the receiver: landing, one page per bundle, admin index, login, messages.

Each page is a Jinja2 template (``templates/``, autoescape on; see :mod:`templating`);
this module gathers what each one shows. Pages carry no external assets; the one inline
``<style>`` and ``<script>`` are allowed by a per-response CSP nonce, and the script only
adds filter boxes: without JavaScript every line is visible.
"""

from __future__ import annotations

from collections.abc import Mapping

from rage.bundle import CappedMember
from rage.server import bundle_page, human
from rage.server.bundle_page import Links
from rage.server.storage import StoredBundle
from rage.server.templating import csp, render

__all__ = ["Links", "csp"]


def landing_page(base_url: str, nonce: str, *, token_required: bool) -> str:
    return render("landing.html", nonce=nonce, base_url=base_url, token_required=token_required)


def message_page(title: str, text: str, nonce: str) -> str:
    return render("message.html", nonce=nonce, title=title, text=text)


def error_page(status: int, text: str, nonce: str) -> str:
    """What a browser gets for an error (API clients get JSON)."""
    titles = {404: "Not found", 401: "Log in needed", 403: "Not allowed",
              413: "Too large", 405: "Not allowed"}
    return render("message.html", nonce=nonce, title=titles.get(status, "Error"), text=text)


def delete_form(action: str, token: str, nonce: str) -> str:
    return render("delete.html", nonce=nonce, title="Delete bundle?",
                  text="This removes the bundle and its page for good.",
                  action=action, token=token)


def login_page(nonce: str, *, next_url: str, error: str = "") -> str:
    return render("login.html", nonce=nonce, next=next_url, error=error)


def bundle_page_html(meta: StoredBundle, members: Mapping[str, CappedMember], links: Links,
                     nonce: str, signature: Mapping[str, str] | None = None) -> str:
    """The maintainer's page for one bundle (bounded: see :mod:`bundle_page`), linking to
    its crash signature when the index has it."""
    return render("bundle.html", nonce=nonce, script=True, signature=signature,
                  **bundle_page.context(meta, members, links))


def admin_page(bundles: list[StoredBundle], base_url: str, nonce: str) -> str:
    rows = []
    for b in bundles:
        run = b.manifest.get("run") if isinstance(b.manifest.get("run"), dict) else {}
        assert isinstance(run, dict)
        rows.append({"received": human.when(b.created_at), "id": b.id,
                     "app": human.value(b.manifest.get("app") or "?", 80),
                     "status": human.value(run.get("status") or "?", 40),
                     "command": bundle_page.command(run.get("argv"), 300),
                     "size": human.size(b.size)})
    return render("admin.html", nonce=nonce, rows=rows, base_url=base_url)
