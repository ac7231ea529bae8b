"""Upload throughput of `rage serve` next to a plain stdlib server, measured in the same run.

    python3 bench/bench_server.py [--clients 20] [--uploads-per-client 10] [--rounds 5]
                                  [--model waitress|prefork|granian] [--workers N]
                                  [--switch-interval S] [--instructions]

Both servers run as separate processes on 127.0.0.1 and receive the same POSTs from 20
client threads (requests, one keep-alive session each). The baseline
(http.server.ThreadingHTTPServer) only stores each body, as durably as the receiver must
before its 201: the body written to a new file and fsynced, then its directory synced (one
directory sync shared by the uploads that wait at once, as the receiver's ``_DirSync``
shares them); `rage serve` also validates it (inflate, safe names, manifest, sha256 of every
member), stores it with its metadata and counts it in the triage index. Beside them, the
floor of the work the receiver must do that the baseline does not: inflating the bundle and
hashing what it stores (the upload's sha256 and each member's), timed alone in this process
on one thread. Each round runs both servers back to back (alternating which goes first), so a
busy machine slows both; the table shows medians over the rounds and the spread of the
per-round ratio (rage / baseline).

``--model`` chooses how the rage side serves the same ``ReceiverApp`` (``waitress``, the
default, is what `rage serve` runs): ``prefork`` forks ``--workers`` processes (default: the
cores) that each run waitress with ``--threads`` threads on one inherited listening socket;
``granian`` runs it on granian's Rust HTTP server (``pip install granian``), ``--workers``
processes of ``--threads`` WSGI threads. Every model builds its app in each worker, after
the fork (an index, its writer thread and its SQLite connections per process). The CPU
columns count a server's whole process tree.

``--instructions`` counts instead, under callgrind, the user-space instructions per upload
of the baseline, of the rage side and of the app alone (the difference of a run of
``--uploads-per-client`` uploads per client and one of one): the figures a loaded machine
does not move. The kernel's share (fsync, futex hand-offs) is not in them, and hashing is
overstated: the emulated CPU has no SHA extensions, so sha256 runs OpenSSL's generic code
(28 instructions a byte under callgrind; this machine hashes 1.8 GB/s natively). For 1 MB
bundles, where hashing dominates, only the http column (rage less app) means much there.

The baseline is made a competent peer; as the stdlib ships it, it measures its own
configuration rather than the cost of storing a body:

- ``request_queue_size`` is 5 by default: 20 clients connecting at once overflow the listen
  backlog, the kernel drops SYNs (retried after 1 s) or resets connections;
- HTTP/1.0 by default: a new TCP connection per upload (waitress keeps them alive);
- Nagle's algorithm is left on, and the response goes out in two writes (headers, then
  body): the body waits for the client's delayed ACK, ~40 ms per request.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BASELINE = r"""
import http.server, os, sys, threading
STORE = sys.argv[1]
class DirSync:
    # a sync that started after the caller's file was created covers it; callers arriving
    # while one runs share the next (the receiver's storage._DirSync does the same)
    def __init__(self, path):
        self.path, self.cond = path, threading.Condition()
        self.started = self.done = 0
        self.running = False
    def sync(self):
        with self.cond:
            need = self.started + 1
            while self.done < need:
                if self.running:
                    self.cond.wait()
                    continue
                self.running = True
                self.started += 1
                mine = self.started
                self.cond.release()
                try:
                    fd = os.open(self.path, os.O_RDONLY)
                    os.fsync(fd)
                    os.close(fd)
                finally:
                    self.cond.acquire()
                    self.running = False
                    self.done = mine
                    self.cond.notify_all()
