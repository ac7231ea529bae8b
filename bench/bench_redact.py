"""Redaction throughput on a realistic log, against peers measured in the same run.

    python3 bench/bench_redact.py [SIZE_MB]      (default 200)

Generates a log (timestamps, levels, module names, URLs, paths inside and outside the home
directory, tracebacks, git SHAs, UUIDs, and about one secret per 400 lines), then times:
a plain Python read loop, `cat > /dev/null`, `sed -E` with five comparable substitutions,
and Redactor.file() four ways: in-process with every plain trigger searched (one `bytes.find`
pass per trigger: the reference scan), in-process with the pure-Python scan (anchors and byte
groups, rage/redact/scan.py; what runs without the `fast` extra), in-process with the
Hyperscan pass (`hyperscan`, the `fast` extra, when installed), and with worker processes from the
first piece (the default for a large input of known size). Prints wall seconds, MB/s,
the ratio to sed, and CPU seconds of this process (workers' CPU is not in it). The catalogue
has ~140 formats (~400 trigger literals), all searched in every mode.
"""

from __future__ import annotations

import os
import random
import shutil
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rage.redact import Redactor
from rage.redact.parallel import default_workers

HOME, USER, HOST = "/home/alice", "alice", "alice-laptop"


def _tok(rnd: random.Random, n: int, cs: str = string.ascii_letters + string.digits) -> str:
    return "".join(rnd.choice(cs) for _ in range(n))


def make_log(path: Path, size: int, seed: int = 7) -> int:
    """Write about ``size`` bytes of log; return how many secrets were planted."""
    rnd = random.Random(seed)
    secrets: list[Callable[[], str]] = [
        lambda: "token=ghp_" + _tok(rnd, 36),
        lambda: "using key AKIA" + _tok(rnd, 16, string.ascii_uppercase + string.digits),
        lambda: "Authorization: Bearer " + _tok(rnd, 40),
        lambda: '{"password": "' + _tok(rnd, 12) + '"}',
        lambda: "fetch https://bob:" + _tok(rnd, 10) + "@git.example.com/repo.git",
        lambda: "slack xoxb-" + _tok(rnd, 24),
    ]
    messages: list[Callable[[], str]] = [
        lambda: f"GET https://api.example.com/v1/items?page={rnd.randint(1, 99)} 200 12ms",
        lambda: f"connecting to db.internal:5432 pool={rnd.randint(1, 9)}",
        lambda: f"commit {rnd.getrandbits(160):040x} merged into main",
        lambda: f"request {rnd.getrandbits(128):032x} done in {rnd.random():.3f}s",
        lambda: "loaded config version 1.2.3 from /etc/tool/config.toml",
        lambda: f"worker {rnd.randint(1, 16)} finished batch {rnd.randint(1, 9999)}",
        lambda: "  File \"/usr/lib/python3.11/asyncio/base_events.py\", line 653, in run",
        lambda: f"  File \"{HOME}/src/proj/tool/main.py\", line {rnd.randint(1, 900)}, in run",
        lambda: f"cache hit ratio {rnd.random():.2f} entries={rnd.randint(1, 5000)}",
        lambda: f"wrote /var/tmp/build-{rnd.randint(1, 999)}/out.o ({rnd.randint(1, 10**6)} bytes)",
        lambda: "retrying in 2s: connection reset by peer",
        lambda: f"sha256:{rnd.getrandbits(256):064x} pulled",
    ]
    lines: list[str] = []
    written = planted = i = 0
    with open(path, "w") as f:
        while written < size:
            i += 1
            ts = f"2024-05-{1 + i % 28:02d}T12:{i % 60:02d}:{i * 7 % 60:02d}.{i % 1000:03d}Z"
            if i % 400 == 0:
                msg = rnd.choice(secrets)()
                planted += 1
            else:
                msg = rnd.choice(messages)()
            lvl = ("INFO", "DEBUG", "WARNING", "ERROR")[i % 4]
            lines.append(f"{ts} {lvl} [tool.{('core', 'net', 'db')[i % 3]}] {msg}\n")
            if len(lines) == 4096:
                chunk = "".join(lines)
                f.write(chunk)
                written += len(chunk)
                lines.clear()
    return planted


def timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def redact_file(src: Path, dst: Path, *, workers: int | None, reference: bool,
                native: bool = True) -> Callable[[], dict[str, int]]:
    def run() -> dict[str, int]:
        os.environ["RAGE_NATIVE_SCAN"] = "1" if native else "0"  # read when the engine builds
        red = Redactor(home=HOME, user=USER, hostname=HOST)
        red.build()
        red.reference_scan = reference
        size = src.stat().st_size  # as Redactor.file() passes it
        with open(src, "rb") as f, open(dst, "wb") as g:
            for out in red.stream(iter(lambda: f.read(1 << 20), b""), workers=workers,
                                  size=size):
                g.write(out)
        return red.counts
    return run


def main() -> None:
    size_mb = float(sys.argv[1]) if len(sys.argv) > 1 else 200.0
    with tempfile.TemporaryDirectory() as d:
        src, dst = Path(d) / "in.log", Path(d) / "out.log"
        planted = make_log(src, int(size_mb * 1e6))
        mb = src.stat().st_size / 1e6

        def py_read() -> None:
            with open(src, "rb") as f:
                while f.read(1 << 20):
                    pass

        rows: list[tuple[str, float, float]] = []

        def row(name: str, fn: Callable[[], object]) -> None:
            c = time.process_time()
            secs = timed(fn)
            rows.append((name, secs, time.process_time() - c))

        row("python read loop", py_read)
        row("cat > /dev/null", lambda: subprocess.run(
            ["cat", str(src)], stdout=subprocess.DEVNULL, check=True))
        sed = shutil.which("sed")
        if sed:
            script = [
                "-e", r"s/gh[pousr]_[A-Za-z0-9]{36,}/[REDACTED:github-token]/g",
                "-e", r"s/(AKIA|ASIA)[A-Z0-9]{16}/[REDACTED:aws-access-key]/g",
                "-e", r"s/(Authorization: Bearer ).*/\1[REDACTED:auth-header]/",
                "-e", r"s#://[^/@ ]+@#://[REDACTED:url-credentials]@#g",
                "-e", r"s#/home/alice#~#g",
            ]
            with open(dst, "wb") as out:
                row("sed -E (5 patterns)", lambda: subprocess.run(
                    [sed, "-E", *script, str(src)], stdout=out, check=True))
        counts: list[dict[str, int]] = []
        from rage.redact.native import available as native_available

        modes: list[tuple[str, int | None, bool, bool]] = [
            ("rage, every trigger, 1 process", 1, True, False),
            ("rage, pure-Python scan, 1 process", 1, False, False)]
        if native_available():
            modes.append(("rage, Hyperscan scan, 1 process", 1, False, True))
        modes.append((f"rage Redactor.file() ({default_workers()} workers)", None, False,
                      native_available()))
        for name, workers, reference, native in modes:
            job = redact_file(src, dst, workers=workers, reference=reference, native=native)
            row(name, lambda job=job: counts.append(job()))  # type: ignore[misc]
        assert all(c == counts[0] for c in counts), "every mode must find the same"
        sed_s = next((r[1] for r in rows if r[0] == "sed -E (5 patterns)"), None)
        print(f"log: {mb:.0f} MB, {planted} secrets planted; redaction counts: {counts[0]}")
        print(f"{'tool':36} {'seconds':>8} {'MB/s':>9} {'vs sed':>7} {'cpu s':>7}")
        for name, secs, cpu in rows:
            ratio = f"{sed_s / secs:6.2f}x" if sed_s else "-"
            print(f"{name:36} {secs:8.2f} {mb / secs:9.1f} {ratio:>7} {cpu:7.2f}")


if __name__ == "__main__":
    main()
