"""Benchmark: `rage report` on a large realistic log vs `zstd -3 -T0` on the same file.

Usage: python3 bench/bench_report.py [--mb 200] [--repeat 3] [--words] [--fresh]
       python3 bench/bench_report.py --small [--runs 10] [--rounds 2]

Generates a log that looks like a real tool's output (timestamps, levels, paths, URLs, the
odd e-mail address and token), records it as a run in a throw-away RAGE_HOME, then times
the report pipeline (redaction + bundle compression, collectors off) against the system
`zstd -3 -T0` compressing the same bytes, side by side in each round. Two report rows:
the default settings (bundle_max_bytes 64 MiB: a larger log is truncated to its head and
tail, and only those are redacted, as a user gets it) and bundle_max_bytes above the file
size (everything redacted). Prints seconds, MB/s of input and the ratio to zstd (goal: <= 2x),
all of the best round, and the median round's ratio to zstd (each round against the zstd run
beside it): the two far apart mean a noisy machine. ``cpu`` is the median round's ratio of
CPU time (user + system of this process and the processes it waited for: rage's workers,
zstd's threads), which a machine whose speed drifts disturbs less than wall time.

A last row reports the same log as `rage run` keeps it under the default output cap (the
recorder's own CappedFile: its first and last 4 MiB around a marker), redacted whole in the
reporting process, which learns what it names, against `zstd -3 -T0` of that file: at 8 MiB
the reporting process's start-up is much of it.

``--words``: the log of issue 10 instead, ordinary lines full of the words that name
secrets (`user`, `session`, `request`, `token`, `auth`), hex ids, and a secret on 1% of the
lines: what costs a redactor most per byte.

Each run is headed by the load average and what new memory costs here: a page of it touched
by a new process, and a MB written to a new file. On the development machine (a virtual
machine) both moved within one session, a new file's MB from 0.2 to 3.6 ms as the host took
back and gave memory, and a report writes more new memory than `zstd` (the frames held for
the bundle, then the bundle), with its workers done by then: its ratio moves with them.

``--fresh``: each report in a new interpreter, timed from before it imports the report's
modules, as a user's `rage report` pays them (imports and the engine's build); by default the
rounds share this process, so after the first they pay neither. As an installed rage has
them, the modules' bytecode is compiled first (``compileall``: a sandbox that sets
PYTHONDONTWRITEBYTECODE would otherwise compile every module in every round, ~50 ms), and
the engine's compiled database is the one a user's first report left in their rage home
(an untimed report makes it; the first report of a new rage version compiles it, ~45 ms).

``--small`` (and after the rows above): `rage report --last --yes --output DIR/` of a small
run (`rage run -- sh -c 'echo hi; exit 3'`) through the installed console script, whole
processes, interleaved with the same interpreter's `python -c pass`, ``--runs`` of each a
round, two rounds or more: warm (the rage home after one report), in a fresh home (new
HOME and XDG directories: the run recorded there, then what the recorder's prebuild child
leaves, `rage.report.prebuild`, as a user's first recording starts it) and in a fresh home
with nothing built ahead (the prebuild not run: a report made before it finished). Wall
time and CPU time (user + system) of each process, min and median, and the median's ratio
to `python -c pass`.

``--compare OLD.tar.zst NEW.tar.zst``: are two bundles of the same run, made by two
versions of rage (installed in turn in the same venv, so paths agree), the same content?
Every member must be byte-identical after blanking what differs from one report to the
next by nature: the manifest's ``created_at``, every ``duration_s``, the sizes and
digests of the collectors' members in the manifest and summary (they follow the
durations' digits), and the system collector's live
readings (available memory, swap and disk use, load, uptime). Prints each member and
exits 1 on any other difference: what a speed-up must leave alone.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MiB = 1024 * 1024


def make_log(path: Path, size: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    levels = ["DEBUG", "INFO", "INFO", "INFO", "WARNING", "ERROR"]
    modules = ["sync.worker", "http.client", "cache", "db.pool", "scheduler", "fs.watch"]
    words = ["request", "finished", "retrying", "connection", "opened", "closed", "item",
             "processed", "batch", "queue", "depth", "latency", "bytes", "user", "file",
             "checksum", "mismatch", "skipped"]
    t = 1_764_000_000.0
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < size:
            block = []
            for _ in range(2000):
                t += rng.random() / 10
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))
                msg = " ".join(rng.choices(words, k=rng.randint(4, 12)))
                r = rng.random()
                if r < 0.02:
                    msg += f" GET https://api.example.com/v2/items/{rng.randint(1, 10**6)}"
                elif r < 0.025:
                    msg += f" notify user{rng.randint(1, 999)}@example.org"
                elif r < 0.027:
                    msg += " auth token=ghp_" + "".join(rng.choices("abcdefXYZ0123456789", k=36))
                elif r < 0.05:
                    msg += f" path=/home/alice/projects/demo/src/mod{rng.randint(1, 99)}.py"
                block.append(f"{stamp}.{rng.randint(0, 999):03d} {rng.choice(levels):<7} "
                             f"[{rng.choice(modules)}] {msg} n={rng.randint(0, 10**6)}\n")
            text = "".join(block)
            f.write(text)
            written += len(text)


def make_words_log(path: Path, size: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    words = ["user", "session", "request", "token", "auth", "started", "completed", "cache",
             "refreshed", "expired", "for", "the", "in", "ms", "key", "lookup", "handler",
             "password", "reset", "id", "ok", "retry", "secret", "store"]
    secrets = [lambda: "token=ghp_" + "".join(rng.choices("abcdefXYZ0123456789", k=36)),
               lambda: "Authorization: Bearer " + "".join(rng.choices("abcdefXYZ0123", k=40)),
               lambda: "password=" + "".join(rng.choices("abcdefXYZ0123!#", k=14)),
               lambda: "AKIA" + "".join(rng.choices("ABCDEFGHIJKLMNOP0123456789", k=16))]
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < size:
            block = []
            for i in range(2000):
                msg = " ".join(rng.choices(words, k=rng.randint(5, 10)))
                if rng.random() < 0.01:
                    msg += " " + rng.choice(secrets)()
                block.append(f"2026-12-02T10:{i % 60:02d}:{rng.randint(0, 59):02d}.{i % 1000:03d}Z "
                             f"INFO {msg} request_id={rng.getrandbits(64):016x}\n")
            text = "".join(block)
            f.write(text)
            written += len(text)


NEW_MEMORY = r"""
import mmap, os, sys, time
n = 64 << 20
m = mmap.mmap(-1, n)
t = time.perf_counter()
for i in range(0, n, 4096):
    m[i] = 1