SYNC = DirSync(STORE)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as waitress
    disable_nagle_algorithm = True  # headers and body are two writes
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        fd = os.open(os.path.join(STORE, os.urandom(16).hex()),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb", buffering=0) as f:
            while n:
                chunk = self.rfile.read(min(n, 262144))
                if not chunk:
                    break
                f.write(chunk)
                n -= len(chunk)
            os.fsync(f.fileno())  # a 201 means the body is on stable storage
        SYNC.sync()  # and so is its name
        body = b"http://127.0.0.1/b/x\n"
        self.send_response(201)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
class S(http.server.ThreadingHTTPServer):
    request_queue_size = 1024  # waitress's backlog; the default 5 drops connections
s = S(("127.0.0.1", 0), H)
print(f"listening on http://127.0.0.1:{s.server_address[1]}/", flush=True)
s.serve_forever()
"""

# The rage side under another server model: the app built as `rage serve` builds it, after
# the fork, in every worker. argv: model, storage, threads, workers, scratch directory.
RAGE_MODEL = r"""
import os, socket, sys
model, STORE, THREADS, WORKERS, SCRATCH = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5]
def app():
    from rage.cli.serve_cmd import _open_storage
    from rage.server.app import ReceiverApp, ServerConfig
    from rage.server.setup import open_triage
    store, _, db = _open_storage(STORE, None)
    config = ServerConfig()
    return ReceiverApp(store, config, open_triage(db, store, config))
def migrate():
    # in a child of its own: the parent forks workers later and must hold no threads or
    # database connections then
    pid = os.fork()
    if pid == 0:
        app()
        os._exit(0)
    os.waitpid(pid, 0)
if model == "prefork":
    from waitress.server import create_server
    from rage.server.app import MULTIPART_SLACK, ServerConfig
    from rage.server.framing import harden
    sock = socket.create_server(("127.0.0.1", 0), backlog=1024)
    migrate()  # once, before the workers race to
    kids = []
    for _ in range(WORKERS):
        pid = os.fork()
        if pid == 0:
            server = create_server(app(), sockets=[sock], threads=THREADS, ident="rage",
                                   max_request_body_size=2 * ServerConfig().max_bundle_size
                                   + MULTIPART_SLACK, recv_bytes=64 * 1024,
                                   clear_untrusted_proxy_headers=True)
            harden(server)
            server.run()
            os._exit(0)
        kids.append(pid)
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/", flush=True)
    import signal
    def stop(*_):
        for k in kids:
            os.kill(k, signal.SIGTERM)
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    for _ in kids:
        os.wait()
elif model == "granian":
    from granian import Granian
    from granian.constants import Interfaces
    from pathlib import Path
    sys.path.insert(0, SCRATCH)
    with open(os.path.join(SCRATCH, "ragebench_app.py"), "w") as f:
        f.write(f"STORE = {STORE!r}\n" + "def app():\n"
                "    from rage.cli.serve_cmd import _open_storage\n"
                "    from rage.server.app import ReceiverApp, ServerConfig\n"
                "    from rage.server.setup import open_triage\n"
                "    store, _, db = _open_storage(STORE, None)\n"
                "    config = ServerConfig()\n"
                "    return ReceiverApp(store, config, open_triage(db, store, config))\n")
    migrate()  # once, before the workers race to
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    print(f"listening on http://127.0.0.1:{port}/", flush=True)
    Granian("ragebench_app:app", factory=True, interface=Interfaces.WSGI, address="127.0.0.1",
            port=port, workers=WORKERS, blocking_threads=THREADS, working_dir=Path(SCRATCH),
            log_enabled=False).serve()
"""

# The same app with no HTTP server at all: ``THREADS`` threads call it with the bundle, as
# bench_triage.py does. What it costs is what no server model can remove. argv: storage,
# bundle, threads, uploads.
APP_ALONE = r"""
import io, os, sys
from concurrent.futures import ThreadPoolExecutor
from rage.cli.serve_cmd import _open_storage
from rage.server.app import ReceiverApp, ServerConfig
from rage.server.setup import open_triage
store, _, db = _open_storage(sys.argv[1], None)
config = ServerConfig()
app = ReceiverApp(store, config, open_triage(db, store, config))
data = open(sys.argv[2], "rb").read()
def upload(_):
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/api/v1/bundles",
               "CONTENT_TYPE": "application/zstd", "CONTENT_LENGTH": str(len(data)),
               "wsgi.input": io.BytesIO(data), "wsgi.url_scheme": "http",
               "HTTP_HOST": "127.0.0.1", "REMOTE_ADDR": "127.0.0.1"}
    status = []
    b"".join(app(environ, lambda s, _h: status.append(s)))
    assert status[0].startswith("201"), status
