"""What `rage serve` writes to its log under load: a line per stored bundle, and waitress's
queue-depth warning once a while, not once a request."""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from tests.test_server import build_bundle

pytest.importorskip("waitress")


def test_a_saturated_receiver_says_so_once_a_while(tmp_path: Path) -> None:
    err = tmp_path / "stderr.log"
    with open(err, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rage", "serve", "--port", "0", "--threads", "2",
             "--storage", str(tmp_path / "store")],
            stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        assert proc.stdout is not None
        m = re.search(r"(http://\S+?)/?$", proc.stdout.readline().strip())
        assert m, "rage serve printed no URL"
        url = m.group(1) + "/api/v1/bundles"
        data = build_bundle(tmp_path / "b.tar.zst").read_bytes()

        def client(_: int) -> list[int]:
            with requests.Session() as s:
                return [s.post(url, data=data, timeout=60,
                               headers={"Content-Type": "application/zstd"}).status_code
                        for _ in range(8)]

        with ThreadPoolExecutor(12) as pool:  # 12 clients, 2 worker threads: requests wait
            statuses = [s for c in pool.map(client, range(12)) for s in c]
    finally:
        proc.terminate()
        proc.wait(15)
        assert proc.stdout is not None
        proc.stdout.close()
    assert statuses == [201] * 96
    lines = err.read_text().splitlines()
    assert sum("stored bundle" in line for line in lines) == 96
    queue = [line for line in lines if "Task queue depth" in line]
    # one at the start of each 10-second interval the run lasted, and the next one says
    # how many were left out (a loaded machine may take a few intervals)
    assert 1 <= len(queue) <= 4, queue
    assert all("such warnings since the last" in line for line in queue[1:])
