"""What the triage index costs an upload: the receiver with it next to the receiver without it.

    python3 bench/bench_triage.py [--threads 8] [--uploads 200] [--rounds 6]

Both are the same WSGI app (`ReceiverApp`) in this process, called from ``--threads``
threads with the same bundles (those of `bench_server.py`: 10 KB and 1 MB), each with its
own storage directory; one also has the triage desk (signature from the validation pass,
SQLite index with group commit). No HTTP: this isolates the app's own work, where the
index's cost is largest relative to the rest. Rounds alternate which goes first; the table
shows medians and the spread of the per-round ratio (with / without).
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import make_bundle

from rage.server.app import ReceiverApp, ServerConfig
from rage.server.setup import open_triage
from rage.server.storage import LocalStorage


def upload(app: ReceiverApp, data: bytes) -> None:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/api/v1/bundles",
        "CONTENT_TYPE": "application/zstd", "CONTENT_LENGTH": str(len(data)),
        "wsgi.input": io.BytesIO(data), "HTTP_HOST": "bench", "REMOTE_ADDR": "127.0.0.1"}
    status: list[str] = []
    app(environ, lambda s, _h: status.append(s))
    if not status[0].startswith("201"):
        raise SystemExit(f"upload refused: {status[0]}")


def hammer(app: ReceiverApp, data: bytes, n: int, threads: int) -> float:
    with ThreadPoolExecutor(threads) as pool:
        t0 = time.perf_counter()
        list(pool.map(lambda _: upload(app, data), range(n)))
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--uploads", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    config = ServerConfig()
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        plain_store, triage_store = LocalStorage(t / "plain"), LocalStorage(t / "triage")
        apps = {"without": ReceiverApp(plain_store, config),
                "with": ReceiverApp(triage_store, config, open_triage(
                    f"sqlite:///{t / 'index.sqlite3'}", triage_store, config))}
        print(f"{args.threads} threads, {args.uploads} uploads per round, median of "
              f"{args.rounds} interleaved rounds")
        print(f"{'bundle':<8} {'with/s':>8} {'without/s':>10} {'ratio':>6} {'range':>11}")
        for label, payload in (("10 KB", 10_000), ("1 MB", 1_000_000)):
            data = make_bundle(t / "b.tar.zst", payload).read_bytes()
            n = args.uploads if payload < 100_000 else max(20, args.uploads // 4)
            rates: dict[str, list[float]] = {"with": [], "without": []}
            for app in apps.values():  # warm up: imports, templates, the index file
                upload(app, data)
            for r in range(args.rounds):
                for name in (("with", "without") if r % 2 else ("without", "with")):
                    rates[name].append(n / hammer(apps[name], data, n, args.threads))
            ratios = [a / b for a, b in zip(rates["with"], rates["without"], strict=True)]
            print(f"{label:<8} {statistics.median(rates['with']):>8.0f} "
                  f"{statistics.median(rates['without']):>10.0f} "
                  f"{statistics.median(ratios):>6.2f} {min(ratios):>5.2f}-{max(ratios):<5.2f}")


if __name__ == "__main__":
    main()
