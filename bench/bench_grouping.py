"""Grouping quality of the crash signatures on a generated, labelled set of failures.

    python3 bench/bench_grouping.py [--seed 1] [--scale 1.0] [--show 5]

Dozens of causes (Python tracebacks, plain non-zero exits with messages full of values,
fatal signals with and without faulthandler dumps, app-set fingerprints), each reported many
times the way real reports of one bug differ: other home directories and OSes (Windows
paths), source checkout or site-packages install, other Python versions, line numbers
shifted by edits, other PIDs, times, durations, addresses, UUIDs, URLs, inputs, app
versions, recursion depths, extra log lines around the error. Among the causes are near
misses that must stay apart: the same exception in another function, the same message from
another subcommand, another exit code, another signal.

Reported: pairwise precision (of the pairs put in one group, the share that are one cause)
and recall (of the pairs that are one cause, the share put in one group); goal >= 0.98 and
>= 0.95. With ``--show`` the worst splits and merges are printed to see why.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rage.server.signature import compute

Case = tuple[dict[str, Any], dict[str, str]]
Maker = Callable[[random.Random], Case]

HOMES = ["/home/alice", "/home/bob", "/Users/carol", "~", "/root", "C:\\Users\\dave"]
PYS = ["3.10", "3.11", "3.12", "3.13"]


def _home(rng: random.Random) -> str:
    return rng.choice(HOMES)


def _join(home: str, *parts: str) -> str:
    sep = "\\" if home.startswith("C:") else "/"
    return sep.join([home, *parts])


def _app_file(rng: random.Random, app: str, module: str) -> str:
    home = _home(rng)
    if rng.random() < 0.4:  # installed rather than run from a checkout
        base = _join(home, ".venv", "lib", f"python{rng.choice(PYS)}", "site-packages")
    else:
        base = _join(home, rng.choice(["src", "work", "code/projects"]), app)
    return _join(base, app, *module.split(".")) + ".py"


def _lib_file(rng: random.Random, module: str) -> str:
    py = rng.choice(PYS)
    if rng.random() < 0.5:
        return f"/usr/lib/python{py}/{module.replace('.', '/')}.py"
    return _join(_home(rng), ".venv", "lib", f"python{py}", "site-packages",
                 *module.split(".")) + ".py"


def _noise(rng: random.Random) -> str:
    t = (f"2026-0{rng.randint(1, 9)}-{rng.randint(10, 28)}T{rng.randint(10, 23)}:"
         f"0{rng.randint(0, 9)}")
    return "".join(f"{t}:{rng.randint(10, 59)}Z INFO step {rng.randint(1, 999)} done in "
                   f"{rng.random() * 9:.2f}s\n" for _ in range(rng.randint(0, 4)))


def _run(argv: list[str], **kw: Any) -> dict[str, Any]:
    return {"argv": argv, "exit_code": 1, "signal": None, "status": "failed", **kw}


def _manifest(app: str, rng: random.Random, run: dict[str, Any], **kw: Any) -> dict[str, Any]:
    version = f"{rng.randint(1, 2)}.{rng.randint(0, 9)}.{rng.randint(0, 20)}"
    return {"schema": 1, "app": app, "app_version": version, "run": run, **kw}


# -- Python tracebacks --------------------------------------------------------------------

def python_cause(app: str, exc: str, frames: list[str], *, libs: list[tuple[str, str]],
                 message: Callable[[random.Random], str], sub: str = "run",
                 recursive: bool = False) -> Maker:
    """``frames`` are "module:function", outermost first; ``libs`` library frames placed
    somewhere between them (which and how many vary with the library's version)."""

    def make(rng: random.Random) -> Case:
        lines = ["Traceback (most recent call last):"]
        chosen = list(frames)
        if recursive:
            chosen += [chosen[-1]] * rng.randint(5, 40)
        for i, fr in enumerate(chosen):
            module, func = fr.split(":")
            lines.append(f'  File "{_app_file(rng, app, module)}", line '
                         f"{rng.randint(10, 400)}, in {func}")
            lines.append(f"    {func}_call(x{rng.randint(0, 9)})")
            if i == len(chosen) // 2:
                for lib_mod, lib_func in libs[:rng.randint(0, len(libs))]:
                    lines.append(f'  File "{_lib_file(rng, lib_mod)}", line '
                                 f"{rng.randint(10, 2000)}, in {lib_func}")
        if rng.random() < 0.3:
            lines.append("    " + "^" * rng.randint(3, 30))
        lines.append(f"{exc}: {message(rng)}")
        tb = "\n".join(lines) + "\n"
        if rng.random() < 0.2:  # chained: the cause's traceback comes first
            tb = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
                  f"OSError: [Errno {rng.randint(1, 99)}] x\n\nDuring handling of the above "
                  "exception, another exception occurred:\n\n") + tb
        argv = [app, sub, f"--id={rng.randint(1, 10**6)}"]
        if rng.random() < 0.5:
            texts = {"run/traceback.txt": tb, "run/stderr.log": _noise(rng) + tb}
        else:
            texts = {"run/stderr.log": _noise(rng) + tb}
        return _manifest(app, rng, _run(argv)), texts

    return make


