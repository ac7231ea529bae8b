"""Raw PUT of the bundle: transfer.sh style (``<url>/<name>``) or a pre-signed URL as is.

A URL whose path ends in ``/`` gets the bundle's file name appended; any other URL
(pre-signed object-store URLs carry their signature in the query) is used exactly.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from rage.config import Settings
from rage.upload.base import Progress, UploadResult, link_from_response
from rage.upload.http import FileBody, HttpClient


def put_url(url: str, filename: str) -> str:
    parts = urlsplit(url)
    if parts.path.endswith("/") or not parts.path:
        path = (parts.path or "/") + quote(filename)
        return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))
    return url


class PutUploader:
    name = "put"

    def __init__(self, url: str, settings: Settings) -> None:
        self.url = url
        self.settings = settings

    def upload(self, path: Path, *, progress: Progress | None = None) -> UploadResult:
        target = put_url(self.url, path.name)
        with HttpClient(self.settings) as client:
            resp = client.send("PUT", target, body=FileBody(path, progress),
                               headers={"Content-Type": "application/octet-stream"})
        # transfer.sh answers with the link as text; object stores answer with nothing, and
        # then the URL without its signature is the object's address.
        link = link_from_response(resp.text, resp.headers, resp.content_type, resp.url)
        if not link:
            p = urlsplit(target)
            link = urlunsplit((p.scheme, p.netloc, p.path, "", ""))
        delete = resp.headers.get("X-Url-Delete")
        return UploadResult(url=link, delete_url=delete, bundle=str(path), protocol=self.name)
