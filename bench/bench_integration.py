"""Cost of rage inside a Python tool, against peers measured in the same run.

1. Start-up: a hello-world script, bare vs with ``rage.install`` (goal: within 1.2x of
   ``python -c pass``, the same interpreter), stdout on /dev/null, on a pipe and on a
   terminal (a pty opened here, as in bench_wrapper.py), interleaved runs, medians, each
   table headed by the load average; ``--repeat N`` prints it N times.
2. Output: a script printing 100,000 lines into a pipe, bare vs with ``rage.install`` (which
   tees stdout into the run), whole processes, interleaved runs, medians.
3. Logging: 100,000 DEBUG records through ``logging.FileHandler`` vs rage's ``RunLogHandler``
   vs the full ``rage.install`` path (LogCapture, console level WARNING), interleaved rounds,
   medians (goal: no slower than FileHandler).

4. ``--callgrind N``: the start-up cases counted with callgrind instead (user-space
   instructions, deterministic with ``PYTHONHASHSEED=0``; N runs each, median), stdout on
   /dev/null, in a home that already has a run. Run it with the interpreter of a venv where
   the wheel is installed and compiled: what users run.

Usage: python3 bench/bench_integration.py [--runs N] [--repeat N] [--records N] [--startup-only]
       python3 bench/bench_integration.py --callgrind N
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_wrapper import load_average, timed_pty

HELLO = 'print("hello")\n'
HELLO_RAGE = 'import rage\nrage.install("bench", version="1")\nprint("hello")\n'
PRINTS = 'for i in range(100_000):\n    print("line", i, "of the output benchmark")\n'


def _time_process(argv: list[str], env: dict[str, str], stdout: int = subprocess.DEVNULL
                  ) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=stdout)
    return time.perf_counter() - t0


STDOUTS = ("/dev/null", "pipe", "terminal")


def _time_start(argv: list[str], env: dict[str, str], where: str) -> float:
    if where == "terminal":
        return timed_pty(argv, env)
    return _time_process(argv, env, subprocess.PIPE if where == "pipe" else subprocess.DEVNULL)


def _env(tmp: Path) -> dict[str, str]:
    env = {**os.environ, "RAGE_HOME": str(tmp / "home"), "RAGE_CONFIG": os.devnull}
    for var in ("RAGE_DISABLE", "PYTHONUNBUFFERED"):
        env.pop(var, None)
    return env


def _cases(tmp: Path) -> dict[str, list[str]]:
    """The start-up cases, the same interpreter's: bare, a hello-world, with rage."""
    bare, with_rage = tmp / "hello.py", tmp / "hello_rage.py"
    bare.write_text(HELLO)
    with_rage.write_text(HELLO_RAGE)
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "hello.py": [sys.executable, str(bare)],
        "hello.py + rage.install": [sys.executable, str(with_rage)],
    }


def bench_startup(tmp: Path, runs: int, where: str) -> list[tuple[str, float]]:
    env = _env(tmp)
    # Installed packages have .pyc files; measure that, with the bytecode cached under the
    # temp dir so the checkout stays clean (the warm-up runs below write it).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    cases = _cases(tmp)
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(2):  # warm the page cache and .pyc files
        for argv in cases.values():
            _time_start(argv, env, where)
    for i in range(runs):  # alternating order: an order effect hits every case alike
        for name, argv in (cases.items() if i % 2 == 0 else reversed(cases.items())):
            times[name].append(_time_start(argv, env, where))
    return [(name, statistics.median(ts)) for name, ts in times.items()]


def _instructions(argv: list[str], env: dict[str, str]) -> int:
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           *argv], env=env, check=True, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    for line in proc.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1])
    raise RuntimeError(f"no callgrind total in: {proc.stderr[-500:]}")


