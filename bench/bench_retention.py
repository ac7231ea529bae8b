"""Benchmark retention on the recording path: what one recorded command costs with a history
of 10, 200 and 2,000 runs at its ``max_runs`` limit, side by side with the same command on
a history that starts empty and never reaches its limit.

    python3 bench/bench_retention.py [--sizes 10,200,2000] [--reps 3] [--lib DIR]

At the limit every command adds a run, so retention has to delete one per command on
average; what matters is how that work is spread. Each repetition times whole cycles of
``min(max_runs // 10, 32) + 1`` commands (the hysteresis cycle: one deleting command in it),
at least 30 commands, per side,
interleaved command by command in alternating order (history, empty, empty, history...), and
reports the mean per command (the amortised cost), the median, the slowest command (the one
that deletes) and the ratio of the means to the empty-history peer. Commands run as a shim runs
them: ``python -I -S -c ... run --app bench -- true``. ``--lib DIR`` measures another
checkout (e.g. an older commit extracted with ``git archive``) the same way.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
META = ('{{"schema": 1, "id": "{id}", "app": "bench", "argv": ["true"], "cwd": "/", '
        '"started_at": "{iso}", "ended_at": "{iso}", "duration_s": 0.01, "status": "ok", '
        '"exit_code": 0, "signal": null, "pid": 1, "recorder": "wrapper"}}\n')


def argv_for(lib: Path) -> list[str]:
    code = f"import sys; sys.path.append({str(lib)!r}); from rage.__main__ import main; main()"
    return [sys.executable, "-I", "-S", "-c", code, "run", "--app", "bench", "--", "true"]


def fill(home: Path, n: int) -> None:
    """``n`` finished runs shaped like the wrapper's, started over the last n seconds."""
    runs = home / "bench" / "runs"
    runs.mkdir(parents=True, mode=0o700)
    start = int(time.time()) - n - 60
    env = "{" + ", ".join(f'"VAR{i}": "{"v" * 30}"' for i in range(60)) + "}\n"
    for i in range(n):
        t = time.gmtime(start + i)
        rid = time.strftime("%Y%m%dT%H%M%SZ", t) + f"-{i:08x}"
        d = runs / rid
        d.mkdir(mode=0o700)
        iso = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", t)
        for name, text in (("meta.json", META.format(id=rid, iso=iso)), ("lock", ""),
                           ("stdout.log", "out\n" * 50), ("stderr.log", ""),
                           ("environ.json", env)):
            fd = os.open(d / name, os.O_WRONLY | os.O_CREAT, 0o600)
            os.write(fd, text.encode())
            os.close(fd)
    (home / "bench" / ".last-prune").touch()  # no hourly pass in the window: only the count


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system, which a busy machine disturbs less)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_size(n: int, reps: int, argv: list[str], tmp: Path, base: dict[str, str]
               ) -> tuple[list[tuple[float, float]], list[tuple[float, float]], int]:
    envs = []
    # the peer starts empty and its limit is never reached (it gains one run per command)
    for side, runs, limit in (("history", n, n), ("empty", 0, 10**6)):
        home, cfg = tmp / f"{side}-{n}", tmp / f"{side}-{n}.toml"
        cfg.write_text(f"[default]\nmax_runs = {limit}\n")
        fill(home, runs)
        envs.append({**base, "RAGE_HOME": str(home), "RAGE_CONFIG": str(cfg)})
    cycle = min(n // 10, 32) + 1
    per_rep = -(-30 // cycle) * cycle  # whole cycles, at least 30 commands
    ours: list[tuple[float, float]] = []
    peer: list[tuple[float, float]] = []
    for r in range(reps * per_rep):
        if r % 2:
            peer.append(timed(argv, envs[1]))
            ours.append(timed(argv, envs[0]))
        else:
            ours.append(timed(argv, envs[0]))
            peer.append(timed(argv, envs[1]))
    left = len(os.listdir(Path(envs[0]["RAGE_HOME"]) / "bench" / "runs"))
    return ours, peer, left


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,200,2000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--lib", type=Path, default=HERE, help="the checkout whose rage to time")
    args = ap.parse_args()
    argv = argv_for(args.lib.resolve())
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("RAGE_") and k != "PYTHONDONTWRITEBYTECODE"}
    print(f"rage from {args.lib}; {args.reps} repetitions of whole cycles per size\n")
    print("per command, wall: mean / median / slowest; cpu: mean (user + system); ratios of "
          "the means to the empty history\n")
    print(f"{'runs':<6} {'history: wall':>26} {'cpu':>7}   {'empty: wall':>26} {'cpu':>7}   "
          f"{'wall':>5} {'cpu':>5}  left")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            ours, peer, left = bench_size(n, args.reps, argv, Path(tmp), base)
            cells = []
            for side in (ours, peer):
                wall = [w * 1e3 for w, _ in side]
                cpu = statistics.mean(c * 1e3 for _, c in side)
                cells.append((statistics.mean(wall), statistics.median(wall), max(wall), cpu))
            (wa, da, xa, ca), (wb, db, xb, cb) = cells
            print(f"{n:<6} {wa:>8.1f} {da:>8.1f} {xa:>8.1f} {ca:>7.1f}   {wb:>8.1f} {db:>8.1f} "
                  f"{xb:>8.1f} {cb:>7.1f}   {wa / wb:>5.2f} {ca / cb:>5.2f}  {left}")


if __name__ == "__main__":
    main()
