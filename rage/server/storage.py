"""Where received bundles live: the :class:`Storage` interface and the local backend.

An object-store backend implements the same protocol: ``put`` uploads the validated temp
file and its metadata, ``open`` streams it back, ``get_path`` returns None. The local
backend keeps one file per bundle plus one small meta JSON per bundle::

    <root>/bundles/<id>.tar.zst     0600, moved into place by rename once validated
    <root>/meta/<id>.json           0600, written atomically after the bundle: its presence
                                    makes the bundle visible
    <root>/tmp/                     uploads in progress (removed on failure; what a crash
                                    left behind is swept at start-up)

A 201 means the bundle is on stable storage: the upload's bytes are synced before the
rename that names them, the metadata likewise, and both directories after their renames
(a power loss after the client got its link, once ``rage send`` has forgotten its pending
copy, would otherwise lose the bundle).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import secrets
import threading
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import IO, Any, Protocol

from rage.errors import NotFoundError
from rage.fsutil import private_dir

_ID_RE = re.compile(r"^[A-Za-z0-9_-]{22,64}$")


def new_id() -> str:
    """A link id: 128 bits from the OS CSPRNG, URL-safe (22 characters)."""
    return secrets.token_urlsafe(16)


def valid_id(bundle_id: str) -> bool:
    return bool(_ID_RE.match(bundle_id))


def token_hash(token: str) -> str:
    """What is stored instead of a deletion token (tokens are random, so no salt is needed)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


MAX_LISTED_META = 4 * 1024 * 1024  # a bounded manifest's meta file is well under 1 MiB

# waitress has the whole body before the app starts writing a part file, so a live one is
# written continuously for seconds; one idle this long was left by a crash
STALE_UPLOAD_S = 15 * 60


def sweep_parts(directory: Path, idle: float = STALE_UPLOAD_S) -> int:
    """Remove the ``upload-*.part`` files in ``directory`` idle for ``idle`` seconds.

    Run at start-up on :meth:`Storage.tmp_dir`: a crash leaves its uploads there. A part
    file still being written (another server on the same storage) is fresh and is kept.
    """
    import time

    cutoff = time.time() - idle
    swept = 0
    for p in directory.glob("upload-*.part"):
        with contextlib.suppress(FileNotFoundError):
            if p.stat().st_mtime < cutoff:
                p.unlink()
                swept += 1
    return swept


@dataclass(frozen=True)
class StoredBundle:
    """Metadata of one stored bundle (``manifest`` is the bundle's own manifest.json)."""

    id: str
    created_at: str
    size: int
    sha256: str
    delete_token_hash: str
    manifest: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Storage(Protocol):
    """The storage contract the WSGI app relies on; every method is thread-safe."""

    def tmp_dir(self) -> Path:
        """A private local directory for uploads in progress."""

    def put(self, tmp_path: Path, meta: StoredBundle, part: IO[bytes] | None = None) -> None:
        """Store the validated file ``tmp_path`` (consumed) under ``meta.id``; ``part``, when
        given, is that file still open, read or synced from there without opening it again."""

    def open(self, bundle_id: str) -> IO[bytes]:
        """The raw bundle, for reading; raises NotFoundError."""

    def open_local(self, bundle_id: str) -> IO[bytes]:
        """The raw bundle as a seekable local file (a remote backend fetches it first: a
        download is then sent from the disk, never waiting on the network); NotFoundError."""

    def get_path(self, bundle_id: str) -> Path | None:
        """A local path to the raw bundle when the backend has one, else None."""

    def get_meta(self, bundle_id: str) -> StoredBundle:
        """Raises NotFoundError when there is no such bundle."""

    def delete(self, bundle_id: str) -> None:
        """Remove the bundle and its metadata; raises NotFoundError."""

    def list_recent(self, limit: int) -> list[StoredBundle]:
        """The newest bundles first."""


def _sync(path: Path) -> None:
    """fsync a file or a directory (a directory's sync makes the renames in it durable)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _DirSync:
    """fsync of one directory, shared by the uploads that wait for it at once.

    A caller needs a sync that *started* after its rename; while one runs, later callers
    wait for it to end and then share the next one (the group commit of file systems). With
    eight upload threads, one fsync of each directory per upload cost about a third of the
    receiver's uploads per second.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        # opened once, not for every sync: an open and a close fewer per sync (strace, 300
        # uploads on 8 threads: 420 opens and 420 closes fewer). The storage's directories
        # are not replaced while it serves: the renames go to the directory this names
        self._fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._cond = threading.Condition()
        self._started = 0  # syncs begun
        self._done = 0  # syncs finished (in order: one runs at a time)
        self._running = False

    def __del__(self) -> None:
        with contextlib.suppress(AttributeError, OSError):
            os.close(self._fd)

    def sync(self) -> None:
        with self._cond:
            # the sync running now may have started before our rename: the next one counts
            need = self._started + 1
            while self._done < need:
                if self._running:
                    self._cond.wait()
                    continue
                self._running = True
                self._started += 1
                mine = self._started
                self._cond.release()
                synced = False
                try:
                    os.fsync(self._fd)
                    synced = True
                finally:  # a failed sync covers no one: the next caller tries again
                    self._cond.acquire()
                    self._running = False
                    if synced:
                        self._done = mine
                    self._cond.notify_all()