# -- plain exits --------------------------------------------------------------------------

def _values(rng: random.Random) -> dict[str, str]:
    return {
        "path": _join(_home(rng), "data", f"file{rng.randint(1, 999)}.db"),
        "n": str(rng.randint(1, 100000)), "pid": str(rng.randint(2, 4 * 10**6)),
        "ip": f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
        "port": str(rng.choice([80, 443, 5432, 8080])),
        "hex": hex(rng.getrandbits(48)), "sha": f"{rng.getrandbits(160):040x}",
        "uuid": "-".join(f"{rng.getrandbits(b * 4):0{b}x}" for b in (8, 4, 4, 4, 12)),
        "url": f"https://{rng.choice(['api', 'cdn', 'eu'])}.example.org/v{rng.randint(1, 3)}/"
               f"items/{rng.randint(1, 9999)}?page={rng.randint(1, 9)}",
        "time": f"{rng.randint(10, 23)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}",
        "date": f"2026-{rng.randint(10, 12)}-{rng.randint(10, 28)}T0{rng.randint(0, 9)}:"
                f"{rng.randint(10, 59)}:{rng.randint(10, 59)}Z",
        "dur": f"{rng.randint(1, 120)}{rng.choice(['s', 'ms'])}",
        "name": rng.choice(["'report.csv'", "'users'", "\"main\"", "'eu-west-1'"]),
        "size": f"{rng.randint(1, 999)} {rng.choice(['MB', 'KiB', 'bytes'])}",
        "host": rng.choice(["api", "db1", "cache-3"]) + "."
                + rng.choice(["example.org", "corp.internal", "acme.io"]),
        "mdate": rng.choice(["Mar 5 2026", "Dec 24, 2025", "Tue, 3 Feb 2026", "Jul 14"]),
        # a bare word: nothing marks it as a value (no quotes, no digits): expected to split
        "word": rng.choice(["origin", "upstream", "backup"]),
    }


def exit_cause(app: str, sub: str, code: int, template: str, *, after: str = "") -> Maker:
    def make(rng: random.Random) -> Case:
        line = template.format(**_values(rng))
        if rng.random() < 0.3:
            line = f"\x1b[31m{line}\x1b[0m"
        prefix = rng.choice(["", f"{app}: ", f"{app}[{rng.randint(2, 99999)}]: "])
        tail = after.format(**_values(rng)) if after else ""
        stderr = _noise(rng) + prefix + line + "\n" + tail
        program = rng.choice([app, f"/usr/local/bin/{app}", f"./{app}"])
        argv = [program, sub, *rng.sample(["-v", "--force", "--all", "--retry=3"],
                                          rng.randint(0, 2))]
        return _manifest(app, rng, _run(argv, exit_code=code)), {"run/stderr.log": stderr}

    return make


