"""Upload throughput: rage's multipart upload vs `curl -F file=@...`, same local server.

    python3 bench/bench_upload.py [--mb 100] [--rounds 5]

The receiver runs in its own process (so it does not share a GIL with rage) and drains
each body in 1 MiB reads. Runs are interleaved (curl, rage, curl, rage, ...) and the
median of each is reported; the goal is rage within 1.2x of curl.

Then the failure path: how long `rage send` (the console script, a whole process) takes to
report a refused connection, next to `curl -F` to the same closed port. Before rage failed
fast this took about a minute of silent retries; the goal is well under a second.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SERVER = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_POST(self):
        total = left = int(self.headers.get("Content-Length") or 0)
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        while left:
            n = self.rfile.readinto(view[: min(left, len(buf))])
            if not n:
                break
            left -= n
        # the link names the bytes received, so the benchmark can check nothing was lost
        body = f"http://127.0.0.1:{self.server.server_address[1]}/b/{total - left}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    curl = shutil.which("curl")
    if not curl:
        sys.exit("curl not found: it is the peer this benchmark compares against")

    from rage.config import Settings
    from rage.upload import upload_bundle

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RAGE_HOME"] = tmp  # the sent-sidecar lands here, not in the user's state
        path = Path(tmp) / "bench.tar.zst"
        with open(path, "wb") as f:
            for _ in range(args.mb):
                # random-ish: incompressible like a real zstd bundle, cheap to make
                f.write(os.urandom(1 << 20))
        size = path.stat().st_size
        server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE,
                                  text=True)
        try:
            assert server.stdout is not None
            url = f"http://127.0.0.1:{server.stdout.readline().strip()}/"
            settings = Settings(upload_timeout=120)
            upload_bundle(path, target=url, settings=settings)  # warm-up: imports, connection
            times: dict[str, list[float]] = {"curl -F": [], "rage": []}
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                out = subprocess.run([curl, "-sS", "--noproxy", "*", "-F", f"file=@{path}", url],
                                     check=True, capture_output=True, text=True).stdout
                times["curl -F"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                link = upload_bundle(path, target=url, settings=settings).url
                times["rage"].append(time.perf_counter() - t0)
                for got in (out, link):
                    received = int(got.strip().rsplit("/", 1)[1])
                    assert received > size, f"server received only {received} of {size} bytes"
        finally:
            server.terminate()
            server.wait(10)
            if server.stdout:
                server.stdout.close()

    base = statistics.median(times["curl -F"])
    print(f"upload of {size / 1e6:.0f} MB to a local server, median of {args.rounds}")
    print(f"{'tool':<10} {'median s':>9} {'MB/s':>8} {'vs curl':>8}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<10} {med:>9.3f} {size / 1e6 / med:>8.0f} {med / base:>7.2f}x")
    refused(curl, args.rounds)


def refused(curl: str, rounds: int) -> None:
    """Time to a clear failure when nothing listens: rage send vs curl, interleaved."""
    import socket

    rage = shutil.which("rage") or sys.exit("the rage console script is not on PATH")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/"
    with tempfile.TemporaryDirectory() as tmp:
        bundle = Path(tmp) / "b.tar.zst"
        bundle.write_bytes(os.urandom(1024))
        env = {**os.environ, "RAGE_HOME": tmp, "RAGE_UPLOAD_TIMEOUT": "60"}
        times: dict[str, list[float]] = {"curl -F": [], "rage send": []}
        for _ in range(rounds):
            for name, argv, rc in (
                ("curl -F", [curl, "-sS", "--noproxy", "*", "-F", f"file=@{bundle}", url], 7),
                ("rage send", [rage, "send", str(bundle), "--to", url, "--yes",
                               "--any-file"], 4),
            ):
                t0 = time.perf_counter()
                p = subprocess.run(argv, capture_output=True, env=env, check=False)
                times[name].append(time.perf_counter() - t0)
                assert p.returncode == rc, (name, p.returncode, p.stderr)
    base = statistics.median(times["curl -F"])
    print(f"connection refused (upload_timeout 60 s), whole process, median of {rounds}")
    print(f"{'tool':<10} {'median s':>9} {'vs curl':>8}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<10} {med:>9.3f} {med / base:>7.1f}x")


if __name__ == "__main__":
    main()
