"""The index's group commit (rage.server.batch): batches, and the short wait for uploads that
were announced and have not arrived yet. Real threads, a real writer function."""

from __future__ import annotations

import io
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from rage.server.batch import GroupCommit
from rage.server.index import BundleFacts, Query, Recorded
from rage.server.signature import Signature
from tests.test_index import facts, sig


class Writer:
    """Records every batch it is given (as bundle ids) and when."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.lock = threading.Lock()

    def __call__(self, items: list[tuple[Signature, BundleFacts]]) -> list[Recorded | None]:
        with self.lock:
            self.batches.append([f.id for _, f in items])
        return [Recorded(1, s.hash, None) for s, _ in items]


def submit(pool: ThreadPoolExecutor, group: GroupCommit, n: int,
           **kwargs: object) -> Future[Recorded | None]:
    return pool.submit(group.submit, sig("sync"), facts(n), **kwargs)  # type: ignore[arg-type]


def test_a_commit_waits_for_an_announced_upload_and_takes_it_along() -> None:
    writer = Writer()
    group = GroupCommit(writer, delay=30)
    coming = group.expect()
    with ThreadPoolExecutor(2) as pool:
        first = submit(pool, group, 1)
        time.sleep(0.3)
        assert not first.done() and writer.batches == []  # waiting for the announced one
        second = submit(pool, group, 2, expected=coming)
        assert first.result(10) is not None and second.result(10) is not None
    assert writer.batches == [[facts(1).id, facts(2).id]]


def test_nothing_announced_nothing_waits() -> None:
    writer = Writer()
    group = GroupCommit(writer, delay=30)
    with ThreadPoolExecutor(1) as pool:
        # a hang guard far below the 30 s delay: neither commit waits for it
        assert submit(pool, group, 1).result(10) is not None
        announced = group.expect()  # announced and submitted: it waits for nothing else
        assert submit(pool, group, 2, expected=announced).result(10) is not None
    assert writer.batches == [[facts(1).id], [facts(2).id]]


def test_a_withdrawn_announcement_ends_the_wait() -> None:
    writer = Writer()
    group = GroupCommit(writer, delay=30)
    group.submit(sig("sync"), facts(0))  # the writer is running
    failing = group.expect()  # an upload that will fail validation
    with ThreadPoolExecutor(1) as pool:
        first = submit(pool, group, 1)
        time.sleep(0.2)
        assert not first.done()
        failing.settle()
        failing.settle()  # idempotent
        assert first.result(10) is not None  # a hang guard: not the 30 s delay
    assert writer.batches[-1] == [facts(1).id]


def test_the_wait_is_bounded() -> None:
    writer = Writer()
    group = GroupCommit(writer, delay=0.3)
    group.expect()  # announced and never settled (it would be a bug): commits still happen
    t0 = time.monotonic()
    with ThreadPoolExecutor(1) as pool:
        assert submit(pool, group, 1).result(10) is not None  # a hang guard
    # the contract, not a speed: it did wait its whole delay for the announced upload
    assert time.monotonic() - t0 >= 0.3
    assert writer.batches == [[facts(1).id]]


def test_every_upload_settles_its_announcement(tmp_path: Path) -> None:
    """Through the receiver app: a stored upload settles it when it is recorded, a refused
    one when it is refused; neither leaves the writer waiting for it."""
    from rage.server.app import ReceiverApp, ServerConfig
    from rage.server.setup import open_triage
    from rage.server.storage import LocalStorage
    from tests.test_server import build_bundle

    store = LocalStorage(tmp_path / "store")
    config = ServerConfig(max_bundle_size=64 * 1024)
    triage = open_triage(f"sqlite:///{tmp_path / 'index.sqlite3'}", store, config)
    app = ReceiverApp(store, config, triage)
    good = build_bundle(tmp_path / "good.tar.zst").read_bytes()
    bodies = [good, b"not a bundle", good[:-40], b"\x28\xb5\x2f\xfd" * 30_000, good, b""]

    def post(body: bytes) -> str:
        status: list[str] = []
        app({"REQUEST_METHOD": "POST", "PATH_INFO": "/api/v1/bundles",
             "CONTENT_TYPE": "application/zstd", "CONTENT_LENGTH": str(len(body)),
             "wsgi.input": io.BytesIO(body), "HTTP_HOST": "test", "REMOTE_ADDR": "127.0.0.1"},
            lambda s, _h: status.append(s))
        return status[0].split()[0]

    with ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(post, bodies))
    assert codes == ["201", "400", "400", "413", "201", "400"]
    assert triage.index._group._coming == 0
    rows, total = triage.index.search(Query())
    assert total == 1 and rows[0]["count"] == 2
    triage.index.close()