# -- fatal signals ------------------------------------------------------------------------

def signal_cause(app: str, sig: int, top: list[str] | None) -> Maker:
    def make(rng: random.Random) -> Case:
        texts = {}
        if top is not None:
            lines = ["Fatal Python error: Segmentation fault", "",
                     f"Current thread 0x{rng.getrandbits(48):012x} (most recent call first):"]
            for fr in top:
                module, func = fr.split(":")
                path = (_lib_file(rng, module) if "." in module
                        else _app_file(rng, app, module))
                lines.append(f'  File "{path}", line {rng.randint(1, 900)} in {func}')
            lines.append(f'  File "{_app_file(rng, app, "cli")}", line {rng.randint(1, 99)}'
                         " in main")
            texts["run/stderr.log"] = _noise(rng) + "\n".join(lines) + "\n"
        else:
            texts["run/stderr.log"] = _noise(rng)
        run = _run([app, rng.choice(["render", "serve"]), str(rng.randint(1, 99))],
                   exit_code=None, signal=sig, status="crashed")
        return _manifest(app, rng, run), texts

    return make


def fingerprint_cause(app: str, fp: str) -> Maker:
    def make(rng: random.Random) -> Case:
        m, texts = exit_cause(app, "x", rng.randint(1, 3), "error: {n} {path}")(rng)
        m["fingerprint"] = fp
        return m, texts

    return make


def _msg(template: str) -> Callable[[random.Random], str]:
    return lambda rng: template.format(**_values(rng))


