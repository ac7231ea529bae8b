"""Bundles in an S3-compatible object store (AWS S3, SeaweedFS, MinIO...): extra ``s3``.

Layout under ``s3://BUCKET/PREFIX``::

    PREFIX/bundles/<id>.tar.zst   the validated bundle, written first
    PREFIX/meta/<id>.json         its metadata, written last: its presence makes it visible

Both writes are conditional (``If-None-Match: *``): an id is never overwritten, so a retried
request cannot replace a stored bundle, and two receivers can never clobber each other. A
receiver keeps nothing but uploads in progress (a private temporary directory), so any number
of them can serve one bucket. A bundle whose metadata never arrived (the receiver died between
the two writes) stays invisible; :meth:`S3Storage.orphans` finds such blobs for a sweep, and
a retry of that upload with the same ``Idempotency-Key`` completes it.

Credentials, region and endpoint come from the usual AWS variables and config files (boto3's
chain); ``endpoint_url`` overrides the endpoint (``rage serve --s3-endpoint``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import IO, Any, cast

from rage.errors import ConfigError, NotFoundError
from rage.server.storage import StoredBundle, valid_id

META_MAX = 4 << 20  # a stored meta object larger than this is not ours: refuse to parse it


def parse_s3_url(url: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` -> (``bucket``, ``some/prefix/``); raises ConfigError."""
    if not url.startswith("s3://"):
        raise ConfigError(f"not an s3:// URL: {url!r}")
    bucket, _, prefix = url[len("s3://"):].partition("/")
    if not bucket:
        raise ConfigError(f"no bucket in {url!r} (expected s3://BUCKET/PREFIX)")
    prefix = prefix.strip("/")
    return bucket, (prefix + "/" if prefix else "")


