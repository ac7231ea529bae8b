"""A directory target (``file:///path/dir``): copy the bundle there, 0600; link is file://."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from rage.errors import UploadError
from rage.fsutil import open_private
from rage.upload.base import Progress, UploadResult
from rage.upload.http import CHUNK


def directory_from_target(target: str) -> Path:
    if target.startswith("file:"):
        parts = urlsplit(target)
        if parts.netloc not in {"", "localhost"}:
            raise UploadError(f"file:// target must be local: {target}")
        return Path(unquote(parts.path))
    return Path(target).expanduser()


class DirectoryUploader:
    name = "file"

    def __init__(self, target: str) -> None:
        self.directory = directory_from_target(target)

    def upload(self, path: Path, *, progress: Progress | None = None) -> UploadResult:
        if not self.directory.is_dir():
            raise UploadError(f"no such directory: {self.directory}",
                              hint="a file:// target must be an existing directory "
                                   "(a mounted share); create it first")
        try:
            dest = self._free_name(path.name)
            tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
            total, sent = path.stat().st_size, 0
            try:
                with open(path, "rb") as src, open_private(tmp, "wb") as out:
                    while chunk := src.read(CHUNK):
                        out.write(chunk)
                        sent += len(chunk)
                        if progress:
                            progress(sent, total)
                os.replace(tmp, dest)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
        except OSError as e:
            raise UploadError(f"cannot copy the bundle to {self.directory}: "
                              f"{e.strerror or e}") from None
        return UploadResult(url=dest.resolve().as_uri(), delete_url=None, bundle=str(path),
                            protocol=self.name)

    def _free_name(self, name: str) -> Path:
        dest = self.directory / name
        stem, dot, ext = name.partition(".")
        n = 1
        while dest.exists():
            n += 1
            dest = self.directory / f"{stem}-{n}{dot}{ext}"
        return dest
