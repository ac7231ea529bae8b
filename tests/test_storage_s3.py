"""S3Storage against a real SeaweedFS server on 127.0.0.1 (tests/services.py)."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rage.errors import ConfigError, NotFoundError
from rage.server.storage import StoredBundle, new_id, token_hash
from tests.services import SeaweedFS

pytest.importorskip("boto3")
pytestmark = pytest.mark.slow


@pytest.fixture
def store(weed: SeaweedFS, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    from rage.server.storage_s3 import S3Storage

    for k, v in weed.env.items():
        monkeypatch.setenv(k, v)
    # hex only: a cut id could end with a dash, which S3 refuses in a bucket name
    bucket = weed.make_bucket("b-" + uuid.uuid4().hex[:20])
    s = S3Storage(f"s3://{bucket}/reports/", endpoint_url=weed.endpoint)
    yield s
    s.close()


def _meta(data: bytes, bundle_id: str | None = None) -> StoredBundle:
    return StoredBundle(id=bundle_id or new_id(), created_at="2026-12-02T00:00:00Z",
                        size=len(data), sha256=hashlib.sha256(data).hexdigest(),
                        delete_token_hash=token_hash("t"), manifest={"app": "demo"})


def _tmp(store: object, data: bytes) -> Path:
    from rage.server.storage_s3 import S3Storage

    assert isinstance(store, S3Storage)
    p = store.tmp_dir() / f"up-{new_id()}"
    p.write_bytes(data)
    return p


def test_parse_url() -> None:
    from rage.server.storage_s3 import parse_s3_url

    assert parse_s3_url("s3://bkt/a/b/") == ("bkt", "a/b/")
    assert parse_s3_url("s3://bkt") == ("bkt", "")
    with pytest.raises(ConfigError):
        parse_s3_url("s3:///x")
    with pytest.raises(ConfigError):
        parse_s3_url("https://bkt/x")


def test_round_trip_streams_bytes_identical(store: object) -> None:
    from rage.server.storage_s3 import S3Storage

    assert isinstance(store, S3Storage)
    store.check_writable()
    data = os.urandom(5 << 20)  # random: SeaweedFS compresses what compresses
    meta = _meta(data)
    tmp = _tmp(store, data)
    store.put(tmp, meta)
    assert not tmp.exists()  # consumed
    assert store.get_path(meta.id) is None
    assert store.get_meta(meta.id) == meta
    h = hashlib.sha256()
    with store.open(meta.id) as f:
        while chunk := f.read(1 << 16):
            h.update(chunk)
    assert h.hexdigest() == meta.sha256
    store._cache_drop(meta.id)  # now streamed from the object store itself
    h = hashlib.sha256()
    with store.open(meta.id) as f:
        while chunk := f.read(1 << 16):
            h.update(chunk)
    assert h.hexdigest() == meta.sha256
    assert [b.id for b in store.list_recent(10)] == [meta.id]
    store.delete(meta.id)
    with pytest.raises(NotFoundError):
        store.get_meta(meta.id)
    with pytest.raises(NotFoundError):
        store.open(meta.id)
    with pytest.raises(NotFoundError):
        store.delete(meta.id)


def test_an_id_is_never_overwritten(store: object) -> None:
    from rage.server.storage_s3 import S3Storage

    assert isinstance(store, S3Storage)
    first = b"first bundle"
    meta = _meta(first)
    store.put(_tmp(store, first), meta)
    store.put(_tmp(store, b"second"), _meta(b"second", meta.id))  # a no-op, not a replace
    assert store.get_meta(meta.id) == meta
    store._cache_drop(meta.id)  # read it from the object store, not this receiver's cache
    with store.open(meta.id) as f:
        assert f.read() == first


def test_blob_without_meta_is_invisible_and_found_as_orphan(store: object) -> None:
    from rage.server.storage_s3 import S3Storage

    assert isinstance(store, S3Storage)
    bundle_id = new_id()
    # what a receiver that died between the two writes leaves behind
    store._client.put_object(Bucket=store.bucket, Key=store._bundle_key(bundle_id), Body=b"x")
    with pytest.raises(NotFoundError):
        store.get_meta(bundle_id)
    assert store.list_recent(10) == []
    assert store.orphans() == [bundle_id]


def test_unwritable_bucket_is_a_clear_config_error(weed: SeaweedFS,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from rage.server.storage_s3 import S3Storage

    for k, v in weed.env.items():
        monkeypatch.setenv(k, v)
    s = S3Storage("s3://no-such-bucket-here/x", endpoint_url=weed.endpoint)
    with pytest.raises(ConfigError, match="cannot write to s3://no-such-bucket-here/x"):
        s.check_writable()
    s.close()
    dead = S3Storage("s3://bkt/x", endpoint_url="http://127.0.0.1:9")
    with pytest.raises(ConfigError, match="cannot reach"):
        dead.check_writable()
    dead.close()


def test_open_local_gives_a_seekable_local_copy_and_leaves_nothing(store: object) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from rage.server.storage_s3 import S3Storage

    assert isinstance(store, S3Storage)
    data = os.urandom(3 << 20)
    meta = _meta(data)
    store.put(_tmp(store, data), meta)
    store._cache_drop(meta.id)
    # downloads of an uncached bundle at once: each fetches it, one copy is kept
    with ThreadPoolExecutor(4) as pool:
        files = list(pool.map(store.open_local, [meta.id] * 4))
    for f in files:
        with f:
            f.seek(len(data) - 10)
            assert f.read() == data[-10:]
            f.seek(0)
            assert hashlib.sha256(f.read()).hexdigest() == meta.sha256
    assert store._cached == len(data) and list(store._cache) == [meta.id]
    assert sorted(p.name for p in (store.tmp_dir() / "cache").iterdir()) == [meta.id]
    # too large for the cache: a temporary gone from the directory once open
    store.cache_bytes = len(data)
    store._cache_drop(meta.id)
    with store.open_local(meta.id) as f:
        assert [p.name for p in store.tmp_dir().iterdir()] == ["cache"]
        assert hashlib.sha256(f.read()).hexdigest() == meta.sha256
    store.delete(meta.id)
    with pytest.raises(NotFoundError):
        store.open_local(meta.id)
