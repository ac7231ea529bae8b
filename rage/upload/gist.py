"""A private GitHub gist of the bundle's text members (binary members cannot go in a gist).

Its token is GitHub's, or the one ``[tokens]`` binds to another gist API: see
:mod:`rage.upload.github`. It is only ever put in the Authorization header.
"""

from __future__ import annotations

import json
from pathlib import Path

from rage.config import Settings
from rage.errors import UploadError
from rage.upload.base import Progress, UploadResult
from rage.upload.github import gist_token
from rage.upload.http import HttpClient
from rage.upload.members import describe, read_manifest, text_members

# manifest and summary first: they are what a maintainer reads
FIRST = ("summary.md", "manifest.json")


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
