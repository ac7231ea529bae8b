"""A directory target (``file:///path/dir``): copy the bundle there, 0600; link is file://."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from rage.errors import UploadError
from rage.fsutil import create_temp, link_new
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
        # The directory is often shared (a mounted drop folder): the copy is made under a
        # new unpredictable name and linked to a free name, never through a planted link.
        dest = self.directory / path.name
        try:
            tmp, fd = create_temp(dest)
            try:
                with open(path, "rb") as src, os.fdopen(fd, "wb") as out:
                    total, sent = os.fstat(src.fileno()).st_size, 0
                    while chunk := src.read(CHUNK):
                        out.write(chunk)
                        sent += len(chunk)
                        if progress:
                            progress(sent, total)
                    out.flush()
                    os.fsync(out.fileno())
                    dest = self._link_free(out.fileno(), tmp, path.name)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
        except OSError as e:
            raise UploadError(f"cannot copy the bundle to {self.directory}: "
                              f"{e.strerror or e}") from None
        return UploadResult(url=dest.resolve().as_uri(), delete_url=None, bundle=str(path),
                            protocol=self.name)

    def _link_free(self, fd: int, tmp: str, name: str) -> Path:
        """Link the copy to ``name``, or ``stem-2.ext``, ``stem-3.ext``... if taken."""
        stem, dot, ext = name.partition(".")
        for n in range(1, 1000):
            dest = self.directory / (name if n == 1 else f"{stem}-{n}{dot}{ext}")
            try:
                link_new(fd, tmp, dest)
                return dest
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "no free name for the bundle", str(self.directory))
