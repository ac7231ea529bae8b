"""multipart/form-data POST with the file in field ``file`` (the 0x0.st convention)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

from rage.config import Settings
from rage.errors import UploadError
from rage.upload.base import Progress, UploadResult, link_from_response
from rage.upload.http import HttpClient, stream_parts
from rage.upload.idempotency import origin, upload_key


class MultipartBody:
    """A streamed multipart body with a known length: preamble, file bytes, closing line."""

    def __init__(self, path: Path, *, field: str = "file", progress: Progress | None = None,
                 content_type: str = "application/zstd") -> None:
        self.path = path
        self.boundary = "rage-" + secrets.token_hex(16)
        name = path.name.replace("\\", "_").replace('"', "_").replace("\r", "").replace("\n", "")
        self.head = (
            f"--{self.boundary}\r\n"
            f'Content-Disposition: form-data; name="{field}"; filename="{name}"\r\n'
            f"Content-Type: {content_type}\r\n\r\n"
        ).encode()
        self.tail = f"\r\n--{self.boundary}--\r\n".encode()
        self.size = len(self.head) + path.stat().st_size + len(self.tail)
        self.progress = progress

    @property
    def content_type(self) -> str:
        return f"multipart/form-data; boundary={self.boundary}"

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[bytes]:
        return stream_parts((self.head,), self.path, (self.tail,), self.size, self.progress)


class MultipartUploader:
    name = "multipart"

    def __init__(self, url: str, settings: Settings) -> None:
        self.url = url
        self.settings = settings

    def upload(self, path: Path, *, progress: Progress | None = None) -> UploadResult:
        body = MultipartBody(path, progress=progress)
        # a rage receiver behind a plain URL then stores the same bundle once, as for
        # receiver+ URLs; the key is scoped to this host (rage.upload.idempotency)
        headers = {"Content-Type": body.content_type,
                   "Idempotency-Key": upload_key(path, origin(self.url))}
        with HttpClient(self.settings) as client:
            resp = client.send("POST", self.url, body=body, headers=headers)
        link = link_from_response(resp.text, resp.headers, resp.content_type, resp.url)
        if not link:
            raise UploadError(f"{self.url} accepted the upload but sent back no link")
        return UploadResult(url=link, delete_url=None, bundle=str(path), protocol=self.name)
