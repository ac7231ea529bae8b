"""Benign damage on real logs: lines redaction changed, per source, through each way in.

    python3 bench/bench_redact_damage.py [DIR] [--report] [-v]

Not a timing benchmark: it counts. Each file of DIR (default: tests/corpus/real_logs/, a
sample; give it loghub's whole 2,000-line samples and a machine's /var/log for the full
figures) is redacted by the real CLI as a user would: `rage redact --no-pseudonyms FILE`, and
the same bytes through a pipe (`cat FILE | rage redact -`); with ``--report``, also recorded
by `rage run cat FILE` and reported (`rage report`: its run/stdout.log, other people's homes
made pseudonyms by design, not counted). A line is damaged if it does not come out as it went
in. Prints, per source, its lines, the damaged lines of each way and whether the file and the
pipe gave the same bytes; ``-v`` prints each damaged line. Runs in a throw-away RAGE_HOME and
an environment without the caller's variables (`rage redact` learns the environment's
secrets).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_HOMES = re.compile(rb"(/home/|/Users/)[A-Za-z0-9_][A-Za-z0-9_.\-]*")


def _rage(*args: str, env: dict[str, str], **kw: object) -> bytes:
    proc = subprocess.run([sys.executable, "-m", "rage", *args], env=env, capture_output=True,
                          check=False, **kw)  # type: ignore[call-overload]
    if proc.returncode:
        sys.exit(f"rage {args[0]} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout  # type: ignore[no-any-return]


def _damaged(src: bytes, out: bytes, homes: bool = False) -> list[tuple[bytes, bytes]] | None:
    """The lines that changed (None: the lines no longer align)."""
    a, b = src.split(b"\n"), out.split(b"\n")
    if len(a) != len(b):
        return None
    if homes:
        return [(x, y) for x, y in zip(a, b, strict=True)
                if _HOMES.sub(rb"\1~", x) != _HOMES.sub(rb"\1~", y)]
    return [(x, y) for x, y in zip(a, b, strict=True) if x != y]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", type=Path, default=ROOT / "tests" / "corpus" / "real_logs")
    ap.add_argument("--report", action="store_true", help="also rage run + rage report")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each damaged line")
    opts = ap.parse_args()
    files = sorted(p for p in opts.dir.iterdir() if p.is_file() and p.suffix != ".md")
    ways = ["file", "pipe", *(["report"] if opts.report else [])]
    print(f"{'source':40} {'lines':>7} " + " ".join(f"{w:>7}" for w in ways) + "  file=pipe")
    total = 0
    bad = dict.fromkeys(ways, 0)
    with tempfile.TemporaryDirectory() as home:
        env = {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8",
               "RAGE_HOME": f"{home}/rage", "RAGE_CONFIG": os.devnull,
               "PYTHONPATH": str(ROOT)}
        for path in files:
            src = path.read_bytes()
            outs = {"file": _rage("redact", "--no-pseudonyms", "-q", str(path), env=env)}
            with open(path, "rb") as f, subprocess.Popen(["cat"], stdin=f,
                                                         stdout=subprocess.PIPE) as cat:
                outs["pipe"] = _rage("redact", "--no-pseudonyms", "-q", "-", env=env,
                                     stdin=cat.stdout)
            if opts.report:
                _rage("run", "--app", "damage", "--", "cat", str(path), env=env)
                bundle = f"{home}/{path.name}.tar.zst"
                _rage("report", "--last", "--app", "damage", "--yes", "--output", bundle,
                      env=env)
                outs["report"] = subprocess.run(["tar", "--zstd", "-xOf", bundle,
                                                 "run/stdout.log"], capture_output=True,
                                                check=True).stdout
            n = src.count(b"\n")
            total += n
            row = []
            for w in ways:
                d = _damaged(src, outs[w], homes=w == "report")
                bad[w] += n if d is None else len(d)
                row.append(f"{'lines?' if d is None else len(d):>7}")
                if opts.verbose and d:
                    for x, y in d:
                        print(f"    {w}: {x!r}\n       -> {y!r}")
            same = "yes" if outs["file"] == outs["pipe"] else "NO"
            print(f"{path.name:40} {n:7} " + " ".join(row) + f"  {same}")
    print(f"{'all':40} {total:7} " + " ".join(f"{bad[w]:7}" for w in ways))
    print(f"{'damaged':40} {'':7} " + " ".join(f"{100 * bad[w] / max(total, 1):6.3f}%"
                                              for w in ways))


if __name__ == "__main__":
    main()
