"""Redaction CPU of two checkouts of rage, side by side: an A/B for a change to the engine.

    python3 bench/bench_redact_ab.py OTHER_CHECKOUT [--mb 20] [--rounds 8]

For each of three logs (bench_report's ordinary and words-heavy logs, bench_redact's log
of tracebacks and homes), runs ``Redactor.bytes`` on the whole log in fresh processes, the
checkout holding this script and ``OTHER_CHECKOUT`` (e.g. a ``git worktree`` of the code
before) alternately, and prints the median of each one's CPU time (best of 3 in each
process): CPU time, which a machine whose speed drifts disturbs less than wall time, and
both sides in the same minutes.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_redact  # noqa: E402
import bench_report  # noqa: E402

CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from rage.redact import Redactor
data = open(sys.argv[2], "rb").read()
r = Redactor(home="/home/alice", user="alice", hostname="alice-laptop")
r.bytes(data[:100000])
best = 9e9
for _ in range(3):
    t0 = time.process_time()
    r.bytes(data)
    best = min(best, time.process_time() - t0)
print(best)
"""


def cpu(checkout: str, log: Path) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, checkout, str(log)],
                         capture_output=True, text=True, check=True).stdout
    return float(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("other", help="the other checkout (its root, holding rage/)")
    ap.add_argument("--mb", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    this = str(HERE.parent)
    with tempfile.TemporaryDirectory() as tmp:
        logs = {"ordinary (bench_report)": Path(tmp) / "ordinary.log",
                "words-heavy (bench_report --words)": Path(tmp) / "words.log",
                "tracebacks and homes (bench_redact)": Path(tmp) / "redact.log"}
        size = args.mb * 1024 * 1024
        bench_report.make_log(logs["ordinary (bench_report)"], size)
        bench_report.make_words_log(logs["words-heavy (bench_report --words)"], size)
        bench_redact.make_log(logs["tracebacks and homes (bench_redact)"], size)
        print(f"{args.mb} MB each, {args.rounds} rounds; this: {this}, other: {args.other}")
        for name, log in logs.items():
            mine: list[float] = []
            other: list[float] = []
            for r in range(args.rounds):
                pair = [(this, mine), (args.other, other)]
                for checkout, into in (pair if r % 2 == 0 else pair[::-1]):
                    into.append(cpu(checkout, log))
            a, b = statistics.median(mine), statistics.median(other)
            print(f"{name:38s} this {a * 1000:6.0f} ms CPU, other {b * 1000:6.0f} ms CPU: "
                  f"{a / b:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
