"""Benchmark `rage run` against peers, side by side in one process run.

    python3 bench/bench_wrapper.py [--reps N] [--runs N] [--startup-only] [--mb SIZE]

Prints median wall time per case and the ratio to its peer, and the ratio of the CPU time
(user + system) of the processes each case ran, which a busy machine disturbs less than wall
time. Repetitions are interleaved, in alternating order (rage, peer, peer, rage...), so
machine noise and any order effect hit both alike. Then the total of
``-X importtime`` self times per start-up variant (median of 5), which is less noisy on a
shared machine. Cases:

- start-up of the `rage` command, `rage run -- true` vs `python -c pass` of the same
  interpreter (goal: 1.3x), on a pipe and on a terminal: as installed beside the
  interpreter (bin/rage), and as the launchers pip (it imports `re`: ~23M instructions,
  0.6x `python -c pass` alone) and uv write for an entry point
- start-up: `rage run -- true` vs `script -qec true /dev/null` and vs `python3 -c pass`,
  both as a shim runs it (`python -I -S -c ...`, see rage.record.shims.run_argv) and as
  `python -m rage` (what the `rage` console script costs, minus pip's wrapper); with
  stdout on /dev/null (the child gets the device itself), on a pipe (relayed) and on a
  terminal; and the bare interpreter's own start-up (`python -I -S -c pass`) beside them
- on a terminal, every case runs as a terminal emulator starts a shell: in a session of its
  own whose controlling terminal is a pty opened here (stdin, stdout and stderr), in the
  foreground, the screen drained as it comes. rage then gives the command a pty and a
  session leader of its own; `script` does the same with its shell. The real shim script
  (`sh` running the file `rage shim install` writes, its boot code finding the real `true`
  on PATH) is measured there too, and so is the bare interpreter
- `--runs N` repeats the shim start-up table (terminal, /dev/null, pipe) N times, each
  headed by the load average, so one noisy run shows as such; `--startup-only` stops there
- `--cost N`: what `rage run -- true` costs the machine, as installed (bin/rage) against
  `python -c pass` of the same interpreter, on a pipe and on a terminal: CPU time (user +
  system of the whole process tree, from wait4) and minor page faults, N interleaved runs,
  medians, in a history that holds the same single earlier run every time (no retention,
  no first-run work); then callgrind's user-space instructions (``PYTHONHASHSEED=0``) when
  valgrind is there. The system time is where the two differ most (the session leader's
  fork on a terminal, the run's files), which instructions do not show
- throughput, pipes: `rage run -- cat F` vs `cat F | tee OUT >/dev/null` (F: a 200 MB file)
- throughput, terminal: both run on a pty opened here: `rage run -- cat F` vs
  `script -qec "cat F" /dev/null`
"""

from __future__ import annotations

import argparse
import os
import resource
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rage.paths import prebuild_stamp
from rage.record.shims import run_argv  # this checkout's rage, not an installed one

PY = sys.executable  # the real interpreter, not a pyenv shim
RAGE = [PY, "-m", "rage", "run", "--"]
SHIM = [*run_argv(), "run", "--"]
SCRIPT = ["script", "-qec", "true", "/dev/null"]
BARE = [PY, "-I", "-S", "-c", "pass"]
PASS = [PY, "-c", "pass"]
# The `rage` console script as installers write it for the entry point rage.__main__:main:
# pip's (distlib's template, pip 23-25) imports `re`; uv's does not.
PIP_LAUNCHER = f"""#!{PY}
# -*- coding: utf-8 -*-
import re
import sys
from rage.__main__ import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""
UV_LAUNCHER = f"""#!{PY}
# -*- coding: utf-8 -*-
import sys
from rage.__main__ import main
if __name__ == "__main__":
    if sys.argv[0].endswith("-script.pyw"):
        sys.argv[0] = sys.argv[0][:-11]
    elif sys.argv[0].endswith(".exe"):
        sys.argv[0] = sys.argv[0][:-4]
    sys.exit(main())
