"""Redaction recall and benign-kept figures on the independent corpus (tests/corpus/).

    python3 bench/bench_redact_recall.py [--no-e2e] [--kinds]

Not a timing benchmark: it counts. In process, through ``Redactor`` (the public API): every
catalogued sample in every token context, the structural shapes, argv as the report redacts
it, environment values, and the benign corpus. End to end (unless ``--no-e2e``): every sample
planted once per surface in real runs (stdout and stderr through pipes, terminal output
through a real pty, an attached log, argv, the environment, and, for URL-safe tokens, git
remote URLs the git collector reads), then ``rage report`` and every byte of every bundle
searched. A secret counts as removed only when no 12-character piece of it survives (escape
sequences and backspace overstrikes removed too). Prints one table per view; ``--kinds``
adds the per-kind rows.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # after PYTHONPATH: another rage tree can be measured

from rage.redact import Redactor  # noqa: E402
from tests.corpus.contexts import ARGV, STRUCTURAL, TOKEN_CONTEXTS, names, render, shown  # noqa: E402
from tests.corpus.secrets import SAMPLES, sample  # noqa: E402
from tests.test_redact_corpus import (  # noqa: E402
    BENIGN,
    BENIGN_ENV,
    CHILD,
    _argv_secret,
    _extract,
    _structural,
    drain,
    git_remote_plants,
    leaks,
    record_in_git_repo,
)
from tests.test_select import Pty  # noqa: E402

SURFACE_CONTEXTS = (
    "log-sentence",
    "ansi-color",
    "traceback-arg",
    "url-path",
    "json-list",
    "exception-message",
    "grep-color",
    "bare",
    "http-header",
    "cli-flag",
)


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:5.1f}%" if b else "    -"


def _table(title: str, rows: list[tuple[str, int, int]], what: str = "removed") -> None:
    print(f"\n{title}")
    width = max([len(r[0]) for r in rows] + [8])
    print(f"  {'':{width}}  {what:>8}  {'of':>6}  {'rate':>6}")
    for name, ok, total in rows:
        print(f"  {name:{width}}  {ok:8d}  {total:6d}  {_pct(ok, total)}")


def in_process(per_kind: dict[str, list[int]]) -> None:
    red = Redactor(pseudonymize=False)
    by_ctx: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name in sorted(SAMPLES):
        kind = SAMPLES[name][0]
        for ctx, template in TOKEN_CONTEXTS.items():
            _, secret, planted = sample(name)
            text = render(template, planted, kind, ctx)
            ok = leaks(shown(secret, ctx), red.text(text)) is None
            for acc in (by_ctx[ctx], per_kind[kind]):
                acc[0] += ok
                acc[1] += 1
    total = [sum(v[0] for v in by_ctx.values()), sum(v[1] for v in by_ctx.values())]
    _table(
        "Token contexts (in process, every sample x every context)",
        [(c, by_ctx[c][0], by_ctx[c][1]) for c in TOKEN_CONTEXTS] + [("ALL", total[0], total[1])],
    )

    rows = []
    for name in STRUCTURAL:
        text, secrets = _structural(name)
        out = red.text(text)
        rows.append((name, sum(leaks(s, out) is None for s in secrets), len(secrets)))
    rows.append(("ALL", sum(r[1] for r in rows), sum(r[2] for r in rows)))
    _table("Structural shapes (in process)", rows)

    argv_rows: list[tuple[str, int, int, int]] = []
    as_list = getattr(red, "argv", None)  # Redactor.argv: the engine branch; data() before
    for name, build in ARGV.items():
        secret = _argv_secret(name)
        argv = build(secret)
        clean = as_list(argv) if as_list else red.data({"argv": argv})["argv"]
        outs = (json.dumps(clean), shlex.join(clean))
        listed = (f"subprocess.CalledProcessError: Command '{argv!r}' returned non-zero exit "
                  f"status 1.\nargs: {json.dumps(argv)}\n")
        argv_rows.append(
            (
                name,
                int(all(leaks(secret, o) is None for o in outs)),
                int(leaks(secret, red.text("+ " + shlex.join(argv))) is None),
                int(leaks(secret, red.text(listed)) is None),
            )
        )
    _table(
        "argv forms (in process): as the stored argv list / as command-line text / printed as "
        "a list (a CalledProcessError)",
        [(n, a, 1) for n, a, _, _ in argv_rows]
        + [
            ("ALL (argv list)", sum(r[1] for r in argv_rows), len(argv_rows)),
            ("ALL (command-line text)", sum(r[2] for r in argv_rows), len(argv_rows)),
            ("ALL (printed list)", sum(r[3] for r in argv_rows), len(argv_rows)),
        ],
    )

    env_ok = [0, 0]
    for name in sorted(SAMPLES):
        kind, secret, planted = sample(name, "env")
        for env in ({names(kind)[0]: planted}, {"ACME_OPTS": f"-v {planted} -q"}):
            env_ok[0] += leaks(secret, json.dumps(red.data(env))) is None
            env_ok[1] += 1
    kept = sum(red.text(line) == line for _, line in BENIGN)
    kept_env = sum(red.data({k: v}) == {k: v} for k, v in BENIGN_ENV.items())
    _table(
        "Environment values (in process: named, and inside an options variable)",
        [("environment", env_ok[0], env_ok[1])],
    )
    _table(
        "Benign corpus (in process)",
        [("lines", kept, len(BENIGN)), ("environment", kept_env, len(BENIGN_ENV))],
        "kept",
    )


def end_to_end(per_kind: dict[str, list[int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGE_")}
        env |= {"RAGE_HOME": str(root / "home"), "RAGE_CONFIG": os.devnull}
        child = root / "tool.py"
        child.write_text(CHILD)
        plants: dict[str, list[tuple[str, str, str]]] = {}
        for surface in ("stdout", "stderr", "attach", "pty", "argv", "env"):
            made: list[tuple[str, str, str]] = []
            for i, name in enumerate(sorted(SAMPLES)):
                kind, secret, planted = sample(name, "bench-" + surface)
                ctx = SURFACE_CONTEXTS[i % len(SURFACE_CONTEXTS)]
                text = (
                    planted
                    if surface in {"argv", "env"}
                    else render(TOKEN_CONTEXTS[ctx], planted, kind)
                )
                made.append((name, secret, text))
            plants[surface] = made
        benign = [t for _, t in BENIGN]
        plan = {
            "stdout": [t for *_, t in plants["stdout"]] + benign,
            "stderr": [t for *_, t in plants["stderr"]],
            "attach": str(root / "app.log"),
            "attach_lines": [t for *_, t in plants["attach"]],
        }
        (root / "pipe.json").write_text(json.dumps(plan))
        (root / "pty.json").write_text(
            json.dumps({"stdout": [t for *_, t in plants["pty"]] + benign, "stderr": []})
        )
        argv: list[str] = []
        for i, (*_, t) in enumerate(plants["argv"]):
            argv += [["--token", t], [f"--api-key={t}"], [t]][i % 3]
        run_env = dict(env)
        for i, (name, _, t) in enumerate(plants["env"]):
            run_env[names(SAMPLES[name][0])[0] if i % 2 else f"ACME_SETTING_{i}"] = t

        cmd = [sys.executable, "-m", "rage"]
        subprocess.run(
            [
                *cmd,
                "run",
                "--attach",
                str(root / "app.log"),
                "--",
                sys.executable,
                str(child),
                str(root / "pipe.json"),
                *argv,
            ],
            env=run_env,
            cwd=root,
            capture_output=True,
            check=True,
            timeout=300,
        )
        bundles = {"pipe": _bundle(cmd, root, env, "pipe")}
        term = Pty(
            [*cmd, "run", "--", sys.executable, str(child), str(root / "pty.json")],
            env=env | {"TERM": "xterm-256color"},
        )
        try:
            drain(term, 300)
        finally:
            term.close()
        bundles["pty"] = _bundle(cmd, root, env, "pty")

        rows: list[tuple[str, int, int]] = []
        for surface, placed in plants.items():
            members = bundles["pty" if surface == "pty" else "pipe"]
            ok = 0
            for name, secret, _ in placed:
                removed = all(leaks(secret, text) is None for text in members.values())
                ok += removed
                per_kind[SAMPLES[name][0]][0] += removed
                per_kind[SAMPLES[name][0]][1] += 1
            rows.append((surface, ok, len(placed)))
        # collector data: every URL-safe token as the user or password of a git remote
        git_plants = git_remote_plants("bench-git", tuple(sorted(SAMPLES)))
        git_env = {k: v for k, v in env.items() if not k.startswith("GIT_")}
        git_members = record_in_git_repo(root, git_env, [url for *_, url in git_plants])
        ok = 0
        for name, secret, _ in git_plants:
            removed = all(leaks(secret, text) is None for text in git_members.values())
            ok += removed
            per_kind[SAMPLES[name][0]][0] += removed
            per_kind[SAMPLES[name][0]][1] += 1
        rows.append(("git remotes (collector)", ok, len(git_plants)))
        rows.append(("ALL", sum(r[1] for r in rows), sum(r[2] for r in rows)))
        _table("Surfaces end to end (rage run, then rage report: every member of the bundle)", rows)
        kept: list[tuple[str, int, int]] = []
        for mode, member in (("pipe", "run/stdout.log"), ("pty", "run/output.log")):
            lines = set(bundles[mode].get(member, "").replace("\r\n", "\n").splitlines())
            kept.append((f"{mode} ({member})", sum(t in lines for t in benign), len(benign)))
        _table("Benign corpus end to end", kept, "kept")


def _bundle(cmd: list[str], root: Path, env: dict[str, str], name: str) -> dict[str, str]:
    out = root / f"{name}.tar.zst"
    subprocess.run(
        [*cmd, "report", "--last", "--yes", "--output", str(out)],
        env=env,
        cwd=root,  # not the checkout: `python -m rage` would import the rage beside it
        capture_output=True,
        check=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    members = _extract(out, root / name)
    raw = subprocess.run(["zstd", "-dc", str(out)], check=True, capture_output=True).stdout
    members["<tar stream>"] = raw.decode("utf-8", "replace")
    return members


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-e2e", action="store_true", help="in-process figures only")
    ap.add_argument("--kinds", action="store_true", help="print the per-kind rows")
    args = ap.parse_args()
    random.seed(0)
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    in_process(per_kind)
    if not args.no_e2e:
        end_to_end(per_kind)
    full = sorted(k for k, (ok, n) in per_kind.items() if ok == n)
    rows = sorted(
        ((k, ok, n) for k, (ok, n) in per_kind.items()), key=lambda r: (r[1] / r[2], r[0])
    )
    if args.kinds:
        _table("Per kind (every context and surface)", rows)
    print(
        f"\nKinds fully removed (every context{'' if args.no_e2e else ' and surface'}): "
        f"{len(full)} of {len(per_kind)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
