"""GitHub's token for a gist upload, and what stands before one (the report's hint line).

The token comes from the variable named by ``gist_token_env`` or from ``gh auth token``,
and is GitHub's: it goes to ``https://api.github.com`` only. A ``gist_api_url`` naming
another origin (GitHub Enterprise, or a URL someone else put in a project's config) gets
the token the ``[tokens]`` table binds to that origin, or none (see
:mod:`rage.upload.tokens`). A module of its own, apart from the uploader
(:mod:`rage.upload.gist`, which loads the HTTP client): every report without an upload
target asks :func:`gist_hint` for its hint line.
"""

from __future__ import annotations

import os
import sys

from rage.config import Settings
from rage.errors import UploadError
from rage.upload.tokens import configured_tokens, origin

GH_TIMEOUT = 5.0
GITHUB_API = "https://api.github.com"  # the one origin GitHub's own token is bound to


def gh_logged_out() -> bool:
    """True when `gh auth token` would surely find no token for github.com, said without
    running it (a Go binary's start, ~10-30 ms): neither of its token variables is set and
    its hosts.yml names no github.com (gh lists a logged-in host there even when the token
    itself is in the system keyring). False when unsure."""
    if sys.platform == "win32" or any(os.environ.get(v, "").strip()
                                      for v in ("GH_TOKEN", "GITHUB_TOKEN")):
        return False
    config = os.environ.get("GH_CONFIG_DIR") or os.path.join(
        os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "gh")
    try:
        with open(os.path.join(config, "hosts.yml"), "rb") as f:
            hosts = f.read(1 << 20)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return b"github.com" not in hosts


def github_token(settings: Settings) -> str | None:
    """GitHub's own token: ``gist_token_env``'s value, else what `gh auth token` prints
    (not run when :func:`gh_logged_out`); None without one."""
    token = os.environ.get(settings.gist_token_env, "").strip()
    if token:
        return token
    import shutil

    gh = shutil.which("gh")
    if not gh or gh_logged_out():
        return None
    import subprocess

    try:
        out = subprocess.run([gh, "auth", "token"], capture_output=True, text=True,
                             timeout=GH_TIMEOUT, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def gist_token(api_url: str, settings: Settings) -> str:
    """The token for a gist API at ``api_url``: the ``[tokens]`` table's for its origin,
    else GitHub's own for api.github.com only; UploadError saying why there is none."""
    target = origin(api_url)
    table = configured_tokens()
    if target is not None and target in table:
        return table[target]
    env = settings.gist_token_env
    if target != origin(GITHUB_API):
        where = target or api_url
        if os.environ.get(env, "").strip():
            raise UploadError(f"{env} not sent to {where}: it is bound to {GITHUB_API}",
                              hint=f"to send a token there, add it under [tokens] in the "
                                   f"config as \"{where}\"")
        raise UploadError(f"no token for the gist API at {where}",
                          hint=f"add one under [tokens] in the config as \"{where}\"")
    token = github_token(settings)
    if not token:
        raise UploadError("no GitHub token for the gist upload",
                          hint=f"set {env} or log in with `gh auth login`")
    return token


def gist_hint(settings: Settings) -> str | None:
    """What stands between the user and a gist upload to ``gist_api_url``: None when a
    token for it is at hand, else the step to take (the hint a report prints). A broken
    ``[tokens]`` table is ConfigError."""
    try:
        gist_token(settings.gist_api_url, settings)
    except UploadError:
        target = origin(settings.gist_api_url)
        if target == origin(GITHUB_API):
            return "after `gh auth login`"
        return f"after adding a token for {target or settings.gist_api_url} under [tokens]"
    return None


__all__ = ["GITHUB_API", "gh_logged_out", "gist_hint", "gist_token", "github_token"]
