"""Fidelity without a terminal: each case is a bash snippet run twice, once with a plain
`r() { "$@"; }` and once with `r` going through `rage run`, and the two runs must agree byte
for byte: stdout, stderr (less rage's own `rage: ...` hint lines), the exit status, the order
of interleaved writes, the files left behind, signal deaths as the shell reports them."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import rage_cmd

PLAIN = 'r() { "$@"; }'
WRAPPED = f'r() {{ {shlex.join(rage_cmd("run", "--"))} "$@"; }}'
PY = shlex.quote(sys.executable)

CASES: dict[str, str] = {
    # the child sees the write error itself, and so does its exit status
    "dev-full": "r /bin/echo hi > /dev/full; echo rc=$?",
    "closed-stdout": "r /bin/echo hi >&-; echo rc=$?",
    "closed-stderr": "r ls /no/such/dir 2>&-; echo rc=$?",
    "closed-stdin": "r cat <&-; echo rc=$?",
    "dev-null": "r sh -c 'echo gone; echo err >&2' >/dev/null; echo rc=$?",
    # cat refuses to copy a file onto itself only if it sees that file as its stdout
    "cat-f-onto-f": "printf 'abc\\n' > f; r cat f >> f; echo rc=$?; wc -c < f",
    # one stream when stdout and stderr are the same file or pipe: order kept
    "order-file": ("r sh -c 'for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done' > g 2>&1;"
                   " cat g"),
    "order-pipe": "r sh -c 'for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done' 2>&1 | cat",
    "order-python": (f"r {PY} -c 'import sys\nfor i in range(50): "
                     "(sys.stdout, sys.stderr)[i % 2].write(str(i) + chr(10))' 2>&1 | cat"),
    "separate-pipes": "{ r sh -c 'echo out; echo err >&2' | sed s/^/o:/; } 2>&1 | sort",
    "append-to-file": "echo first > h; r sh -c 'echo second' >> h; cat h",
    "stdin-binary": "printf '\\0\\1\\377\\n' | r od -An -c",
    "grep-status": "printf 'a\\nb\\n' | r grep -c zzz; echo rc=$?",
    # signal deaths, as the shell sees and reports them
    "segfault": f"r {PY} -c 'import ctypes; ctypes.string_at(0)'; echo rc=$?",
    "sigterm": "r sh -c 'kill -TERM $$'; echo rc=$?",
    "sigpipe": "r yes | head -c 4; echo \" ${PIPESTATUS[*]}\"",
    "sigpipe-cat": "r cat /dev/zero | head -c 3 | od -An -c; echo \"${PIPESTATUS[*]}\"",
    # a background process of the command keeps its output and lives on
    "background": "r sh -c '(sleep 0.3; echo late) & echo now' | cat; echo rc=$?",
    "background-subst": "x=$(r sh -c '(sleep 0.3; echo late) & echo now'); echo \"[$x]\"",
}

PID = re.compile(rb"\b\d{3,}\b")


def run_case(snippet: str, wrapper: str, cwd: Path) -> tuple[bytes, bytes, int]:
    cwd.mkdir()
    proc = subprocess.run(["bash", "-c", f"ulimit -c 0; {wrapper}\n{snippet}"], cwd=cwd,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=60,
                          check=False)
    err = b"".join(line for line in proc.stderr.splitlines(keepends=True)
                   if not line.startswith(b"rage: "))
    # bash names the dead command as written in `r`: the same once rage's prefix is gone
    err = err.replace(shlex.join(rage_cmd("run", "--")).encode() + b" ", b"")
    return proc.stdout, PID.sub(b"PID", err), proc.returncode


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_with_and_without_rage(name: str, tmp_path: Path) -> None:
    snippet = CASES[name]
    plain = run_case(snippet, PLAIN, tmp_path / "plain")
    wrapped = run_case(snippet, WRAPPED, tmp_path / "wrapped")
    assert wrapped == plain
    plain_files = sorted(p.name for p in (tmp_path / "plain").iterdir())
    for f in plain_files:
        assert (tmp_path / "wrapped" / f).read_bytes() == (tmp_path / "plain" / f).read_bytes()
    assert sorted(p.name for p in (tmp_path / "wrapped").iterdir()) == plain_files


def test_the_cases_say_something(tmp_path: Path) -> None:
    """The peer side really shows what each case is about (so agreement means something)."""
    out, err, _ = run_case(CASES["dev-full"], PLAIN, tmp_path / "a")
    assert out == b"rc=1\n" and b"No space left on device" in err
    out, err, _ = run_case(CASES["cat-f-onto-f"], PLAIN, tmp_path / "b")
    assert out == b"rc=1\n4\n" and b"input file is output file" in err
    out, _, _ = run_case(CASES["order-file"], PLAIN, tmp_path / "c")
    assert out.startswith(b"out1\nerr1\nout2\nerr2\n")
    _, err, _ = run_case(CASES["segfault"], PLAIN, tmp_path / "d")
    assert b"Segmentation fault" in err
    out, _, _ = run_case(CASES["background"], PLAIN, tmp_path / "e")
    assert out == b"now\nlate\nrc=0\n"


def test_what_the_child_appended_to_a_file_is_recorded(tmp_path: Path) -> None:
    """The child writes to the user's file itself; the record still has what it wrote
    (and only that), within the cap, head and tail."""
    from rage.record.history import RunStore

    log = tmp_path / "log"
    log.write_bytes(b"before\n")
    script = "import sys\nfor i in range(200000): sys.stdout.write(f'line {i}\\n')"
    env = {**os.environ, "RAGE_OUTPUT_CAP": "4KiB"}
    with log.open("ab") as f:
        proc = subprocess.run(rage_cmd("run", "--app", "app", "--", sys.executable, "-c",
                                       script),
                              stdout=f, stderr=f, env=env, timeout=60, check=False)
    assert proc.returncode == 0
    written = log.read_bytes()
    assert written.startswith(b"before\nline 0\n") and written.endswith(b"line 199999\n")
    run = RunStore().list("app").runs[0]
    kept = (run.dir / "output.log").read_bytes()
    assert kept.startswith(b"line 0\nline 1\n") and kept.endswith(b"line 199999\n")
    assert b"bytes dropped here" in kept and len(kept) < 4096 + 200
    meta = json.loads((run.dir / "meta.json").read_text())
    assert meta["streams"] == {"stdout": "file", "stderr": "file"}
    [trunc] = meta["truncation"]
    assert trunc["name"] == "output.log" and trunc["total_bytes"] == len(written) - 7