threads, n = int(sys.argv[3]), int(sys.argv[4])
with ThreadPoolExecutor(threads) as pool:
    list(pool.map(upload, range(threads * 2)))  # warm: imports, templates, the index
    t0 = sum(os.times()[:2])
    list(pool.map(upload, range(n)))
print((sum(os.times()[:2]) - t0) / n)
"""


def app_alone(tmp: Path, bundle: Path, threads: int, n: int) -> float:
    """CPU seconds per upload of the app called directly from ``threads`` threads."""
    out = subprocess.run([sys.executable, "-c", APP_ALONE, str(tmp), str(bundle),
                          str(threads), str(n)], capture_output=True, text=True, check=True)
    return float(out.stdout)


def write_bundle(path: Path, files: dict[str, bytes], **manifest: object) -> bytes:
    """A valid bundle of ``files`` (manifest first, every member's sha256) written to
    ``path``; returns its bytes. ``manifest`` adds or overrides top-level manifest keys."""
    import zstandard

    meta = {"schema": 1, "app": "bench", "run": {"argv": ["bench"], "status": "failed"},
            **manifest,
            "files": [{"name": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                      for n, d in files.items()]}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in [("manifest.json", json.dumps(meta).encode()), *files.items()]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    bundle: bytes = zstandard.ZstdCompressor().compress(buf.getvalue())
    path.write_bytes(bundle)
    return bundle


def make_bundle(path: Path, payload: int) -> Path:
    write_bundle(path, {"run/output.log": os.urandom(payload // 2).hex().encode()[:payload],
                        "summary.md": b"# bench\n"})
    return path


def floor_per_upload(data: bytes, repeat: int = 20) -> float:
    """CPU seconds this thread takes to inflate ``data`` and hash what the receiver hashes
    (the upload, then each member as tar hands it over): the part of an upload the
    receiver cannot skip and the baseline does not do."""
    import zstandard

    from rage.bundle.stream import MAX_WINDOW

    best = float("inf")
    for _ in range(repeat):
        t0 = time.thread_time()
        hashlib.sha256(data).hexdigest()
        with zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW).stream_reader(
                io.BytesIO(data), read_across_frames=True) as z, \
                tarfile.open(fileobj=z, mode="r|") as tf:
            for info in tf:
                f = tf.extractfile(info)
                if f is not None:
                    hashlib.sha256(f.read()).hexdigest()
        best = min(best, time.thread_time() - t0)
    return best


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, its live descendants and the children it waited for."""
    import psutil

    total = 0.0
    proc = psutil.Process(pid)
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system + (t.children_user + t.children_system if p is proc else 0)
    return total


def start(argv: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, line.strip().split()[-1].rstrip("/")


def hammer(urls: str | list[str], data: bytes, clients: int, per_client: int) -> float:
    """Seconds for ``clients`` threads to POST ``data`` ``per_client`` times each, client i
    to ``urls[i % len(urls)]`` (several receivers: as a load balancer spreads them)."""
    import requests

    targets = [urls] if isinstance(urls, str) else urls

    def one_client(c: int) -> None:
        url = targets[c % len(targets)]
        with requests.Session() as s:
            for _ in range(per_client):
                r = s.post(url, data=data, headers={"Content-Type": "application/zstd"},
                           timeout=120)
                if r.status_code != 201:
                    raise SystemExit(f"{url}: {r.status_code} {r.text}")

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one_client, range(clients)))
    return time.perf_counter() - t0


def rage_argv(args: argparse.Namespace, store: Path, scratch: Path) -> list[str]:
    """The command line of the rage side under ``args.model``."""
    switch = ("" if args.switch_interval is None
              else f"import sys; sys.setswitchinterval({args.switch_interval!r})\n")
    if args.model == "waitress":
        return [sys.executable, "-c", switch + "from rage.__main__ import main; main()",
                "serve", "--port", "0", "--threads", str(args.threads), "--storage", str(store)]
    return [sys.executable, "-c", switch + RAGE_MODEL, args.model, str(store),
            str(args.threads), str(args.workers), str(scratch)]


def wait_ready(url: str, deadline: float = 300) -> None:
    """Until ``url`` answers at all (a server under callgrind starts slowly)."""
    import requests

    t0 = time.monotonic()
    while True:
        try:
            requests.get(url, timeout=30)
            return
        except requests.RequestException:
            if time.monotonic() - t0 > deadline:
                raise
            time.sleep(0.5)