class S3Storage:
    """The :class:`rage.server.storage.Storage` contract on an S3 bucket (thread-safe)."""

    def __init__(self, url: str, *, endpoint_url: str | None = None,
                 region: str | None = None, cache_bytes: int = 256 << 20) -> None:
        import boto3
        from botocore.config import Config

        self.bucket, self.prefix = parse_s3_url(url)
        self.url = url
        cfg = Config(retries={"max_attempts": 4, "mode": "standard"},
                     max_pool_connections=64, connect_timeout=5, read_timeout=60)
        # one client, shared by all threads: botocore clients are thread-safe
        self._client = boto3.session.Session().client(
            "s3", endpoint_url=endpoint_url, region_name=region, config=cfg)
        self._tmp = Path(tempfile.mkdtemp(prefix="rage-serve-"))
        os.chmod(self._tmp, 0o700)
        (self._tmp / "cache").mkdir(mode=0o700)
        self._lock = threading.Lock()
        # bundles this receiver stored lately: the signature and the first page views read
        # them right after the upload, and they never change
        self.cache_bytes = cache_bytes
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._cached = 0

    # -- keys ------------------------------------------------------------------------------
    def _bundle_key(self, bundle_id: str) -> str:
        if not valid_id(bundle_id):
            raise NotFoundError(f"no bundle {bundle_id!r}")
        return f"{self.prefix}bundles/{bundle_id}.tar.zst"

    def _meta_key(self, bundle_id: str) -> str:
        if not valid_id(bundle_id):
            raise NotFoundError(f"no bundle {bundle_id!r}")
        return f"{self.prefix}meta/{bundle_id}.json"

    # -- start-up --------------------------------------------------------------------------
    def check_writable(self) -> None:
        """Write, read and delete a probe object; raises ConfigError saying what failed."""
        from botocore.exceptions import BotoCoreError, ClientError

        key = f"{self.prefix}.rage-probe-{os.getpid()}-{threading.get_ident()}"
        try:
            self._client.put_object(Bucket=self.bucket, Key=key, Body=b"ok")
            self._client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
            self._client.delete_object(Bucket=self.bucket, Key=key)
        except ClientError as e:
            err = e.response.get("Error", {})
            raise ConfigError(f"cannot write to {self.url}: {err.get('Code', '?')}: "
                              f"{err.get('Message', e)}") from None
        except BotoCoreError as e:
            raise ConfigError(f"cannot reach the object store for {self.url}: {e}") from None

    def check_ready(self) -> None:
        """For /readyz: raises if the bucket cannot be reached right now."""
        self._client.head_bucket(Bucket=self.bucket)

    # -- Storage ---------------------------------------------------------------------------
    def tmp_dir(self) -> Path:
        return self._tmp

    def put(self, tmp_path: Path, meta: StoredBundle, part: IO[bytes] | None = None) -> None:
        """Blob first, meta last, both ``If-None-Match: *``. Putting an id that exists is a
        no-op for the part that exists (a retried upload finishing what an earlier attempt
        started, see rage.server.idempotency): nothing stored is ever overwritten."""
        try:
            if part is None:
                with open(tmp_path, "rb") as f:
                    self._put_new(self._bundle_key(meta.id), f, "application/zstd")
            else:
                part.seek(0)
                self._put_new(self._bundle_key(meta.id), part, "application/zstd")
            text = json.dumps({f.name: getattr(meta, f.name) for f in fields(meta)})
            self._put_new(self._meta_key(meta.id), text.encode(), "application/json")
            self._cache_add(meta.id, tmp_path)
        finally:
            tmp_path.unlink(missing_ok=True)

    def _put_new(self, key: str, body: Any, ctype: str) -> bool:
        """False when ``key`` exists already (left as it is)."""
        from botocore.exceptions import ClientError

        try:
            self._client.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType=ctype,
                                    IfNoneMatch="*")
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
                return False
            raise
        return True

    # -- a bounded local cache of blobs (bundles never change once stored) ------------------
    def _cache_add(self, bundle_id: str, path: Path) -> None:
        if self.cache_bytes <= 0:
            return
        size = path.stat().st_size
        if size > self.cache_bytes // 4:
            return
        with self._lock:
            if bundle_id in self._cache:  # two downloads fetched it at once: one is kept
                return
            os.replace(path, self._tmp / "cache" / bundle_id)
            self._cache[bundle_id] = size
            self._cached += size
            while self._cached > self.cache_bytes and self._cache:
                old, n = self._cache.popitem(last=False)
                self._cached -= n
                (self._tmp / "cache" / old).unlink(missing_ok=True)

    def _cache_open(self, bundle_id: str) -> IO[bytes] | None:
        with self._lock:
            if bundle_id not in self._cache:
                return None
            self._cache.move_to_end(bundle_id)
            try:  # opened under the lock: an eviction can only unlink an open file
                return open(self._tmp / "cache" / bundle_id, "rb")
            except FileNotFoundError:
                return None

    def _cache_drop(self, bundle_id: str) -> None:
        with self._lock:
            n = self._cache.pop(bundle_id, None)
            if n is not None:
                self._cached -= n
                (self._tmp / "cache" / bundle_id).unlink(missing_ok=True)

    def open(self, bundle_id: str) -> IO[bytes]:
        """The raw bundle, streamed from the store (never read whole into memory)."""
        self.get_meta(bundle_id)  # deleted (by any receiver) means gone, cached or not
        cached = self._cache_open(bundle_id)
        if cached is not None:
            return cached
        return self._blob(bundle_id)

    def _blob(self, bundle_id: str) -> IO[bytes]:
        from botocore.exceptions import ClientError

        try:
            obj = self._client.get_object(Bucket=self.bucket, Key=self._bundle_key(bundle_id))
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise NotFoundError(f"no bundle {bundle_id!r}") from None
            raise
        return cast(IO[bytes], _Body(obj["Body"], int(obj.get("ContentLength") or 0)))

    def open_local(self, bundle_id: str) -> IO[bytes]:
        """The raw bundle as a local file: the cached copy, else fetched in full first (by
        the worker that took the request, at the store's speed) into the cache, or, too
        large for it, into a private temporary unlinked once open. A member download is
        then sent from the disk by the server's event loop: a slow reader holds a
        connection, never a worker waiting on it (eight once held every worker)."""
        self.get_meta(bundle_id)
        cached = self._cache_open(bundle_id)
        if cached is not None:
            return cached
        with self._blob(bundle_id) as body:
            fd, tmp = tempfile.mkstemp(prefix="fetch-", dir=self._tmp)
            try:
                with os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(body, out, 1 << 20)
                f = open(tmp, "rb")  # noqa: SIM115 - the caller closes it
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        self._cache_add(bundle_id, Path(tmp))  # the open file survives a rename or eviction
        Path(tmp).unlink(missing_ok=True)  # (not cached: too large for the cache)
        return f

    def get_path(self, bundle_id: str) -> Path | None:
        return None

    def get_meta(self, bundle_id: str) -> StoredBundle:
        from botocore.exceptions import ClientError

        try:
            obj = self._client.get_object(Bucket=self.bucket, Key=self._meta_key(bundle_id))
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise NotFoundError(f"no bundle {bundle_id!r}") from None
            raise
        raw = obj["Body"].read(META_MAX + 1)
        if len(raw) > META_MAX:
            raise NotFoundError(f"no bundle {bundle_id!r}")
        return StoredBundle(**json.loads(raw))

    def delete(self, bundle_id: str) -> None:
        self.get_meta(bundle_id)
        self._cache_drop(bundle_id)
        # invisible first, then the data
        self._client.delete_object(Bucket=self.bucket, Key=self._meta_key(bundle_id))
        self._client.delete_object(Bucket=self.bucket, Key=self._bundle_key(bundle_id))

    def _keys(self, sub: str) -> Iterator[dict[str, Any]]:
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=f"{self.prefix}{sub}/")
        for page in pages:
            yield from page.get("Contents", [])

    def list_recent(self, limit: int) -> list[StoredBundle]:
        """Newest first by the store's modification time (a full listing: the index is the
        fast path for pages; this serves small deployments and tests)."""
        objs = sorted(self._keys("meta"), key=lambda o: o["LastModified"], reverse=True)
        out: list[StoredBundle] = []
        for o in objs[:limit]:
            bundle_id = o["Key"].rsplit("/", 1)[-1].removesuffix(".json")
            try:
                out.append(self.get_meta(bundle_id))
            except (NotFoundError, ValueError, TypeError):
                continue
        return out

    def _orphan_objects(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(id, listing entry) of every blob without metadata."""
        metas = {o["Key"].rsplit("/", 1)[-1].removesuffix(".json") for o in self._keys("meta")}
        for o in self._keys("bundles"):
            bundle_id = o["Key"].rsplit("/", 1)[-1].removesuffix(".tar.zst")
            if bundle_id not in metas:
                yield bundle_id, o

    def orphans(self) -> list[str]:
        """Ids of blobs without metadata (a receiver died between the two writes)."""
        return [bundle_id for bundle_id, _ in self._orphan_objects()]

    def delete_orphans(self, min_age_s: float) -> int:
        """Delete blobs without metadata older than ``min_age_s`` (a receiver died between
        the two writes, and no retry completed the upload); returns how many."""
        import datetime as dt

        cutoff = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=min_age_s)
        n = 0
        for _, o in self._orphan_objects():
            if o["LastModified"] < cutoff:
                self._client.delete_object(Bucket=self.bucket, Key=o["Key"])
                n += 1
        return n

    def close(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)


class _Body:
    """A botocore streaming body as a minimal read-only binary file."""

    def __init__(self, body: Any, length: int) -> None:
        self._body = body
        self.length = length

    def read(self, n: int = -1) -> bytes:
        data: bytes = self._body.read(None if n < 0 else n)
        return data

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._body.close()

    def __enter__(self) -> _Body:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._body.iter_chunks(1 << 16))