"""
Row = tuple[str, float, float, float, float]  # case, rage's and the peer's medians, ratios


def import_self_us(argv: list[str], env: dict[str, str]) -> int:
    """Median over 5 runs of the summed ``-X importtime`` self times, in microseconds."""
    totals = []
    for _ in range(5):
        proc = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], env=env,
                              capture_output=True, check=True, stdin=subprocess.DEVNULL)
        total = 0
        for line in proc.stderr.decode().splitlines():
            head = line.split("|", 1)[0]
            if line.startswith("import time:") and head[12:].strip().isdigit():
                total += int(head[12:])
        totals.append(total)
    return int(statistics.median(totals))


def timed_pipe(argv: list[str], env: dict[str, str], shell: bool = False,
               stdout: int = subprocess.DEVNULL) -> float:
    """Run ``argv`` without a terminal: stdout to /dev/null (rage hands the child the
    device itself) or, with ``stdout=subprocess.PIPE``, to a pipe (rage relays it)."""
    t0 = time.perf_counter()
    subprocess.run(argv if not shell else ["sh", "-c", argv[0]], env=env, check=True,
                   stdin=subprocess.DEVNULL, stdout=stdout)
    return time.perf_counter() - t0


def timed_pty(argv: list[str], env: dict[str, str]) -> float:
    """Run ``argv`` as a terminal emulator runs a shell: a new session whose controlling
    terminal is a pty opened here (stdin, stdout and stderr), draining the screen as it
    comes. The first open of the pty after ``setsid`` (posix_spawn's order) makes it the
    controlling terminal, with the new session's group in the foreground."""
    master, slave = os.openpty()
    name = os.ttyname(slave)
    path = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
    assert path, argv[0]
    t0 = time.perf_counter()
    pid = os.posix_spawn(path, argv, env, setsid=True, file_actions=[
        (os.POSIX_SPAWN_OPEN, 0, name, os.O_RDWR, 0),
        (os.POSIX_SPAWN_DUP2, 0, 1),
        (os.POSIX_SPAWN_DUP2, 0, 2),
    ])
    os.close(slave)
    while True:
        r, _, _ = select.select([master], [], [], 0.5)
        if r:
            try:
                if not os.read(master, 1 << 16):
                    break
            except OSError:  # EIO: every slave descriptor is closed
                break
        elif os.waitpid(pid, os.WNOHANG)[0]:
            pid = 0
            break
    if pid:
        os.waitpid(pid, 0)
    dt = time.perf_counter() - t0
    os.close(master)
    return dt


def load_average() -> str:
    try:
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def install_shim(bin_dir: Path) -> Path:
    """The real shim script for ``true``, as ``rage shim install true`` writes it."""
    from rage.record.shims import render

    bin_dir.mkdir()
    shim = bin_dir / "true"
    shim.write_text(render("true", python=PY))
    shim.chmod(0o700)
    return shim


def with_cpu(fn: Callable[[], float]) -> tuple[float, float]:
    """``fn()``'s wall time and the CPU seconds of the processes it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = fn()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compare(name: str, reps: int, ours: Callable[[], float], peer: Callable[[], float],
            peer_name: str) -> Row:
    a: list[tuple[float, float]] = []
    b: list[tuple[float, float]] = []
    for i in range(reps):
        if i % 2:
            b.append(with_cpu(peer))
            a.append(with_cpu(ours))
        else:
            a.append(with_cpu(ours))
            b.append(with_cpu(peer))
    ma, mb = statistics.median(w for w, _ in a), statistics.median(w for w, _ in b)
    ca, cb = statistics.median(c for _, c in a), statistics.median(c for _, c in b)
    return (f"{name} vs {peer_name}", ma, mb, ma / mb, ca / cb if cb else float("nan"))


def terminal_rows(reps: int, env: dict[str, str], shim_env: dict[str, str]) -> list[Row]:
    """Start-up on a terminal, every case against `script -qec true` on the same kind of
    terminal, the bare interpreter among them for scale."""
    return [
        compare("the real shim script `true`, on a terminal", reps,
                lambda: timed_pty(["true"], shim_env),
                lambda: timed_pty(SCRIPT, env), "script -qec true"),
        compare("rage run -- true (python -I -S, as a shim), on a terminal", reps,
                lambda: timed_pty([*SHIM, "true"], env),
                lambda: timed_pty(SCRIPT, env), "script -qec true"),
        compare("bare interpreter: python -I -S -c pass, on a terminal", reps,
                lambda: timed_pty(BARE, env),
                lambda: timed_pty(SCRIPT, env), "script -qec true"),
    ]


def no_terminal_rows(reps: int, env: dict[str, str]) -> list[Row]:
    """Start-up without a terminal: stdout on /dev/null (the command gets the device
    itself) and on a pipe (relayed), against `script -qec true` in the same conditions."""
    pipe = subprocess.PIPE
    return [
        compare("rage run -- true (python -I -S, as a shim), stdout /dev/null", reps,
                lambda: timed_pipe([*SHIM, "true"], env),
                lambda: timed_pipe(SCRIPT, env), "script -qec true"),
        compare("rage run -- true (python -I -S, as a shim), stdout a pipe", reps,
                lambda: timed_pipe([*SHIM, "true"], env, stdout=pipe),
                lambda: timed_pipe(SCRIPT, env, stdout=pipe), "script -qec true"),
    ]


def install_launchers(bin_dir: Path) -> dict[str, Path]:
    """``rage`` as installed beside this interpreter (bin/rage, a script of its own), and the
    console script pip and uv would write for the entry point rage.__main__:main."""
    bin_dir.mkdir()
    out = {}
    installed = Path(PY).with_name("rage")
    if installed.is_file():
        out["installed"] = installed
    for name, text in (("pip", PIP_LAUNCHER), ("uv", UV_LAUNCHER)):
        path = bin_dir / f"rage-{name}"
        path.write_text(text)
        path.chmod(0o700)
        out[name] = path
    return out


def console_rows(reps: int, env: dict[str, str], launchers: dict[str, Path]) -> list[Row]:
    """The console script (`rage run -- true`) against `python -c pass` of the same
    interpreter, on a pipe and on a terminal (goal: within 1.3x)."""
    pipe = subprocess.PIPE
    rows = []
    for name, path in launchers.items():
        argv = [str(path), "run", "--", "true"]
        rows += [
            compare(f"rage run -- true, {name} launcher, pipe", reps,
                    lambda a=argv: timed_pipe(a, env, stdout=pipe),  # type: ignore[misc]
                    lambda: timed_pipe(PASS, env, stdout=pipe), "python -c pass"),
            compare(f"rage run -- true, {name} launcher, terminal", reps,
                    lambda a=argv: timed_pty(a, env),  # type: ignore[misc]
                    lambda: timed_pty(PASS, env), "python -c pass"),
        ]
    return rows


def _run_counted(argv: list[str], env: dict[str, str], terminal: bool) -> tuple[float, int]:
    """Run ``argv`` (stdout a pipe drained here, or a terminal as in :func:`timed_pty`);
    the CPU seconds and minor faults of its whole process tree."""
    if terminal:
        master, slave = os.openpty()
        name = os.ttyname(slave)
        pid = os.posix_spawn(argv[0], argv, env, setsid=True, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, name, os.O_RDWR, 0), (os.POSIX_SPAWN_DUP2, 0, 1),
            (os.POSIX_SPAWN_DUP2, 0, 2)])
        os.close(slave)
        src = master
    else:
        src, w = os.pipe()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0), (os.POSIX_SPAWN_DUP2, w, 1)])
        os.close(w)
    while True:
        try:
            if not os.read(src, 1 << 16):
                break
        except OSError:  # EIO: the terminal's last slave descriptor closed
            break
    os.close(src)
    _, _, ru = os.wait4(pid, 0)
    return ru.ru_utime + ru.ru_stime, ru.ru_minflt


def _one_earlier_run(home: Path) -> Callable[[], None]:
    """Keep the history of app ``true`` at the one run it holds now."""
    runs = home / "true" / "runs"
    keep = {p.name for p in runs.iterdir()}

    def reset() -> None:
        for p in runs.iterdir():
            if p.name not in keep:
                shutil.rmtree(p)
    return reset


def _instructions(argv: list[str], env: dict[str, str], terminal: bool) -> int:
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv]
    r, w = os.pipe()
    if terminal:  # valgrind's report goes around the terminal, to our pipe
        cmd = ["script", "-qec", f"{' '.join(cmd)} 2>/dev/fd/{w}", "/dev/null"]
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=w, pass_fds=(w,) if terminal else ())
    os.close(w)
    with os.fdopen(r) as err:
        text = err.read()
    assert proc.stdout is not None
    proc.stdout.read()
    proc.wait()
    for line in text.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1])
    raise RuntimeError(f"no callgrind total in: {text[-500:]}")


def cost_rows(runs: int, env: dict[str, str], home: Path) -> None:
    """`rage run -- true` (bin/rage) against `python -c pass`: CPU, faults, instructions."""
    installed = Path(PY).with_name("rage")
    if not installed.is_file():
        sys.exit("--cost needs rage installed beside this interpreter (a venv with the wheel)")
    rage_argv = [str(installed), "run", "--", "true"]
    timed_pipe(rage_argv, env)
    stamp = prebuild_stamp(str(home))
    for _ in range(300):  # the home's first run started the report prebuild: let it end
        if os.path.exists(stamp):
            break
        time.sleep(0.1)
    reset = _one_earlier_run(home)
    print(f"\nwhat it costs, {runs} interleaved runs, medians, {load_average()}")
    print(f"{'case':<48} {'cpu':>8} {'peer':>8} {'ratio':>6} {'faults':>7} {'peer':>6}")
    for terminal in (False, True):
        ours: list[tuple[float, int]] = []
        peer: list[tuple[float, int]] = []
        for i in range(runs):
            pair = [(ours, rage_argv), (peer, PASS)]
            for out, argv in pair if i % 2 == 0 else pair[::-1]:
                out.append(_run_counted(argv, env, terminal))
                reset()
        cpu = statistics.median(c for c, _ in ours)
        cpu_peer = statistics.median(c for c, _ in peer)
        where = "a terminal" if terminal else "a pipe"
        print(f"{'rage run -- true vs python -c pass, ' + where:<48} {cpu * 1000:>6.2f}ms "
              f"{cpu_peer * 1000:>6.2f}ms {cpu / cpu_peer:>6.2f} "
              f"{statistics.median(f for _, f in ours):>7.0f} "
              f"{statistics.median(f for _, f in peer):>6.0f}")
    print(f"(after the runs: {load_average()})")
    if not shutil.which("valgrind"):
        return
    cg_env = {**env, "PYTHONHASHSEED": "0"}
    for terminal in (False, True):
        counts = []
        for argv in (rage_argv, PASS):
            counts.append(statistics.median(_instructions(argv, cg_env, terminal)
                                            for _ in range(3)))
            reset()
        where = "a terminal" if terminal else "a pipe"
        print(f"callgrind, {where}: rage run -- true {counts[0] / 1e6:.1f}M, python -c pass "
              f"{counts[1] / 1e6:.1f}M, {counts[0] / counts[1]:.2f}x")


def print_rows(rows: list[Row]) -> None:
    print(f"{'case':<70} {'rage':>9} {'peer':>9} {'ratio':>6} {'cpu':>6}")
    for name, a, b, r, c in rows:
        print(f"{name:<70} {a * 1000:>7.1f}ms {b * 1000:>7.1f}ms {r:>6.2f} {c:>6.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--runs", type=int, default=1, help="repeat the start-up tables")
    ap.add_argument("--startup-only", action="store_true",
                    help="only the start-up cases (no 200 MB throughput cases)")
    ap.add_argument("--big-reps", type=int, default=5)
    ap.add_argument("--cost", type=int, default=0, metavar="N",
                    help="only CPU time, faults and instructions of the installed rage, N runs")
    ap.add_argument("--mb", type=int, default=200)
    args = ap.parse_args()
    if not shutil.which("script"):
        sys.exit("needs script(1) from util-linux")
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        # no RAGE_* settings and no config file: the path most recorded commands take
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("RAGE_") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(RAGE_HOME=str(t / "home"), RAGE_CONFIG=os.devnull)
        install_shim(t / "bin")
        launchers = install_launchers(t / "console")
        shim_env = {**env, "PATH": f"{t / 'bin'}{os.pathsep}{env.get('PATH', os.defpath)}"}
        if args.cost:
            cost_rows(args.cost, env, t / "home")
            return
        timed_pipe([*SHIM, "true"], env)  # the first run of an app makes a retention pass
        timed_pipe(["true"], shim_env)  # and the shim's first run probes `true --version`
        for run in range(args.runs):
            print(f"\nrun {run + 1} of {args.runs}, {load_average()}")
            bare = statistics.median(timed_pty(BARE, env) for _ in range(5))
            plain = statistics.median(timed_pty(PASS, env) for _ in range(5))
            print(f"bare interpreter start-up, on a terminal: python -I -S -c pass "
                  f"{bare * 1000:.1f} ms, python -c pass {plain * 1000:.1f} ms")
            print_rows(console_rows(args.reps, env, launchers)
                       + terminal_rows(args.reps, env, shim_env)
                       + no_terminal_rows(args.reps, env))
            print(f"(after the run: {load_average()})")
        if args.startup_only:
            return
        big = t / "big.bin"
        block = os.urandom(1 << 20)
        with open(big, "wb") as f:
            for _ in range(args.mb):
                f.write(block)
        rows = [
            compare("rage run -- true (python -m rage)", args.reps,
                    lambda: timed_pipe([*RAGE, "true"], env),
                    lambda: timed_pipe(["script", "-qec", "true", "/dev/null"], env),
                    "script -qec true"),
            compare("rage run -- true (python -m rage)", args.reps,
                    lambda: timed_pipe([*RAGE, "true"], env),
                    lambda: timed_pipe([PY, "-c", "pass"], env), "python3 -c pass"),
            compare("rage run -- true (python -m rage), on a terminal", args.reps,
                    lambda: timed_pty([*RAGE, "true"], env),
                    lambda: timed_pty([PY, "-c", "pass"], env), "python3 -c pass"),
            compare("bare interpreter: python -I -S -c pass", args.reps,
                    lambda: timed_pipe([PY, "-I", "-S", "-c", "pass"], env),
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
        imports = [
            ("shim: python -I -S -c ... run -- true", import_self_us([*SHIM, "true"], env)),
            ("python -I -S -c pass", import_self_us([PY, "-I", "-S", "-c", "pass"], env)),
            ("python -m rage run -- true", import_self_us([*RAGE, "true"], env)),
            ("python -c pass", import_self_us([PY, "-c", "pass"], env)),
        ]
    print(f"\n{load_average()}")
    print_rows(rows)
    print(f"\n{'-X importtime, sum of self times (median of 5)':<70} {'ms':>9}")
    for name, us in imports:
        print(f"{name:<70} {us / 1000:>9.1f}")


if __name__ == "__main__":
    main()