def causes() -> list[Maker]:
    click_libs = [("click.core", "invoke"), ("click.core", "main"), ("click.decorators",
                                                                    "new_func")]
    http_libs = [("requests.api", "get"), ("requests.sessions", "request"),
                 ("urllib3.connectionpool", "urlopen")]
    py = [
        python_cause("mytool", "KeyError", ["cli:main", "config:load", "config:get"],
                     libs=click_libs, message=_msg("{name}")),
        python_cause("mytool", "KeyError", ["cli:main", "config:load", "config:merge"],
                     libs=click_libs, message=_msg("{name}")),  # another function
        python_cause("mytool", "ValueError", ["cli:main", "config:load", "config:get"],
                     libs=click_libs, message=_msg("bad value {n}")),  # another exception
        python_cause("mytool", "requests.exceptions.ConnectionError",
                     ["cli:main", "sync:push", "net:post"], libs=http_libs,
                     message=_msg("HTTPSConnectionPool(host={ip}, port={port})")),
        python_cause("mytool", "requests.exceptions.ReadTimeout",
                     ["cli:main", "sync:push", "net:post"], libs=http_libs,
                     message=_msg("read timeout={dur}")),
        python_cause("mytool", "FileNotFoundError", ["cli:main", "store:open_db"],
                     libs=[], message=_msg("[Errno 2] No such file or directory: {path}")),
        python_cause("mytool", "PermissionError", ["cli:main", "store:open_db"],
                     libs=[], message=_msg("[Errno 13] Permission denied: {path}")),
        python_cause("mytool", "RecursionError", ["cli:main", "tree:walk"], libs=[],
                     message=_msg("maximum recursion depth exceeded"), recursive=True),
        python_cause("mytool", "sqlite3.OperationalError", ["cli:main", "store:save"],
                     libs=[], message=_msg("database is locked (after {dur})")),
        python_cause("mytool", "UnicodeDecodeError", ["cli:main", "importer:read_csv"],
                     libs=[("codecs", "decode")], message=_msg(
                         "'utf-8' codec can't decode byte {hex} in position {n}")),
        python_cause("imgtool", "MemoryError", ["app:run", "resize:scale"], libs=[],
                     message=lambda _r: ""),
        python_cause("imgtool", "ZeroDivisionError", ["app:run", "resize:ratio"], libs=[],
                     message=_msg("division by zero")),
        python_cause("imgtool", "AttributeError", ["app:run", "plugins:load", "plugins:init"],
                     libs=[("importlib.__init__", "import_module")],
                     message=_msg("'NoneType' object has no attribute {name}")),
        python_cause("imgtool", "AssertionError", ["app:run", "resize:check"], libs=[],
                     message=_msg("expected {n} got {n}")),
        python_cause("imgtool", "TypeError", ["app:run", "export:write"], libs=[],
                     message=_msg("unsupported operand type(s) for +: 'int' and 'str'")),
        python_cause("netctl", "KeyError", ["main:main", "api:fetch"], libs=http_libs,
                     message=_msg("{name}"), sub="fetch"),
        python_cause("netctl", "json.decoder.JSONDecodeError", ["main:main", "api:fetch"],
                     libs=[("json.__init__", "loads"), ("json.decoder", "decode")],
                     message=_msg("Expecting value: line 1 column {n} (char {n})")),
    ]
    exits = [
        exit_cause("mytool", "sync", 1, "error: cannot open {path}: permission denied"),
        exit_cause("mytool", "push", 1, "error: cannot open {path}: permission denied"),
        exit_cause("mytool", "sync", 2, "error: cannot open {path}: permission denied"),
        exit_cause("mytool", "sync", 1, "error: connection to {ip}:{port} timed out after "
                   "{dur} (pid {pid})", after="hint: check your network\n"),
        exit_cause("mytool", "sync", 1, "fatal: remote {url} answered 503 at {date}"),
        exit_cause("mytool", "gc", 1, "fatal: lock {path}.lock held by pid {pid} since {time}"),
        exit_cause("mytool", "gc", 1, "error: object {sha} is corrupt"),
        exit_cause("mytool", "gc", 1, "error: job {uuid} failed: {size} left on device"),
        exit_cause("netctl", "fetch", 3, "Error: HTTP 404 for {url}"),
        exit_cause("netctl", "fetch", 3, "Error: TLS handshake with {ip} failed"),
        exit_cause("netctl", "login", 4, "Error: invalid token for user {name}",
                   after="See {url} for help\n"),
        exit_cause("netctl", "login", 4, "Error: account {name} is locked until {date}"),
        exit_cause("imgtool", "convert", 1, "convert: unsupported format in {path} at "
                   "offset {hex}"),
        exit_cause("imgtool", "convert", 1, "convert: image {path} is too large ({size})"),
        exit_cause("imgtool", "render", 137, "render: worker {pid} killed after {dur}"),
        exit_cause("netctl", "deploy", 1, "error: certificate for {host} expired on {mdate}"),
        exit_cause("netctl", "deploy", 1, "error: {host} refused the upload ({size})"),
        exit_cause("mytool", "pull", 1, "error: no such remote: {word}"),
    ]
    signals = [
        signal_cause("imgtool", 11, ["PIL.Image:resize", "resize:scale"]),
        signal_cause("imgtool", 11, ["numpy.core.multiarray:copyto", "export:write"]),
        signal_cause("imgtool", 6, ["PIL.Image:resize", "resize:scale"]),
        signal_cause("netctl", 11, None),
        signal_cause("netctl", 9, None),
    ]
    fingerprints = [fingerprint_cause("mytool", "db-locked"),
                    fingerprint_cause("mytool", "quota-exceeded")]
    return py + exits + signals + fingerprints


def pairs(n: int) -> int:
    return n * (n - 1) // 2


def evaluate(labels: list[Any], groups: list[str]) -> tuple[float, float]:
    both = Counter(zip(labels, groups, strict=True))
    same_group = sum(pairs(n) for n in Counter(groups).values())
    same_cause = sum(pairs(n) for n in Counter(labels).values())
    together = sum(pairs(n) for n in both.values())
    return (together / same_group if same_group else 1.0,
            together / same_cause if same_cause else 1.0)


