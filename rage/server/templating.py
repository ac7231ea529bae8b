"""The receiver's Jinja2 environment: every HTML page is a template under ``templates/``.

Autoescape is on for every template (bundle contents are untrusted; ``|safe`` is never used
on them). Templates are package data, loaded once per process. Pages share ``base.html``:
one inline ``<style>`` and optional ``<script>`` carrying the per-response CSP nonce, no
external assets, and everything readable without JavaScript.

Jinja2 comes with the ``server`` extra and is imported here only, lazily by the app.
"""

from __future__ import annotations

import functools
from typing import Any

import jinja2


def csp(nonce: str) -> str:
    """The Content-Security-Policy for a page rendered with ``nonce``."""
    return (f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; "
            "img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")


@functools.cache
def environment() -> jinja2.Environment:
    """The shared environment (thread-safe once built; templates are compiled on first use)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("rage.server", "templates"),
        # everything is HTML: escape by default whatever the file name ends with
        autoescape=True,
        undefined=jinja2.StrictUndefined,  # a misspelt variable is a bug, not an empty cell
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )
    return env


def render(name: str, /, *, nonce: str, **context: Any) -> str:
    """Render template ``name``; ``nonce`` is the one the response's CSP header names."""
    return environment().get_template(name).render(nonce=nonce, **context)