def _write_synced(path: Path, data: bytes) -> None:
    """``data`` to ``path`` through a fresh 0600 temporary, synced before the rename."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb", buffering=io.DEFAULT_BUFFER_SIZE) as f:  # no isatty() ioctl
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class LocalStorage:
    """Bundles in a local directory (0700 dirs, 0600 files, atomic renames)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        for d in (root, root / "bundles", root / "meta", root / "tmp"):
            private_dir(d)
        self._synced_bundles = _DirSync(root / "bundles")
        self._synced_meta = _DirSync(root / "meta")

    def tmp_dir(self) -> Path:
        return self.root / "tmp"


    def _bundle(self, bundle_id: str) -> Path:
        if not valid_id(bundle_id):
            raise NotFoundError(f"no bundle {bundle_id!r}")
        return self.root / "bundles" / f"{bundle_id}.tar.zst"

    def _meta(self, bundle_id: str) -> Path:
        if not valid_id(bundle_id):
            raise NotFoundError(f"no bundle {bundle_id!r}")
        return self.root / "meta" / f"{bundle_id}.json"

    def put(self, tmp_path: Path, meta: StoredBundle, part: IO[bytes] | None = None) -> None:
        dest = self._bundle(meta.id)
        os.chmod(tmp_path, 0o600)
        if part is None:
            _sync(tmp_path)
        else:
            part.flush()
            os.fsync(part.fileno())
        os.replace(tmp_path, dest)
        try:
            # json.dumps writes what fsutil.write_json_atomic would, but in C and
            # without the deep copy of the manifest that to_dict() makes: profiled,
            # the two were about a sixth of a small upload's time in the app
            # indented like every JSON file rage writes; the manifest's bytes, depth and value
            # count are bounded before it gets here (limits.py), which bounds this file too
            text = json.dumps({f.name: getattr(meta, f.name) for f in fields(meta)},
                              indent=2)
            _write_synced(self._meta(meta.id), (text + "\n").encode())
            self._synced_bundles.sync()
            self._synced_meta.sync()
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(dest)
            raise

    def _stored(self, bundle_id: str) -> None:
        """NotFoundError unless the bundle is stored (its metadata, written last, is there):
        a stat, not a parse of metadata the caller has usually read already (a download
        read its manifest of up to 256 KiB twice)."""
        if not self._meta(bundle_id).is_file():
            raise NotFoundError(f"no bundle {bundle_id!r}")

    def open(self, bundle_id: str) -> IO[bytes]:
        self._stored(bundle_id)
        try:
            return open(self._bundle(bundle_id), "rb")
        except FileNotFoundError:
            raise NotFoundError(f"no bundle {bundle_id!r}") from None

    open_local = open

    def get_path(self, bundle_id: str) -> Path | None:
        self._stored(bundle_id)
        return self._bundle(bundle_id)

    def get_meta(self, bundle_id: str) -> StoredBundle:
        try:
            raw = json.loads(self._meta(bundle_id).read_text("utf-8"))
        except FileNotFoundError:
            raise NotFoundError(f"no bundle {bundle_id!r}") from None
        return StoredBundle(**raw)

    def delete(self, bundle_id: str) -> None:
        meta = self._meta(bundle_id)
        try:
            os.unlink(meta)  # invisible first, then the data
        except FileNotFoundError:
            raise NotFoundError(f"no bundle {bundle_id!r}") from None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._bundle(bundle_id))

    def list_recent(self, limit: int) -> list[StoredBundle]:
        entries: list[tuple[float, str]] = []
        with os.scandir(self.root / "meta") as it:
            for e in it:
                if e.name.endswith(".json") and not e.name.startswith("."):
                    with contextlib.suppress(FileNotFoundError):
                        st = e.stat()
                        # stored before manifests were bounded: listing it could cost
                        # hundreds of MB; its own page still opens it
                        if st.st_size <= MAX_LISTED_META:
                            entries.append((st.st_mtime, e.name[:-5]))
        entries.sort(reverse=True)
        out = []
        for _, bundle_id in entries[:limit]:
            with contextlib.suppress(NotFoundError, ValueError, TypeError):
                out.append(self.get_meta(bundle_id))
        return out