def counted(args: argparse.Namespace, side: str, bundle: Path, uploads: int) -> int:
    """User-space instructions (callgrind) of ``side``'s whole process tree, from its start
    to its exit, with ``uploads`` uploads of ``bundle`` after a warm-up of one per client."""
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        grind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={t / 'cg.%p'}",
                 "--trace-children=yes"]
        if side == "app":
            subprocess.run([*grind, sys.executable, "-c", APP_ALONE, str(t / "store"),
                            str(bundle), str(args.threads), str(uploads)],
                           capture_output=True, check=True)
        else:
            if side == "base":
                (t / "base").mkdir()
                argv = [sys.executable, "-c", BASELINE, str(t / "base")]
            else:
                argv = rage_argv(args, t / "store", t)
            proc, url = start([*grind, *argv])
            wait_ready(url + "/")
            if side == "rage":
                url += "/api/v1/bundles"
            data = bundle.read_bytes()
            hammer(url, data, args.clients, 1)
            hammer(url, data, args.clients, uploads // args.clients)
            proc.terminate()
            proc.wait(timeout=600)
            assert proc.stdout is not None
            proc.stdout.close()
        total = 0
        for out in t.glob("cg.*"):
            for line in out.read_text(errors="replace").splitlines():
                if line.startswith(("summary:", "totals:")):
                    total += int(line.split()[1])
                    break
        return total


def instructions(args: argparse.Namespace) -> None:
    """Per upload, the user-space instructions of each side: deterministic where the
    wall-clock and CPU figures are not, blind to the kernel's share (fsync, futex)."""
    few = args.clients
    many = args.clients * args.uploads_per_client
    print(f"user-space instructions per upload (callgrind; {many} uploads less {few}, "
          f"{args.clients} clients); rage side: {args.model}, {args.threads} threads"
          + ("" if args.model == "waitress" else f" x {args.workers} processes"))
    print(f"{'bundle':<8} {'base M':>8} {'rage M':>8} {'app M':>8} {'http M':>8} "
          f"{'rage/base':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for payload in map(int, args.sizes.split(",")):
            label = (f"{payload // 1000} KB" if payload < 1_000_000
                     else f"{payload // 1_000_000} MB")
            bundle = make_bundle(Path(tmp) / f"b{payload}.tar.zst", payload)
            per = {side: (counted(args, side, bundle, many) - counted(args, side, bundle, few))
                   / (many - few) / 1e6 for side in ("base", "rage", "app")}
            print(f"{label:<8} {per['base']:>8.2f} {per['rage']:>8.2f} {per['app']:>8.2f} "
                  f"{per['rage'] - per['app']:>8.2f} {per['rage'] / per['base']:>9.1f}x",
                  flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--uploads-per-client", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=8, help="rage serve's worker threads")
    ap.add_argument("--sizes", default="10000,1000000", help="payload bytes, comma-separated")
    ap.add_argument("--model", choices=("waitress", "prefork", "granian"), default="waitress",
                    help="how the rage side serves the app (waitress: what `rage serve` runs)")
    ap.add_argument("--switch-interval", type=float, metavar="SECONDS",
                    help="the rage side's sys.setswitchinterval (Python's default: 0.005)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="processes of the prefork and granian models")
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions per upload under callgrind instead (slow)")
    args = ap.parse_args()
    if args.instructions:
        instructions(args)
        return
    n = args.clients * args.uploads_per_client
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "base").mkdir()
        rage, rage_url = start(rage_argv(args, t / "store", t))
        if args.model != "waitress":
            time.sleep(2)  # workers bound and serving
        base, base_url = start([sys.executable, "-c", BASELINE, str(t / "base")])
        urls = {"rage": rage_url + "/api/v1/bundles", "base": base_url}
        pids = {"rage": rage.pid, "base": base.pid}
        try:
            for payload in map(int, args.sizes.split(",")):
                label = (f"{payload // 1000} KB" if payload < 1_000_000
                         else f"{payload // 1_000_000} MB")
                bundle = make_bundle(t / f"b{payload}.tar.zst", payload)
                data = bundle.read_bytes()
                for url in urls.values():  # warm up both: connections, imports, caches
                    hammer(url, data, args.clients, 1)
                rates: dict[str, list[float]] = {"rage": [], "base": []}
                cpu: dict[str, list[float]] = {"rage": [], "base": []}
                mine: list[float] = []  # the clients' CPU (this process), both servers
                for i in range(args.rounds):
                    order = ("base", "rage") if i % 2 == 0 else ("rage", "base")
                    for who in order:
                        pid = pids[who]
                        c0, m0 = cpu_seconds(pid), sum(os.times()[:2])
                        rates[who].append(n / hammer(urls[who], data, args.clients,
                                                     args.uploads_per_client))
                        cpu[who].append((cpu_seconds(pid) - c0) / n)
                        mine.append((sum(os.times()[:2]) - m0) / n)
                ratios = [r / b for r, b in zip(rates["rage"], rates["base"], strict=True)]
                rs, bs = statistics.median(rates["rage"]), statistics.median(rates["base"])
                mb = len(data) / 1e6
                rc, bc = statistics.median(cpu["rage"]), statistics.median(cpu["base"])
                rows.append((label, len(data), rs, rs * mb, bs, bs * mb,
                             statistics.median(ratios), min(ratios), max(ratios),
                             rc, bc, statistics.median(mine), floor_per_upload(data),
                             statistics.median(app_alone(t / f"alone{payload}-{i}", bundle,
                                                         args.threads, n)
                                               for i in range(3))))
        finally:
            for p in (rage, base):
                p.terminate()
                p.wait()
                assert p.stdout is not None
                p.stdout.close()
    workers = "" if args.model == "waitress" else f" x {args.workers} processes"
    switch = "" if args.switch_interval is None else f", switch interval {args.switch_interval} s"
    print(f"rage side: {args.model}, {args.threads} threads{workers}{switch}")
    print(f"{args.clients} concurrent clients, {args.uploads_per_client} uploads each, "
          f"median of {args.rounds} interleaved rounds; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} (at the end)")
    print(f"{'bundle':<8} {'bytes':>9} {'rage/s':>8} {'rage MB/s':>10} {'base/s':>8} "
          f"{'base MB/s':>10} {'ratio':>6} {'ratio range':>12}")
    for label, size, rs, rmb, bs, bmb, ratio, lo, hi, *_ in rows:
        print(f"{label:<8} {size:>9} {rs:>8.1f} {rmb:>10.1f} {bs:>8.1f} {bmb:>10.1f} "
              f"{ratio:>6.2f} {lo:>5.2f}-{hi:<5.2f}")
    # with the CPU this run gets saturated, uploads/s follow (server + client) CPU per
    # upload: the ratio the CPU times predict, steadier than the wall-clock one
    print("\nCPU per upload (user + system) of each server process and of the clients (this "
          "process), the ratio they predict when the CPU is what runs out, and the floor: "
          "inflating and hashing alone, one thread")
    print(f"{'bundle':<8} {'rage ms':>8} {'base ms':>8} {'client ms':>10} {'predicted':>10} "
          f"{'floor ms':>9} {'floor/s per core':>17} {'rage - floor':>13}")
    for label, _size, *_, rc, bc, cc, fl, _alone in rows:
        print(f"{label:<8} {rc * 1e3:>8.2f} {bc * 1e3:>8.2f} {cc * 1e3:>10.2f} "
              f"{(bc + cc) / (rc + cc):>9.2f}x {fl * 1e3:>9.3f} {1 / fl:>17.0f} "
              f"{(rc - fl) * 1e3:>10.2f} ms")
    # what any server model could reach: the app's own CPU with HTTP costing nothing
    print(f"\nThe app alone, no HTTP ({args.threads} threads calling it, median of 3): its CPU "
          "per upload, the HTTP server's share of the rage side (rage - app), and the ratio "
          "the CPU predicts if HTTP cost nothing (the ceiling of every server model)")
    print(f"{'bundle':<8} {'app ms':>8} {'http ms':>8} {'ceiling':>8}")
    for label, _size, *_, rc, bc, cc, _fl, alone in rows:
        print(f"{label:<8} {alone * 1e3:>8.2f} {(rc - alone) * 1e3:>8.2f} "
              f"{(bc + cc) / (alone + cc):>7.2f}x")

if __name__ == "__main__":
    main()
