"""Which upload token goes to which receiver: each token is bound to an origin.

An origin is a URL's scheme, host and port (``https://rage.example.org:443``), as netrc and
git's credential helpers bind a password to a host. Two sources, the first that applies:

- ``[tokens]`` in the config file: a token per origin, for every receiver the user sends to::

      [tokens]
      "https://rage.example.org" = "the token"
      "http://127.0.0.1:8080" = "another"

- ``RAGE_UPLOAD_TOKEN``: only for the origin of the configured ``upload_url`` (config file,
  ``RAGE_UPLOAD_URL`` or the app's own defaults), never for another host a ``--to`` names.
  A URL someone else chose (a project's config, an issue asking "send it here", a typo)
  must not receive the token of the user's own receiver.

When the variable is set but withheld, the caller is told once, with what to do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from rage.config import Settings, read_config_file
from rage.errors import ConfigError

TOKEN_ENV = "RAGE_UPLOAD_TOKEN"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str | None) -> str | None:
    """``scheme://host:port`` of an http(s) URL (a ``proto+`` prefix ignored), lowercased
    with the default port spelled out; None for anything else."""
    if not url:
        return None
    scheme, plus, rest = url.strip().partition("+")
    if plus and "://" not in scheme:
        url = rest
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{scheme}://{host}:{port or _DEFAULT_PORTS[scheme]}"


def configured_tokens(parsed: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The ``[tokens]`` table of the config file, keyed by origin; ConfigError if unusable."""
    parsed = read_config_file() if parsed is None else parsed
    table = parsed.get("tokens", {})
    if not isinstance(table, dict):
        raise ConfigError("[tokens] in the config must be a table of origin = \"token\"")
    out: dict[str, str] = {}
    for key, value in table.items():
        o = origin(key)
        if o is None:
            raise ConfigError(f"[tokens]: {key!r} is not an http(s) origin "
                              "(write it as \"https://host\" or \"https://host:port\")")
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"[tokens]: the token for {key} must be a non-empty string")
        out[o] = value.strip()
    return out


def token_for(url: str, settings: Settings,
              tokens: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
    """``(token, notice)`` for a request to ``url``: the token bound to its origin, or
    None with a one-line notice when ``RAGE_UPLOAD_TOKEN`` is set but not for this host."""
    target = origin(url)
    if target is None:
        return None, None
    table = configured_tokens() if tokens is None else tokens
    if target in table:
        return table[target], None
    env = os.environ.get(TOKEN_ENV, "").strip()
    if not env:
        return None, None
    home = origin(settings.upload_url)
    if home == target:
        return env, None
    bound = f"upload_url's {home}" if home else "the upload_url, which is not set"
    return None, (f"{TOKEN_ENV} not sent to {target}: it is bound to {bound}; to send a "
                  f"token there, add it under [tokens] in the config as \"{target}\"")
