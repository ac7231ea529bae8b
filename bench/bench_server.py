"""Upload throughput of `rage serve` next to a plain stdlib server, measured in the same run.

    python3 bench/bench_server.py [--uploads-per-client 10] [--clients 20]

Both servers run as separate processes on 127.0.0.1 and receive the same POSTs from 20
client threads (requests). The baseline (http.server.ThreadingHTTPServer) only drains each
body into a file; `rage serve` also parses, validates (inflate + sha256 of every member) and
stores atomically. The ratio column is rage / baseline.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BASELINE = r"""
import http.server, os, sys, tempfile
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        with tempfile.NamedTemporaryFile(dir=sys.argv[1], delete=True) as f:
            while n:
                chunk = self.rfile.read(min(n, 262144))
                if not chunk:
                    break
                f.write(chunk)
                n -= len(chunk)
        body = b"http://127.0.0.1/b/x\n"
        self.send_response(201)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(f"listening on http://127.0.0.1:{s.server_address[1]}/", flush=True)
s.serve_forever()
"""


def make_bundle(path: Path, payload: int) -> Path:
    import zstandard

    files = {"run/output.log": os.urandom(payload // 2).hex().encode()[:payload],
             "summary.md": b"# bench\n"}
    manifest = {"schema": 1, "app": "bench", "run": {"argv": ["bench"], "status": "failed"},
                "files": [{"name": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                          for n, d in files.items()]}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in [("manifest.json", json.dumps(manifest).encode()), *files.items()]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    path.write_bytes(zstandard.ZstdCompressor().compress(buf.getvalue()))
    return path


def start(argv: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, line.strip().split()[-1].rstrip("/")


def hammer(url: str, data: bytes, clients: int, per_client: int) -> float:
    import requests

    def one_client(_: int) -> None:
        with requests.Session() as s:
            for _ in range(per_client):
                r = s.post(url, data=data, headers={"Content-Type": "application/zstd"},
                           timeout=60)
                if r.status_code != 201:
                    raise SystemExit(f"{url}: {r.status_code} {r.text}")

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one_client, range(clients)))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--uploads-per-client", type=int, default=10)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        rage, rage_url = start([sys.executable, "-m", "rage", "serve", "--port", "0",
                                "--threads", "8", "--storage", str(t / "store")])
        base, base_url = start([sys.executable, "-c", BASELINE, tmp])
        try:
            for label, payload in (("10 KB", 10_000), ("1 MB", 1_000_000)):
                data = make_bundle(t / f"b{payload}.tar.zst", payload).read_bytes()
                n = args.clients * args.uploads_per_client
                hammer(base_url, data, args.clients, 1)  # warm up both
                hammer(rage_url + "/api/v1/bundles", data, args.clients, 1)
                tb = hammer(base_url, data, args.clients, args.uploads_per_client)
                tr = hammer(rage_url + "/api/v1/bundles", data, args.clients,
                            args.uploads_per_client)
                mb = len(data) * n / 1e6
                rows.append((label, len(data), n, n / tr, mb / tr, n / tb, mb / tb, tb / tr))
        finally:
            for p in (rage, base):
                p.terminate()
                p.wait()
                assert p.stdout is not None
                p.stdout.close()
    print(f"{args.clients} concurrent clients, {args.uploads_per_client} uploads each")
    print(f"{'bundle':<8} {'bytes':>9} {'uploads':>8} {'rage/s':>8} {'rage MB/s':>10} "
          f"{'base/s':>8} {'base MB/s':>10} {'ratio':>6}")
    for label, size, n, rs, rmb, bs, bmb, ratio in rows:
        print(f"{label:<8} {size:>9} {n:>8} {rs:>8.1f} {rmb:>10.1f} {bs:>8.1f} {bmb:>10.1f} "
              f"{ratio:>6.2f}")


if __name__ == "__main__":
    main()
