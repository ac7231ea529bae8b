"""Three stateless receivers on one SeaweedFS (S3) and one PostgreSQL, all real servers.

1,000 uploads from concurrent clients (curl, and rage's own uploader) spread over the three;
one receiver is killed with SIGKILL mid-run and every upload it dropped is retried on another
with the same Idempotency-Key, as a load balancer's client would. Then, with the killed
receiver restarted: every acknowledged bundle is visible and byte-identical from every
receiver, nothing is stored twice, the signature counts are exact, and no half-written bundle
is visible.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.services import Postgres, SeaweedFS
from tests.test_server import build_bundle, launch_serve, make_manifest
from tests.test_server_triage import FAMILIES, family_files

pytest.importorskip("boto3")
pytest.importorskip("psycopg")
pytest.importorskip("sqlalchemy")
pytestmark = pytest.mark.slow

ADMIN = "scale-admin-token"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
UPLOADS = int(os.environ.get("RAGE_TEST_SCALE_UPLOADS", "1000"))


@dataclass
class Receiver:
    url: str
    proc: subprocess.Popen[str]


def serve_args(weed: SeaweedFS, bucket: str, db: str) -> list[str]:
    return ["--storage", f"s3://{bucket}/reports", "--s3-endpoint", weed.endpoint,
            "--database", db, "--admin-token", ADMIN, "--threads", "8"]


def start(args: list[str], env: dict[str, str]) -> Receiver:
    return Receiver(*launch_serve(args, env))


def stop(r: Receiver) -> None:
    if r.proc.poll() is None:
        r.proc.terminate()
        try:
            r.proc.wait(15)
        except subprocess.TimeoutExpired:
            r.proc.kill()
            r.proc.wait()
    assert r.proc.stdout is not None
    r.proc.stdout.close()


def test_migrate_then_health_and_readiness(weed: SeaweedFS, pg: Postgres,
                                           tmp_path: Path) -> None:
    bucket = weed.make_bucket("health-" + uuid.uuid4().hex[:8])
    db = pg.database("health" + uuid.uuid4().hex[:8])
    env = weed.env
    out = subprocess.run([sys.executable, "-m", "rage", "serve", "--migrate",
                          *serve_args(weed, bucket, db)], capture_output=True, text=True,
                         env={**os.environ, **env}, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert "migrated the index" in out.stdout and "postgres@" in out.stdout
    again = subprocess.run([sys.executable, "-m", "rage", "serve", "--migrate",
                            *serve_args(weed, bucket, db)], capture_output=True, text=True,
                           env={**os.environ, **env}, timeout=60, check=False)
    assert "nothing to do" in again.stdout
    r, other = (start(serve_args(weed, bucket, db), env) for _ in range(2))
    try:
        assert requests.get(f"{r.url}/healthz", timeout=10).json() == {"status": "ok"}
        assert requests.get(f"{r.url}/readyz", timeout=10).json() == {"status": "ok"}
        # a maintainer logged in on one receiver is logged in on all (signed sessions)
        login = requests.post(f"{r.url}/admin/login", data={"token": ADMIN, "next": "/admin"},
                              allow_redirects=False, timeout=10)
        assert login.status_code == 303
        cookie = login.cookies.get("rage_admin")
        assert cookie
        page = requests.get(f"{other.url}/admin", cookies={"rage_admin": cookie},
                            headers={"Accept": "text/html"}, allow_redirects=False, timeout=10)
        assert page.status_code == 200
        forged = cookie[:-4] + ("0000" if not cookie.endswith("0000") else "1111")
        page = requests.get(f"{other.url}/admin", cookies={"rage_admin": forged},
                            headers={"Accept": "text/html"}, allow_redirects=False, timeout=10)
        assert page.status_code == 303  # back to the login form
    finally:
        stop(r)
        stop(other)
    # the database gone: alive, but not ready (a load balancer stops sending uploads)
    r = start(serve_args(weed, bucket, db), env)
    try:
        pg_stop = pg.pause()
        try:
            ready = requests.get(f"{r.url}/readyz", timeout=30)
            assert ready.status_code == 503 and ready.json()["problems"] == [
                "index: OperationalError"]
            assert requests.get(f"{r.url}/healthz", timeout=10).status_code == 200
        finally:
            pg_stop()
        assert requests.get(f"{r.url}/readyz", timeout=30).status_code == 200
    finally:
        stop(r)
    # a bucket that does not exist: refused at start-up in one line, nothing served
    bad = subprocess.run([sys.executable, "-m", "rage", "serve", "--port", "0",
                          *serve_args(weed, "no-such-bucket-x", db)], capture_output=True,
                         text=True, env={**os.environ, **env}, timeout=60, check=False)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") <= 2 and "cannot write to s3://no-such-bucket-x" in bad.stderr
    # S3 storage without a shared index is refused (receivers must share one)
    nodb = subprocess.run([sys.executable, "-m", "rage", "serve", "--port", "0", "--storage",
                           f"s3://{bucket}/x", "--s3-endpoint", weed.endpoint],
                          capture_output=True, text=True, env={**os.environ, **env},
                          timeout=60, check=False)
    assert nodb.returncode == 2 and "needs --database" in nodb.stderr


def _make_bundles(tmp: Path) -> list[tuple[Path, int, str]]:
    """(path, family, sha256) for UPLOADS distinct bundles of FAMILIES failure families."""
    out = []
    for n in range(UPLOADS):
        family, variant = n % FAMILIES, n
        files, run = family_files(family, variant)
        manifest = make_manifest(files, note=f"report {n}")
        manifest["run"].update(run)
        manifest["run"]["id"] = f"20260101T000000Z-{n:08x}"
        path = build_bundle(tmp / f"b{n}.tar.zst", files, manifest=manifest)
        out.append((path, family, hashlib.sha256(path.read_bytes()).hexdigest()))
    return out


@pytest.mark.timeout(900)  # ~1-2 minutes on an idle 2-core machine; far more under load
def test_three_receivers_one_killed_mid_run(weed: SeaweedFS, pg: Postgres, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    bucket = weed.make_bucket("scale-" + uuid.uuid4().hex[:8])
    db = pg.database("scale" + uuid.uuid4().hex[:8])
    args, env = serve_args(weed, bucket, db), weed.env
    receivers = [start(args, env) for _ in range(3)]
    bundles = _make_bundles(tmp_path)
    monkeypatch.setenv("RAGE_HOME", str(tmp_path / "rage-home"))  # the uploader's key secret

    from rage.config import load_settings
    from rage.upload.receiver import ReceiverUploader

    settings = load_settings("scale-test")
    acked: dict[int, dict[str, Any]] = {}
    lock = threading.Lock()
    killed = threading.Event()
    retries: Counter[int] = Counter()
    errors: list[str] = []

    def attempt(n: int, r: Receiver, key: str) -> dict[str, Any] | None:
        path = bundles[n][0]
        if n % 2 == 0:  # curl, as a maintainer's script would
            res = subprocess.run(
                ["curl", "-sS", "--max-time", "30", "-o", "-", "-w", "\n%{http_code}",
                 "-H", f"Idempotency-Key: {key}", "-F", f"file=@{path}",
                 f"{r.url}/api/v1/bundles"], capture_output=True, text=True, timeout=60,
                check=False)
            body, _, code = res.stdout.rpartition("\n")
            if res.returncode != 0 or code != "201":
                with lock:
                    errors.append(f"curl: {res.returncode} {code} {body[:200]} {res.stderr[:200]}")
                return None
            data: dict[str, Any] = json.loads(body)
            return data
        try:  # rage's own uploader (its key is derived from the bundle: see upload_key)
            result = ReceiverUploader(r.url, settings).upload(path)
        except Exception as e:
            with lock:
                errors.append(f"rage uploader: {e}")
            return None
        return {"url": result.url, "id": result.url.rsplit("/", 1)[-1]}

    def upload(n: int) -> None:
        key = secrets.token_urlsafe(32)
        for i in range(30):
            r = receivers[(n + i) % 3]
            got = attempt(n, r, key)
            if got is not None:
                with lock:
                    acked[n] = got
                    if len(acked) == UPLOADS // 3 and not killed.is_set():
                        killed.set()
                        os.kill(receivers[0].proc.pid, signal.SIGKILL)
                return
            with lock:
                retries[n] += 1
            time.sleep(0.05)
        raise AssertionError(f"upload {n} never acknowledged: {errors[-3:]}")

    t0 = time.monotonic()
    with ThreadPoolExecutor(12) as pool:
        list(pool.map(upload, range(UPLOADS)))
    elapsed = time.monotonic() - t0
    assert killed.is_set() and receivers[0].proc.wait(10) == -signal.SIGKILL
    assert len(acked) == UPLOADS
    print(f"\n{UPLOADS} uploads over 3 receivers (one killed) in {elapsed:.1f}s; "
          f"{sum(retries.values())} retried")

    # the killed receiver comes back (stateless: nothing to recover) and serves all the same
    stop(receivers[0])
    receivers[0] = start(args, env)
    ids = {n: a["id"] for n, a in acked.items()}
    assert len(set(ids.values())) == UPLOADS  # no two uploads share a bundle
    session = requests.Session()
    try:
        for r in receivers:
            for n, bundle_id in ids.items():
                raw = session.get(f"{r.url}/b/{bundle_id}.tar.zst", timeout=120)
                assert raw.status_code == 200, (r.url, bundle_id, raw.status_code)
                assert hashlib.sha256(raw.content).hexdigest() == bundles[n][2]

        # nothing stored twice, nothing half-written: exactly one blob and one meta each
        from rage.server.storage_s3 import S3Storage

        for k, v in env.items():
            monkeypatch.setenv(k, v)
        store = S3Storage(f"s3://{bucket}/reports", endpoint_url=weed.endpoint)
        metas = {o["Key"].rsplit("/", 1)[-1].removesuffix(".json") for o in store._keys("meta")}
        assert metas == set(ids.values())
        assert store.orphans() == []
        store.close()

        # exact counts per signature, seen alike from every receiver
        expected = sorted(Counter(f for _, f, _ in bundles).values())
        for r in receivers:
            sigs = session.get(f"{r.url}/api/v1/signatures", headers=AUTH,
                               params={"per_page": 100}, timeout=30).json()
            assert sigs["total"] == FAMILIES
            assert sorted(s["count"] for s in sigs["signatures"]) == expected
    finally:
        session.close()
        for r in receivers:
            stop(r)


def test_a_retried_upload_is_stored_once(weed: SeaweedFS, pg: Postgres,
                                          tmp_path: Path) -> None:
    bucket = weed.make_bucket("retry-" + uuid.uuid4().hex[:8])
    db = pg.database("retry" + uuid.uuid4().hex[:8])
    a, b = (start(serve_args(weed, bucket, db), weed.env) for _ in range(2))
    try:
        files, run = family_files(0, 1)
        manifest = make_manifest(files)
        manifest["run"].update(run)
        path = build_bundle(tmp_path / "one.tar.zst", files, manifest=manifest)
        key = secrets.token_urlsafe(32)
        answers = []
        for r in (a, b, a):
            with open(path, "rb") as f:
                resp = requests.post(f"{r.url}/api/v1/bundles", data=f, timeout=30,
                                     headers={"Content-Type": "application/zstd",
                                              "Idempotency-Key": key})
            assert resp.status_code == 201, resp.text
            answers.append(resp.json())
        assert len({x["id"] for x in answers}) == 1
        assert len({x["delete_token"] for x in answers}) == 1
        sigs = requests.get(f"{b.url}/api/v1/signatures", headers=AUTH, timeout=30).json()
        assert [s["count"] for s in sigs["signatures"]] == [1]
        with open(path, "rb") as f:
            bad = requests.post(f"{a.url}/api/v1/bundles", data=f, timeout=30,
                                headers={"Idempotency-Key": "short"})
        assert bad.status_code == 400 and "Idempotency-Key" in bad.json()["error"]
        # deleting through one receiver removes it for all
        gone = requests.delete(f"{b.url}/api/v1/bundles/{answers[0]['id']}", timeout=30,
                               headers={"Authorization": f"Bearer {answers[0]['delete_token']}"})
        assert gone.status_code == 200
        assert requests.get(f"{a.url}/b/{answers[0]['id']}.tar.zst", timeout=30).status_code == 404
    finally:
        stop(a)
        stop(b)


def test_retention_removes_objects_and_rows_together(weed: SeaweedFS, pg: Postgres,
                                                     tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlalchemy as sa

    from rage.server import retention
    from rage.server.index import Index
    from rage.server.setup import database_url
    from rage.server.storage_s3 import S3Storage

    bucket = weed.make_bucket("keep-" + uuid.uuid4().hex[:8])
    db = pg.database("keep" + uuid.uuid4().hex[:8])
    r = start(serve_args(weed, bucket, db), weed.env)
    ids: dict[str, list[str]] = {"old-app": [], "other": []}
    try:
        for n in range(6):
            app = "old-app" if n < 3 else "other"
            files, run = family_files(n % FAMILIES, n)
            manifest = make_manifest(files, app=app)
            manifest["run"].update(run)
            path = build_bundle(tmp_path / f"k{n}.tar.zst", files, manifest=manifest)
            with open(path, "rb") as f:
                resp = requests.post(f"{r.url}/api/v1/bundles", data=f, timeout=30,
                                     headers={"Content-Type": "application/zstd"})
            assert resp.status_code == 201, resp.text
            ids[app].append(resp.json()["id"])
    finally:
        stop(r)
    for k, v in weed.env.items():
        monkeypatch.setenv(k, v)
    store = S3Storage(f"s3://{bucket}/reports", endpoint_url=weed.endpoint)
    index = Index(database_url(db))
    # two of old-app's bundles were received 40 days ago; one of other's 400 days ago
    aged = {ids["old-app"][0]: 40, ids["old-app"][1]: 40, ids["other"][0]: 400}
    with index.engine.begin() as conn:
        for bundle_id, days in aged.items():
            conn.execute(sa.text("UPDATE bundles SET received_at = received_at - "
                                 f"interval '{days} days' WHERE id = :id"), {"id": bundle_id})
    # a blob a crashed receiver left without its metadata
    store._client.put_object(Bucket=bucket, Key=store._bundle_key("x" * 22), Body=b"x")
    policy = retention.parse_policy(None, ("old-app=30",))
    assert retention.sweep(store, index, policy) == 2  # old-app's two; the orphan is too new
    assert store.orphans() == ["x" * 22]
    assert retention.sweep(store, index, retention.parse_policy(365, ())) == 1  # other's one
    gone = {ids["old-app"][0], ids["old-app"][1], ids["other"][0]}
    for bundle_id in [*ids["old-app"], *ids["other"]]:
        assert index.has(bundle_id) == (bundle_id not in gone)
        try:
            store.get_meta(bundle_id)
            present = True
        except Exception:
            present = False
        assert present == (bundle_id not in gone)
    assert set(store.orphans()) == {"x" * 22}  # blobs of expired bundles went with them
    assert store.delete_orphans(0) == 1 and store.orphans() == []
    with pytest.raises(Exception, match="APP=DAYS"):
        retention.parse_policy(None, ("nodays",))
    index.close()
    store.close()