def bench_callgrind(tmp: Path, runs: int) -> list[tuple[str, int]]:
    env = {**_env(tmp), "PYTHONHASHSEED": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cases = _cases(tmp)
    # the home's first run builds its caches (and starts the prebuild); under valgrind too,
    # whose LD_PRELOAD is a variable name the secret-names cache must have seen (otherwise
    # the first counted run imports rage.sensitive: ~1.6M more)
    for _ in range(2):
        _instructions(cases["hello.py + rage.install"], env)
    time.sleep(3)  # the detached prebuild child writes into the home: let it finish
    runs_dir = tmp / "home" / "bench" / "runs"
    first = min(p.name for p in runs_dir.iterdir())
    counts: dict[str, list[int]] = {k: [] for k in cases}
    for _ in range(runs):
        for name, argv in cases.items():
            counts[name].append(_instructions(argv, env))
            for p in runs_dir.iterdir():  # the same history every time: one earlier run
                if p.name != first:
                    subprocess.run(["rm", "-rf", str(p)], check=True)
    return [(name, int(statistics.median(cs))) for name, cs in counts.items()]


def bench_output(tmp: Path, runs: int) -> list[tuple[str, float]]:
    env = _env(tmp)
    bare, with_rage = tmp / "prints.py", tmp / "prints_rage.py"
    bare.write_text(PRINTS)
    with_rage.write_text('import rage\nrage.install("bench", version="1")\n' + PRINTS)
    cases = {"100,000 print() lines": [sys.executable, str(bare)],
             "100,000 print() lines + rage.install": [sys.executable, str(with_rage)]}
    times: dict[str, list[float]] = {k: [] for k in cases}
    for argv in cases.values():
        _time_process(argv, env, subprocess.PIPE)
    for _ in range(runs):
        for name, argv in cases.items():
            times[name].append(_time_process(argv, env, subprocess.PIPE))
    return [(name, statistics.median(ts)) for name, ts in times.items()]


def _logger_with(handler: logging.Handler, name: str) -> logging.Logger:
    lg = logging.getLogger(name)
    lg.handlers[:] = [handler]
    lg.setLevel(logging.DEBUG)
    lg.propagate = False
    return lg


def _emit(lg: logging.Logger, n: int) -> float:
    t0 = time.perf_counter()
    for i in range(n):
        lg.debug("record %d of the benchmark with an argument %s", i, "value")
    return time.perf_counter() - t0


def bench_logging(tmp: Path, records: int, rounds: int) -> list[tuple[str, float]]:
    from rage.integration.loghandler import LogCapture, RunLogHandler, load_scrubber

    def file_handler(i: int) -> float:
        h = logging.FileHandler(tmp / f"fh-{i}.log", encoding="utf-8")
        try:
            return _emit(_logger_with(h, f"bench.fh{i}"), records)
        finally:
            h.close()

    def rage_handler(i: int) -> float:
        h = RunLogHandler(tmp / f"rh-{i}.jsonl", 256 * 1024 * 1024, scrub=load_scrubber())
        try:
            return _emit(_logger_with(h, f"bench.rh{i}"), records)
        finally:
            h.close()

    def rage_install_path(i: int) -> float:
        # what rage.install does: no handler of ours on any logger, root wants WARNING,
        # every record goes through the patched Logger.callHandlers
        root = logging.getLogger()
        root.handlers[:] = []
        root.setLevel(logging.WARNING)
        h = RunLogHandler(tmp / f"ri-{i}.jsonl", 256 * 1024 * 1024, scrub=load_scrubber())
        cap = LogCapture(h)
        cap.start()
        try:
            lg = logging.getLogger(f"bench.ri{i}")
            return _emit(lg, records)
        finally:
            cap.stop()
            h.close()

    cases: dict[str, Callable[[int], float]] = {
        "logging.FileHandler": file_handler,
        "rage RunLogHandler": rage_handler,
        "rage.install path (console WARNING)": rage_install_path,
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    for r in range(rounds):
        for name, fn in cases.items():
            times[name].append(fn(r))
    return [(name, statistics.median(ts)) for name, ts in times.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21, help="start-up runs per case")
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5, help="logging rounds per case")
    ap.add_argument("--repeat", type=int, default=1, help="print the start-up tables N times")
    ap.add_argument("--startup-only", action="store_true")
    ap.add_argument("--callgrind", type=int, default=0, metavar="N",
                    help="count start-up instructions with callgrind, N runs per case")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rage-bench-") as d:
        tmp = Path(d)
        if args.callgrind:
            counts = bench_callgrind(tmp, args.callgrind)
            print(f"start-up, callgrind instructions, median of {args.callgrind} runs")
            print(f"  {'case':<40} {'instructions':>14} {'x python -c pass':>18}"
                  f" {'x hello.py':>11}")
            for name, n in counts:
                print(f"  {name:<40} {n / 1e6:13.2f}M {n / counts[0][1]:18.3f}"
                      f" {n / counts[1][1]:11.3f}")
            return
        for rep in range(args.repeat):
            print(f"start-up {rep + 1} of {args.repeat}, median of {args.runs} interleaved "
                  f"runs, {load_average()}")
            for where in STDOUTS:
                startup = bench_startup(tmp, args.runs, where)
                base = startup[0][1]
                print(f"  stdout: {where:<32} {'ms':>8} {'x python -c pass':>20}")
                for name, t in startup:
                    print(f"  {name:<40} {t * 1000:8.1f} {t / base:20.2f}")
            print(f"  (after: {load_average()})\n")
        if args.startup_only:
            return
        output = bench_output(tmp, max(3, args.runs // 3))
        logs = bench_logging(tmp, args.records, args.rounds)
    print(f"\noutput into a pipe, median of {max(3, args.runs // 3)} interleaved runs")
    print(f"  {'case':<40} {'ms':>8} {'x bare':>20}")
    for name, t in output:
        print(f"  {name:<40} {t * 1000:8.1f} {t / output[0][1]:20.2f}")
    fh = logs[0][1]
    print(f"\n{args.records:,} DEBUG records, median of {args.rounds} interleaved rounds")
    print(f"  {'case':<40} {'ms':>8} {'us/record':>10} {'x FileHandler':>14}")
    for name, t in logs:
        print(f"  {name:<40} {t * 1000:8.1f} {t / args.records * 1e6:10.2f} {t / fh:14.2f}")


if __name__ == "__main__":
    main()
