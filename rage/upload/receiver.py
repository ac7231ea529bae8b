"""rage's own receiver (``rage serve``): ``POST <base>/api/v1/bundles`` with the raw bundle.

Answer: 201 with JSON ``{"id", "url", "raw_url", "delete_url", "delete_token"}``. The token
bound to the receiver's origin (``RAGE_UPLOAD_TOKEN`` for upload_url's, see
:mod:`rage.upload.tokens`) is sent as ``Authorization: Bearer`` (by
:class:`~rage.upload.http.HttpClient`, for every HTTP uploader); it is never logged.
"""

from __future__ import annotations

import json
from pathlib import Path

from rage.config import Settings
from rage.errors import UploadError
from rage.upload.base import Progress, UploadResult, link_from_response
from rage.upload.http import FileBody, HttpClient
from rage.upload.idempotency import host_scope, upload_key
from rage.upload.tokens import TOKEN_ENV

API_PATH = "api/v1/bundles"
__all__ = ["API_PATH", "TOKEN_ENV", "ReceiverUploader", "bundles_url"]


def bundles_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/" + API_PATH) else f"{base}/{API_PATH}"


class ReceiverUploader:
    name = "receiver"

    def __init__(self, url: str, settings: Settings) -> None:
        self.url = bundles_url(url)
        self.settings = settings

    def upload(self, path: Path, *, progress: Progress | None = None) -> UploadResult:
        headers = {"Content-Type": "application/zstd", "Accept": "application/json",
                   "X-Rage-Filename": path.name}
        # the same bundle sent twice is stored once (rage.upload.idempotency)
        headers["Idempotency-Key"] = upload_key(path, host_scope(self.url))
        with HttpClient(self.settings) as client:
            resp = client.send("POST", self.url, body=FileBody(path, progress), headers=headers)
        try:
            data = json.loads(resp.text)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("url"), str):
            delete = data.get("delete_url")
            return UploadResult(url=data["url"], delete_url=delete if isinstance(delete, str)
                                else None, bundle=str(path), protocol=self.name)
        link = link_from_response(resp.text, resp.headers, resp.content_type, resp.url)
        if not link:
            raise UploadError(f"{self.url} accepted the upload but sent back no link")
        return UploadResult(url=link, delete_url=None, bundle=str(path), protocol=self.name)
