"""A private GitHub gist of the bundle's text members (binary members cannot go in a gist).

The token comes from the variable named by ``gist_token_env`` or from ``gh auth token``,
and is GitHub's: it goes to ``https://api.github.com`` only. A ``gist_api_url`` naming
another origin (GitHub Enterprise, or a URL someone else put in a project's config) gets
the token the ``[tokens]`` table binds to that origin, or none (see
:mod:`rage.upload.tokens`). It is only ever put in the Authorization header.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from rage.config import Settings
from rage.errors import UploadError
from rage.upload.base import Progress, UploadResult
from rage.upload.http import HttpClient
from rage.upload.members import describe, read_manifest, text_members
from rage.upload.tokens import configured_tokens, origin

GH_TIMEOUT = 5.0
GITHUB_API = "https://api.github.com"  # the one origin GitHub's own token is bound to
# manifest and summary first: they are what a maintainer reads
FIRST = ("summary.md", "manifest.json")


def github_token(settings: Settings) -> str | None:
    token = os.environ.get(settings.gist_token_env, "").strip()
    if token:
        return token
    gh = shutil.which("gh")
    if not gh:
        return None
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
    token for it is at hand, else the step to take (the hint a report prints)."""
    try:
        gist_token(settings.gist_api_url, settings)
    except UploadError:
        target = origin(settings.gist_api_url)
        if target == origin(GITHUB_API):
            return "after `gh auth login`"
        return f"after adding a token for {target or settings.gist_api_url} under [tokens]"
    return None


def gist_filename(member: str) -> str:
    # gist file names cannot contain '/'
    return member.replace("/", "__")


def gist_payload(path: Path) -> dict[str, object]:
    texts, skipped = text_members(path)
    if not texts:
        raise UploadError(f"{path.name} has no text members to put in a gist")
    names = [n for n in FIRST if n in texts] + [n for n in texts if n not in FIRST]
    files = {gist_filename(n): {"content": texts[n]} for n in names}
    info = describe(read_manifest(path))
    what = info["app"] or "a command"
    status = f" ({info['status']})" if info["status"] else ""
    desc = f"rage report for {what}{status}: {path.name}"
    if skipped:
        desc += f" (left out, not text: {', '.join(skipped[:10])})"
    return {"description": desc[:1000], "public": False, "files": files}


class GistUploader:
    name = "gist"

    def __init__(self, api_url: str, settings: Settings) -> None:
        self.api_url = api_url.rstrip("/")
        self.settings = settings

    def upload(self, path: Path, *, progress: Progress | None = None) -> UploadResult:
        token = gist_token(self.api_url, self.settings)
        body = json.dumps(gist_payload(path)).encode()
        if progress:
            progress(0, len(body))
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                   "Accept": "application/vnd.github+json"}
        hint = (f"the token comes from ${self.settings.gist_token_env} or `gh auth token`; "
                "it needs the gist scope")
        with HttpClient(self.settings, token_hint=hint) as client:
            resp = client.send("POST", f"{self.api_url}/gists", body=body, headers=headers)
        if progress:
            progress(len(body), len(body))
        try:
            data = json.loads(resp.text)
        except ValueError:
            data = None
        url = data.get("html_url") if isinstance(data, dict) else None
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise UploadError(f"{self.api_url} created no gist (no html_url in the answer)")
        return UploadResult(url=url, delete_url=None, bundle=str(path), protocol=self.name)
