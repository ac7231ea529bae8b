"""Benchmark `rage run` against peers, side by side in one process run.

    python3 bench/bench_wrapper.py [--reps N] [--mb SIZE]

Prints median wall time per case and the ratio to its peer. Repetitions are interleaved
(rage, peer, rage, peer...) so machine noise hits both alike. Cases:

- start-up: `rage run -- true` vs `script -qec true /dev/null` and vs `python3 -c pass`
- throughput, pipes: `rage run -- cat F` vs `cat F | tee OUT >/dev/null` (F: a 200 MB file)
- throughput, terminal: both run on a pty opened here: `rage run -- cat F` vs
  `script -qec "cat F" /dev/null`
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

PY = sys.executable  # the real interpreter, not a pyenv shim
RAGE = [PY, "-m", "rage", "run", "--"]


def timed_pipe(argv: list[str], env: dict[str, str], shell: bool = False) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv if not shell else ["sh", "-c", argv[0]], env=env, check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def timed_pty(argv: list[str], env: dict[str, str]) -> float:
    """Run ``argv`` with a pty as stdin/stdout/stderr, draining the screen as a terminal
    emulator would."""
    master, slave = os.openpty()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    while True:
        r, _, _ = select.select([master], [], [], 0.5)
        if r:
            try:
                if not os.read(master, 1 << 16):
                    break
            except OSError:
                break
        elif proc.poll() is not None:
            break
    proc.wait()
    dt = time.perf_counter() - t0
    os.close(master)
    return dt


def compare(name: str, reps: int, ours: Callable[[], float], peer: Callable[[], float],
            peer_name: str) -> tuple[str, float, float, float]:
    a, b = [], []
    for _ in range(reps):
        a.append(ours())
        b.append(peer())
    ma, mb = statistics.median(a), statistics.median(b)
    return (f"{name} vs {peer_name}", ma, mb, ma / mb)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--big-reps", type=int, default=3)
    ap.add_argument("--mb", type=int, default=200)
    args = ap.parse_args()
    if not shutil.which("script"):
        sys.exit("needs script(1) from util-linux")
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        env = {**os.environ, "RAGE_HOME": str(t / "home"), "RAGE_CONFIG": str(t / "c.toml"),
               "RAGE_MAX_RUNS": "5"}
        big = t / "big.bin"
        block = os.urandom(1 << 20)
        with open(big, "wb") as f:
            for _ in range(args.mb):
                f.write(block)
        rows = [
            compare("rage run -- true", args.reps,
                    lambda: timed_pipe([*RAGE, "true"], env),
                    lambda: timed_pipe(["script", "-qec", "true", "/dev/null"], env),
                    "script -qec true"),
            compare("rage run -- true", args.reps,
                    lambda: timed_pipe([*RAGE, "true"], env),
                    lambda: timed_pipe([PY, "-c", "pass"], env), "python3 -c pass"),
            compare(f"rage run -- cat {args.mb}MB (pipes)", args.big_reps,
                    lambda: timed_pipe([*RAGE, "cat", str(big)], env),
                    lambda: timed_pipe([f"cat {big} | tee {t / 'out'} >/dev/null"], env,
                                       shell=True),
                    "cat | tee"),
            compare(f"rage run -- cat {args.mb}MB (pty)", args.big_reps,
                    lambda: timed_pty([*RAGE, "cat", str(big)], env),
                    lambda: timed_pty(["script", "-qec", f"cat {big}", "/dev/null"], env),
                    "script -qec cat"),
        ]
    print(f"{'case':<58} {'rage':>9} {'peer':>9} {'ratio':>6}")
    for name, a, b, r in rows:
        print(f"{name:<58} {a * 1000:>7.1f}ms {b * 1000:>7.1f}ms {r:>6.2f}")


if __name__ == "__main__":
    main()
