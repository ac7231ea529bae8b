"""How long the built-in collectors take, against `uname -a; python3 -m pip list`.

Run: python3 bench/bench_collectors.py [rounds]. Prints per-collector times (median of the
in-process runs), the parallel runner's wall time, a cold `rage collect --json` process, and
the peer measured in the same run, with ratios.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from collectors.base import BUILTIN_ORDER, Context, discover, run_collectors

PEER = f"uname -a; {sys.executable} -m pip list --disable-pip-version-check"


def timed(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    builtins = [c for c in discover().collectors if c.name in BUILTIN_ORDER]
    ctx = Context(app="rage", tools=("git", "sh"), history_root=Path.home())
    per: dict[str, list[float]] = {c.name: [] for c in builtins}
    walls = []
    for _ in range(rounds):
        start = time.perf_counter()
        sections = run_collectors(builtins, ctx)
        walls.append(time.perf_counter() - start)
        for s in sections:
            per[s.name].append(s.duration_s)
    peer = timed(lambda: subprocess.run(PEER, shell=True, capture_output=True, check=True),
                 rounds)
    cli = timed(lambda: subprocess.run([sys.executable, "-m", "rage", "collect", "--json"],
                                       capture_output=True, check=True), rounds)
    print(f"{'what':<34} {'median ms':>10} {'vs peer':>8}")
    for name, ts in per.items():
        med = statistics.median(ts)
        print(f"{'collector ' + name:<34} {med * 1000:>10.1f} {med / peer:>8.3f}")
    wall = statistics.median(walls)
    print(f"{'all built-ins (parallel, in-proc)':<34} {wall * 1000:>10.1f} {wall / peer:>8.3f}")
    print(f"{'rage collect --json (new process)':<34} {cli * 1000:>10.1f} {cli / peer:>8.3f}")
    print(f"{'peer: uname -a; pip list':<34} {peer * 1000:>10.1f} {1.0:>8.3f}")


if __name__ == "__main__":
    main()
