"""``import rage.click; rage.click.attach(cli, "mytool")``: see :mod:`rage.integration.click`."""

from __future__ import annotations

from rage.integration.click import attach

__all__ = ["attach"]
