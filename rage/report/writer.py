"""Writing a prepared report: only ever a new 0600 file, or standard output.

``--output`` names a new file, an existing directory (or ``DIR/``) to put the bundle in, or
``-`` for stdout. Whatever is already at a path (a file, a symlink, a device such as
``/dev/null``, a FIFO) is refused, never replaced: the bundle is written under a temporary
name and hard-linked to its final name, which fails if that name was taken meanwhile.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rage import bundle as _bundle
from rage.bundle.frames import Framed
from rage.errors import UsageError
from rage.fsutil import create_temp, link_new, private_dir
from rage.paths import reports_dir
from rage.record.history import Run

if TYPE_CHECKING:
    from rage.report.model import Prepared


@dataclass(frozen=True)
class BuiltBundle:
    """A bundle on disk."""

    path: Path
    size: int
    sha256: str
    manifest: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "size": self.size, "sha256": self.sha256,
                "members": len(self.manifest.get("files", [])) + 1}


def default_bundle_path(run: Run, created: float | None = None) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(created))
    return reports_dir(run.app) / f"{run.app}-{run.short_id}-{stamp}.tar.zst"


STDOUT = "-"  # --output - : the bundle goes to standard output


def output_path(output: str | Path | None, run: Run, created: float) -> Path | None:
    """Where ``--output`` puts the bundle: a new file's path, or None for standard output.

    ``None`` means the reports directory; an existing directory (or a name ending in ``/``)
    gets the default file name inside it; anything else must be a new file in an existing
    directory. Something already there (a file, a symlink, a device such as ``/dev/null``)
    is refused, never replaced.
    """
    name = default_bundle_path(run, created).name
    if output is None:
        return reports_dir(run.app) / name
    text = os.fspath(output)
    if text == STDOUT:
        return None
    if not text:
        raise UsageError("--output is empty: name a file, a directory, or - for stdout")
    path = Path(text).expanduser()
    if text.endswith(os.sep) or os.path.isdir(path):
        if not os.path.isdir(path):
            raise UsageError(f"no such directory: {text}",
                             hint="create it first, or name a file in an existing directory")
        return path / name
    if os.path.lexists(path):
        kind = _kind(path)
        raise UsageError(f"{text} already exists ({kind}): rage writes bundles only to new files",
                         hint="choose a new file name, or a directory to put the bundle in")
    parent = path.parent
    if not os.path.isdir(parent):
        raise UsageError(f"no such directory: {parent}",
                         hint="create it first, or choose another place with --output")
    return path


def _kind(path: Path) -> str:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link"
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return "a device"
    if stat.S_ISFIFO(st.st_mode):
        return "a named pipe"
    if stat.S_ISSOCK(st.st_mode):
        return "a socket"
    return "a file"


def write(prepared: Prepared, output: str | Path | None = None) -> BuiltBundle:
    """Write the bundle as a new 0600 file (see :func:`output_path`), or to stdout for ``-``.

    The file appears whole or not at all, and never replaces anything: the bundle is
    written under a temporary name and hard-linked to its final name, which fails if
    that name was taken meanwhile.
    """
    created = time.time()
    run = prepared.request.run
    path = output_path(output, run, created)
    members: list[tuple[str, bytes | Path | Framed]] = [(m.name, m.data)
                                                        for m in prepared.members]
    if path is None:
        return _write_stdout(prepared, members, created)
    if output is None:
        private_dir(path.parent)
    # a name rage chose may be taken (two reports in one second): then try -2, -3, ...
    chosen = output is None or path.name != Path(os.fspath(output)).name
    try:
        # The directory may be one others can write (/tmp, a shared folder): the bundle is
        # made under a new unpredictable name, never through anything planted there.
        tmp, fd = create_temp(path)
        try:
            with os.fdopen(fd, "wb") as raw:
                size, digest = _bundle.write_bundle_to(raw, members, mtime=created)
                for n in range(2, 100):
                    try:
                        link_new(raw.fileno(), tmp, path)
                        break
                    except FileExistsError:
                        if not chosen:
                            raise
                        stem = default_bundle_path(run, created).name.removesuffix(".tar.zst")
                        path = path.with_name(f"{stem}-{n}.tar.zst")
                else:
                    raise FileExistsError(errno.EEXIST, "exists", str(path))
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    except FileExistsError:
        raise UsageError(f"{path} already exists: rage writes bundles only to new files",
                         hint="choose a new file name with --output") from None
    except OSError as e:
        raise UsageError(f"cannot write the bundle to {path}: {e.strerror or e}",
                         hint="choose another place with --output") from None
    return BuiltBundle(path=path, size=size, sha256=digest, manifest=prepared.manifest)


def _write_stdout(prepared: Prepared, members: list[tuple[str, bytes | Path | Framed]],
                  created: float) -> BuiltBundle:
    import sys

    out = sys.stdout.buffer
    if out.isatty():
        raise UsageError("refusing to write a binary bundle to a terminal",
                         hint="redirect standard output (> FILE, | CMD) or name a file")
    tmpdir = Path(tempfile.mkdtemp(prefix="rage-out-"))
    try:
        tmp = tmpdir / "bundle.tar.zst"
        size, digest = _bundle.write_bundle(tmp, members, mtime=created)
        with open(tmp, "rb") as f:
            shutil.copyfileobj(f, out, 1024 * 1024)
        out.flush()
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return BuiltBundle(path=Path(STDOUT), size=size, sha256=digest, manifest=prepared.manifest)