page = (time.perf_counter() - t) / (n // 4096) * 1e6
data = os.urandom(1 << 20) * 32
t = time.perf_counter()
with open(sys.argv[1], "wb") as f:
    f.write(data)
print(page, (time.perf_counter() - t) / 32 * 1e3)
os.unlink(sys.argv[1])
"""


def new_memory_cost(tmp: Path) -> tuple[float, float]:
    """Microseconds a new process pays to touch a 4 KiB page of new memory, and
    milliseconds to write a MB to a new file (32 MB), each the best of 3."""
    runs = [tuple(map(float, subprocess.run(
        [sys.executable, "-c", NEW_MEMORY, str(tmp / "new-memory")], check=True,
        capture_output=True, text=True).stdout.split())) for _ in range(3)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def cpu_now() -> float:
    """CPU seconds so far of this process and of the children it has waited for."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def time_zstd(src: Path, out: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(["zstd", "-3", "-T0", "-q", "-f", "-o", str(out), str(src)], check=True)
    return time.perf_counter() - t0


def time_rage(src: Path, home: Path, max_bytes: int | None, *, imports: bool = False
              ) -> tuple[float, float, int, float]:
    """Seconds to prepare (collect + redact) and to write the bundle, its size, and the CPU
    seconds of both (this process's and its workers').

    ``max_bytes`` None keeps the default bundle_max_bytes. ``imports``: the clock also runs
    while the report's modules are imported (in a new interpreter, see ``--fresh``).
    """
    os.environ["RAGE_HOME"] = str(home)
    from rage.record.history import RunStore

    active = RunStore(home).start("bench", ["bench", "--big"], recorder="wrapper")
    shutil.copyfile(src, active.path("output.log"))
    run = active.finish(exit_code=1)
    # the run was recorded before the report, and its file written back by the time a user
    # reports; a copy still dirty made the bundle's fsync write it back too (ext4 commits
    # the journal with the data before it): 0.07 s more in some rounds, none in others
    os.sync()
    if not imports:
        import rage.config
        import rage.report.pipeline  # noqa: F401
    c0 = cpu_now()
    t0 = time.perf_counter()
    from rage.config import load_settings
    from rage.report import ReportRequest, prepare, write

    overrides = {} if max_bytes is None else {"bundle_max_bytes": max_bytes}
    settings = load_settings("bench", overrides=overrides)
    prepared = prepare(ReportRequest(run=run, settings=settings, collect=False))
    t1 = time.perf_counter()
    with prepared:
        built = write(prepared, home / "out.tar.zst")
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, built.size, cpu_now() - c0


def time_rage_fresh(src: Path, home: Path, max_bytes: int | None
                    ) -> tuple[float, float, int, float]:
    """:func:`time_rage` in a new interpreter, paying the report's imports (``--fresh``)."""
    import json

    if CACHE is not None:  # the engine's database, as the user's earlier reports left it
        shutil.copytree(CACHE, home / ".cache")
    out = subprocess.run([sys.executable, __file__, "--child", str(src), str(home),
                          str(max_bytes or 0)], check=True, capture_output=True, text=True)
    prep, bundle, size, cpu = json.loads(out.stdout)
    return prep, bundle, size, cpu


CACHE: Path | None = None  # set by --fresh: the rage home's .cache a first, untimed report filled


def warm_up(tmp: Path, log: Path) -> None:
    """What an installed rage has before a user's second report: the modules' bytecode
    (pip compiles it at install) and the engine's database in the rage home's cache."""
    import compileall

    import rage

    global CACHE
    compileall.compile_dir(str(Path(rage.__file__).parent), quiet=1)
    home = tmp / "warm"
    small = tmp / "warm.log"
    with open(log, "rb") as f:
        small.write_bytes(f.read(MiB))
    time_rage_fresh(small, home, None)
    CACHE = tmp / "cache"
    shutil.copytree(home / ".cache", CACHE)
    shutil.rmtree(home)


SMALL_CMD = ["sh", "-c", "echo hi; exit 3"]


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one process."""
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)


def _fresh_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGE_", "XDG_"))}
    env.update(HOME=str(home), XDG_STATE_HOME=str(home / ".local/state"),
               XDG_CACHE_HOME=str(home / ".cache"), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local/share"))
    return env


def _fresh_home(tmp: Path, n: int, prebuilt: bool) -> tuple[dict[str, str], Path]:
    """A new HOME with one small run recorded, as a user's first recording leaves it: with
    ``prebuilt``, once the recording's own detached prebuild child (rage.report.prebuild)
    has left its stamp; without, a recording that started none (``RAGE_PREBUILD=0``), as a
    report made before that child finished finds the home. (Running the prebuild again
    here, beside the recording's child, found its lock taken and returned at once: the
    report then raced the child at nice 19 and built the caches itself.)"""
    rage = str(Path(sys.executable).with_name("rage"))
    home = tmp / f"fresh{n}"
    home.mkdir()
    env = _fresh_env(home)
    subprocess.run([rage, "run", "--", *SMALL_CMD], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False,
                   env=env if prebuilt else {**env, "RAGE_PREBUILD": "0"})
    if prebuilt:
        cache = home / ".local/state/rage/.cache"
        deadline = time.monotonic() + 60
        while not any(cache.glob("prebuilt-*")):
            if time.monotonic() > deadline:
                raise SystemExit(f"the recording's prebuild left no stamp in {cache}")
            time.sleep(0.02)
    out = home / "out"
    out.mkdir()
    return env, out


def small_rows(tmp: Path, runs: int, rounds: int) -> None:
    """`rage report` of a small run, warm and in a fresh home, beside `python -c pass`."""
    import compileall

    import collectors
    import rage

    for pkg in (rage.__file__, collectors.__file__):  # as pip leaves an installed rage
        compileall.compile_dir(str(Path(str(pkg)).parent), quiet=1)
    exe = str(Path(sys.executable).with_name("rage"))
    report = [exe, "report", "--last", "--yes", "--output"]
    warm_home = tmp / "warm-small"
    warm_env = {**os.environ, "RAGE_HOME": str(warm_home)}
    subprocess.run([exe, "run", "--", *SMALL_CMD], env=warm_env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    subprocess.run([*report, f"{tmp}/"], env=warm_env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)  # (the warm-up)
    labels = ("python -c pass", "rage report, warm", "rage report, fresh home",
              "rage report, fresh home, nothing built")
    n = 0
    print(f"small run ({' '.join(SMALL_CMD)}): {runs} runs a round, interleaved, "
          f"{os.cpu_count()} cpus")
    print(f"{'round':<6} {'what':<40} {'wall min':>9} {'median':>8} {'cpu min':>8} "
          f"{'median':>8} {'vs pass':>8}")
    for r in range(rounds):
        got: dict[str, list[tuple[float, float]]] = {k: [] for k in labels}
        for _ in range(runs):
            got[labels[0]].append(_timed([sys.executable, "-c", "pass"], warm_env))
            out = tmp / f"warm-out{n}"
            out.mkdir()
            got[labels[1]].append(_timed([*report, f"{out}/"], warm_env))
            for label, prebuilt in ((labels[2], True), (labels[3], False)):
                env, out = _fresh_home(tmp, n, prebuilt)
                n += 1
                got[label].append(_timed([*report, f"{out}/"], env))
        base = statistics.median(w for w, _ in got[labels[0]])
        for label in labels:
            walls = [w for w, _ in got[label]]
            cpus = [c for _, c in got[label]]
            print(f"{r + 1:<6} {label:<40} {min(walls) * 1e3:>7.1f}ms "
                  f"{statistics.median(walls) * 1e3:>6.1f}ms {min(cpus) * 1e3:>6.1f}ms "
                  f"{statistics.median(cpus) * 1e3:>6.1f}ms "
                  f"{statistics.median(walls) / base:>7.2f}x")
        print(f"       load average {os.getloadavg()[0]:.2f}")
    print("goal: warm within 150 ms, fresh home within 300 ms (wall)")


# what differs between two reports of one run by nature, blanked before a comparison
VOLATILE_KEYS = {"created_at", "duration_s"}
LIVE_SYSTEM = {("memory", "available_bytes"), ("memory", "percent"), ("swap", "used_bytes"),
               ("swap", "percent"), ("load_average",), ("uptime_s",)}


def bundle_members(path: Path) -> list[tuple[str, bytes]]:
    import io
    import tarfile

    import zstandard

    with open(path, "rb") as f:
        raw = zstandard.ZstdDecompressor().stream_reader(f).read()
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        return [(m.name, tar.extractfile(m).read())  # type: ignore[union-attr]
                for m in tar.getmembers() if m.isfile()]


def _blank(value: object, name: str, path: tuple[str, ...] = ()) -> object:
    if isinstance(value, dict):
        out: dict[str, object] = {}
        for k, v in value.items():
            here = (*path, k)
            live = name == "collectors/system.json" and (
                here[-2:] in LIVE_SYSTEM or here[-1:] in LIVE_SYSTEM
                or (len(here) >= 2 and here[-3:-2] == ("disk",)
                    and k in ("used_bytes", "free_bytes", "percent")))
            digest = name == "manifest.json" and k in ("sha256", "size") and "files" in path
            out[k] = "*" if k in VOLATILE_KEYS or live or digest else _blank(v, name, here)
        return out
    if isinstance(value, list):
        return [_blank(v, name, path) for v in value]
    return value


def _sizes_blanked(summary: bytes) -> bytes:
    import re

    return re.sub(rb"(`collectors/[^`]+`) \([^)]*\)", rb"\1 (*)", summary)


def compare_bundles(old: Path, new: Path) -> int:
    import json

    a, b = bundle_members(old), bundle_members(new)
    if [n for n, _ in a] != [n for n, _ in b]:
        print(f"members differ:\n  old {[n for n, _ in a]}\n  new {[n for n, _ in b]}")
        return 1
    bad = 0
    for (name, x), (_, y) in zip(a, b, strict=True):
        if x == y:
            verdict = "identical"
        elif name == "summary.md" and _sizes_blanked(x) == _sizes_blanked(y):
            verdict = "identical but for collectors' sizes"
        elif name.endswith(".json") and _blank(json.loads(x), name) == _blank(json.loads(y),
                                                                              name):
            verdict = "identical but for timings/live readings"
        else:
            verdict, bad = "DIFFERENT", bad + 1
        print(f"{name:40} {verdict}")
    print("same content" if not bad else f"{bad} member(s) differ")
    return 1 if bad else 0


def main() -> int:
    if sys.argv[1:2] == ["--compare"] and len(sys.argv) == 4:
        return compare_bundles(Path(sys.argv[2]), Path(sys.argv[3]))
    if sys.argv[1:2] == ["--child"]:  # one report for time_rage_fresh
        import json

        print(json.dumps(time_rage(Path(sys.argv[2]), Path(sys.argv[3]),
                                   int(sys.argv[4]) or None, imports=True)))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=200, help="log size in MB (default 200)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--words", action="store_true",
                    help="the words-heavy log of issue 10 instead of the realistic one")
    ap.add_argument("--fresh", action="store_true",
                    help="each report in a new interpreter, paying its imports and build")
    ap.add_argument("--small", action="store_true",
                    help="only the small run's rows: warm and in a fresh home")
    ap.add_argument("--runs", type=int, default=10, help="small runs a round (default 10)")
    ap.add_argument("--rounds", type=int, default=2, help="small rounds (default 2)")
    args = ap.parse_args()
    if args.small:
        with tempfile.TemporaryDirectory(prefix="rage-bench-") as d:
            small_rows(Path(d), args.runs, args.rounds)
        return 0
    if shutil.which("zstd") is None:
        print("zstd is not installed: nothing to compare against", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rage-bench-") as d:
        tmp = Path(d)
        log = tmp / "big.log"
        (make_words_log if args.words else make_log)(log, args.mb * 1000 * 1000)
        size = log.stat().st_size
        if args.fresh:
            warm_up(tmp, log)
        from rage.config import Settings

        default_cap = Settings().bundle_max_bytes
        rows = {f"default ({default_cap // MiB} MiB cap"
                + (", truncated)" if size > default_cap else ")"): None,
                "bundle_max_bytes >= file (all)": size + MiB}
        best_z = float("inf")
        best: dict[str, tuple[float, float, int, float]] = {}
        ratios: dict[str, list[float]] = {label: [] for label in rows}
        cpu_ratios: dict[str, list[float]] = {label: [] for label in rows}
        for i in range(args.repeat):
            c0 = cpu_now()
            z = time_zstd(log, tmp / "peer.zst")
            zc = cpu_now() - c0
            best_z = min(best_z, z)
            for label, max_bytes in rows.items():
                home = tmp / f"home{i}"
                result = (time_rage_fresh if args.fresh else time_rage)(log, home, max_bytes)
                cpu_ratios[label].append(result[3] / zc)
                shutil.rmtree(home)
                ratios[label].append(sum(result[:2]) / z)
                if label not in best or sum(result[:2]) < sum(best[label][:2]):
                    best[label] = result
        peer_size = (tmp / "peer.zst").stat().st_size
        mb = size / 1e6
        kind = "words-heavy" if args.words else "realistic"
        print(f"input: {mb:.0f} MB {kind} log, best of {args.repeat}, {os.cpu_count()} cpus"
              + (", each report in a new interpreter" if args.fresh else ""))
        page_us, file_ms = new_memory_cost(tmp)
        print(f"load average {os.getloadavg()[0]:.2f}; new memory: {page_us:.2f} us a page "
              f"touched, {file_ms:.2f} ms a MB written to a new file")
        from rage.redact.native import scan_status

        print(f"redaction scan: {scan_status()} (RAGE_NATIVE_SCAN=0 for the pure-Python one)")
        print(f"{'what':<44} {'redact s':>8} {'bundle s':>8} {'total s':>8} {'MB/s':>7} "
              f"{'out MB':>7} {'vs zstd':>8} {'median':>7} {'cpu':>6}")
        print(f"{'zstd -3 -T0 (peer)':<44} {'':>8} {'':>8} {best_z:>8.2f} {mb / best_z:>7.1f} "
              f"{peer_size / 1e6:>7.1f} {1:>7.2f}x {1:>6.2f}x {1:>5.2f}x")
        for label, (redact_s, write_s, bundle_size, _cpu) in best.items():
            total = redact_s + write_s
            print(f"{'rage report: ' + label:<44} {redact_s:>8.2f} {write_s:>8.2f} "
                  f"{total:>8.2f} {mb / total:>7.1f} {bundle_size / 1e6:>7.1f} "
                  f"{total / best_z:>7.2f}x {statistics.median(ratios[label]):>6.2f}x "
                  f"{statistics.median(cpu_ratios[label]):>5.2f}x")
        print("MB/s is of the input log; goal: rage report <= 2x zstd")
        recorded_row(tmp, log, args)
        small_rows(tmp, args.runs, args.rounds)
    return 0


def recorded_row(tmp: Path, log: Path, args: argparse.Namespace) -> None:
    """The same log as `rage run` keeps it under the default output cap (its first and last
    4 MiB around a marker, written by the recorder's own CappedFile), reported whole: a file
    this small is redacted in the reporting process, which learns what it names (see
    rage.defaults.LEARNED_MAX), against `zstd -3 -T0` of the same file."""
    from rage.defaults import DEFAULT_OUTPUT_CAP
    from rage.record.capture import CappedFile

    capped = tmp / "recorded.log"
    out = CappedFile(capped, DEFAULT_OUTPUT_CAP)
    with open(log, "rb") as f:
        while chunk := f.read(MiB):
            out.write(chunk)
    out.close()
    best_z = best_r = float("inf")
    ratios = []
    for i in range(args.repeat):
        z = time_zstd(capped, tmp / "peer-recorded.zst")
        home = tmp / f"rec{i}"
        prep, write, _size, _cpu = (time_rage_fresh if args.fresh else time_rage)(
            capped, home, None)
        shutil.rmtree(home)
        best_z, best_r = min(best_z, z), min(best_r, prep + write)
        ratios.append((prep + write) / z)
    mb = capped.stat().st_size / 1e6
    print(f"{'as recorded (' + format(mb, '.1f') + ' MB: default output cap)':<44} "
          f"zstd {best_z:.3f} s, rage report {best_r:.3f} s: {best_r / best_z:.2f}x "
          f"(median {statistics.median(ratios):.2f}x)")


if __name__ == "__main__":
    sys.exit(main())