def per_language() -> bool:
    """Pairwise precision and recall of the receiver's signature (algorithm version 2) for
    the crash reports of each runtime: the labelled samples tests/test_crashes.py builds
    (two variants of each cause: another directory, lines shifted, other values and argv;
    several causes per language), each signed as an upload of a failed run would be."""
    import tempfile

    from tests import test_crashes as tc

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        home = base / "rage-home"
        samples = tc._samples_go() + tc._samples_documented() + tc._samples_python(base, home)
        for tools, collect in ((("gcc",), tc._samples_c), (("g++",), tc._samples_cpp),
                               (("rustc",), tc._samples_rust), (("node",), tc._samples_node),
                               (("java", "javac"), tc._samples_java)):
            if tc._have(*tools):
                samples += collect(base, home)
    by_lang: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for lang, label, app, text in samples:
        manifest = {"app": app, "run": {"argv": [app], "status": "crashed", "exit_code": 1}}
        sig = compute(manifest, {"run/stderr.log": text})
        labels, groups = by_lang[lang]
        labels.append(label)
        groups.append(sig.hash)
    ok = True
    print(f"{'language':<10} {'crashes':>7} {'causes':>6} {'signatures':>10} "
          f"{'precision':>9} {'recall':>7}")
    for lang, (labels, groups) in sorted(by_lang.items()):
        precision, recall = evaluate(labels, groups)
        ok = ok and precision >= 0.98 and recall >= 0.95
        print(f"{lang:<10} {len(labels):>7} {len(set(labels)):>6} {len(set(groups)):>10} "
              f"{precision:>9.3f} {recall:>7.3f}")
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply reports per cause")
    ap.add_argument("--show", type=int, default=0, help="print the worst splits and merges")
    ap.add_argument("--languages", action="store_true",
                    help="also: real crashing programs of every runtime installed here "
                         "(C, C++, Rust, Node, Java, Python), recorded by `rage run`, and the "
                         "documented Go, .NET and Ruby texts, per language")
    args = ap.parse_args()
    if args.languages:
        ok = per_language()
        if not ok:
            sys.exit(1)
    rng = random.Random(args.seed)
    makers = causes()
    labels: list[int] = []
    groups: list[str] = []
    texts: dict[str, str] = {}
    for cause, make in enumerate(makers):
        for _ in range(max(2, int(rng.randint(5, 30) * args.scale))):
            manifest, members = make(rng)
            sig = compute(manifest, members)
            labels.append(cause)
            groups.append(sig.hash)
            texts[sig.hash] = sig.text
    precision, recall = evaluate(labels, groups)
    print(f"{len(labels)} failures from {len(makers)} causes -> {len(set(groups))} signatures")
    print(f"pairwise precision {precision:.4f} (goal >= 0.98)   "
          f"recall {recall:.4f} (goal >= 0.95)")
    if args.show:
        by_cause: dict[int, Counter[str]] = defaultdict(Counter)
        by_group: dict[str, set[int]] = defaultdict(set)
        for label, group in zip(labels, groups, strict=True):
            by_cause[label][group] += 1
            by_group[group].add(label)
        split = sorted(by_cause.items(), key=lambda kv: -len(kv[1]))[:args.show]
        for label, gs in split:
            if len(gs) > 1:
                print(f"cause {label} split into {len(gs)}:")
                for g, n in gs.most_common(4):
                    print(f"   {n:4d}  {texts[g]}")
        for g, ls in by_group.items():
            if len(ls) > 1:
                print(f"merged causes {sorted(ls)}: {texts[g]}")
    sys.exit(0 if precision >= 0.98 and recall >= 0.95 else 1)


if __name__ == "__main__":
    main()
