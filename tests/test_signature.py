"""Crash signatures from the output of real failing programs (real Python, real signals)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rage.server.placeholders import RULES, parameterise
from rage.server.signature import ALGORITHM_VERSION, TEXT_MAX, compute


def manifest(argv: list[str], *, exit_code: int | None = 1, signal: int | None = None,
             app: str = "mytool", **extra: Any) -> dict[str, Any]:
    run = {"argv": argv, "exit_code": exit_code, "signal": signal,
           "status": "crashed" if signal else "failed"}
    return {"schema": 1, "app": app, "app_version": "1.0", "run": run, "files": [], **extra}


def run_script(tmp: Path, source: str, *args: str, subdir: str = "proj",
               pad: int = 0) -> str:
    """Runs ``source`` as mytool/cli.py under ``tmp/subdir``; returns its stderr."""
    pkg = tmp / subdir / "mytool"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cli.py").write_text("\n" * pad + source)
    res = subprocess.run([sys.executable, "-X", "faulthandler", "-m", "mytool.cli", *args],
                         cwd=tmp / subdir, capture_output=True, text=True, timeout=30,
                         check=False)
    assert res.returncode != 0
    return res.stderr


PROGRAM = """
import json, sys
def load(path):
    with open(path) as f:
        return json.load(f)
def parse(arg):
    return int(arg)
def main():
    if sys.argv[1] == "load":
        load(sys.argv[2])
    else:
        parse(sys.argv[2])
main()
"""


def test_python_traceback_ignores_lines_paths_and_values(tmp_path: Path) -> None:
    a = run_script(tmp_path, PROGRAM, "load", "/nonexistent/a.json", subdir="alice")
    b = run_script(tmp_path, PROGRAM, "load", "/elsewhere/b.json", subdir="bob", pad=7)
    c = run_script(tmp_path, PROGRAM, "parse", "x12", subdir="carol")
    sa = compute(manifest(["mytool", "load"]), {"run/stderr.log": a})
    sb = compute(manifest(["mytool", "load"]), {"run/stderr.log": b})
    sc = compute(manifest(["mytool", "parse"]), {"run/stderr.log": c})
    assert sa.kind == "python" and sa.exception == "FileNotFoundError"
    assert sa.hash == sb.hash
    assert sa.hash != sc.hash
    assert sc.exception == "ValueError"
    # in-app frames, innermost first, as module.function
    assert "mytool.cli.load < mytool.cli.main" in sa.text
    assert "json" not in sa.text and "line" not in sa.text
    assert sa.version == ALGORITHM_VERSION
    assert any("line numbers" in r for r in sa.reasons)


def test_library_frames_only_without_in_app_frames() -> None:
    tb = ('Traceback (most recent call last):\n'
          '  File "/usr/lib/python3.11/json/__init__.py", line 293, in load\n'
          '  File "/usr/lib/python3.11/json/decoder.py", line 337, in decode\n'
          'json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n')
    sig = compute(manifest(["python3", "-c", "x"], app="python3"), {"run/traceback.txt": tb})
    assert sig.text == "python3: json.decoder.JSONDecodeError in json.decoder.decode < json.load"
    with_app = tb.replace("Traceback (most recent call last):\n",
                          'Traceback (most recent call last):\n  File "~/src/tool.py", '
                          'line 9, in main\n')
    sig2 = compute(manifest(["python3"], app="python3"), {"run/traceback.txt": with_app})
    assert sig2.text == "python3: json.decoder.JSONDecodeError in tool.main"


def test_recursion_depth_does_not_split(tmp_path: Path) -> None:
    src = "import sys\ndef f(n):\n    return f(n + 1)\nf(int(sys.argv[1]))\n"
    a = run_script(tmp_path, src, "0", subdir="a")
    b = run_script(tmp_path, src, "5", subdir="b")
    sa = compute(manifest(["mytool"]), {"run/stderr.log": a})
    sb = compute(manifest(["mytool"]), {"run/stderr.log": b})
    assert sa.exception == "RecursionError" and sa.hash == sb.hash
    assert len(sa.text) <= TEXT_MAX


def test_fatal_signal_with_faulthandler_frames(tmp_path: Path) -> None:
    src = "import ctypes\ndef crash():\n    ctypes.string_at(0)\ncrash()\n"
    out = run_script(tmp_path, src)
    assert "Fatal Python error" in out
    sig = compute(manifest(["mytool", "go"], exit_code=None, signal=11),
                  {"run/stderr.log": out})
    assert sig.kind == "signal"
    assert sig.text.startswith("mytool killed by SIGSEGV in ctypes.string_at")
    bare = compute(manifest(["mytool", "go"], exit_code=None, signal=9), {})
    assert bare.text == "mytool killed by SIGKILL"  # the app's name said once


@pytest.mark.parametrize(("one", "two"), [
    ("error: cannot open /home/alice/data.db: permission denied",
     "error: cannot open /srv/b/x.db: permission denied"),
    ("Error: connection to 10.0.0.7:5432 timed out after 30s (pid 4242)",
     "Error: connection to 192.168.1.20:5432 timed out after 2.5s (pid 77)"),
    ("fatal: job 123e4567-e89b-12d3-a456-426614174000 failed at 2026-01-02T10:11:12Z",
     "fatal: job 00000000-0000-4000-8000-000000000000 failed at 2025-12-31T23:59:59Z"),
    ("ERROR fetch https://api.example.org/v1/items?page=3 -> 503",
     "ERROR fetch https://mirror.example.net/v1/items -> 503"),
    ("mytool[4242]: bad checksum 0xdeadbeef in block 17",
     "mytool: bad checksum 0x0badf00d in block 3"),
    ("error: certificate for api.example.org expired on Tue, 3 Feb 2026",
     "error: certificate for db1.corp.internal expired on Dec 24, 2025"),
    ("error: object 3f786850e387550fdab836ed7e6dc881de23001b is corrupt (12 MB)",
     "error: object 89e6c98d92887913cadf06b2adb97f26cde4849b is corrupt (3.5 KiB)"),
])
def test_plain_exit_values_become_placeholders(one: str, two: str) -> None:
    a = compute(manifest(["mytool", "sync", "--all"]), {"run/stderr.log": f"working\n{one}\n"})
    b = compute(manifest(["/opt/bin/mytool", "sync"]), {"run/stderr.log": f"{two}\nbye\n"})
    assert a.kind == "exit" and a.hash == b.hash, (a.text, b.text)
    assert a.text.startswith("mytool sync: exit 1: ")


def test_plain_exit_differs_by_subcommand_code_and_message() -> None:
    base = compute(manifest(["mytool", "sync"]), {"run/stderr.log": "error: disk full\n"})
    for other in (compute(manifest(["mytool", "push"]), {"run/stderr.log": "error: disk full"}),
                  compute(manifest(["mytool", "sync"], exit_code=2),
                          {"run/stderr.log": "error: disk full"}),
                  compute(manifest(["mytool", "sync"]), {"run/stderr.log": "error: no network"})):
        assert other.hash != base.hash


def test_fingerprint_overrides_and_text_is_bounded() -> None:
    fp = compute(manifest(["mytool"], fingerprint=["db", "locked"]),
                 {"run/stderr.log": "Traceback (most recent call last):\nValueError: x\n"})
    assert fp.kind == "fingerprint" and fp.text == "mytool: db locked"
    assert compute(manifest(["mytool"], fingerprint="db locked"), {}).hash == fp.hash
    long = compute(manifest(["mytool"], fingerprint="x" * 5000), {})
    assert len(long.text) <= TEXT_MAX
    # another app's identical failure is another signature
    assert compute(manifest(["t"], app="other", fingerprint="db locked"), {}).hash != fp.hash


def test_placeholder_table_has_sources() -> None:
    assert all(rule.source for rule in RULES)
    assert parameterise("\x1b[31merror\x1b[0m at ~ pid=12") == "error at <path> pid=<pid>"


def test_app_named_once_and_success_is_not_a_crash() -> None:
    sig = compute(manifest(["bash", "-c", "exit 3"], exit_code=3, app="bash"), {})
    assert sig.text == "bash: exit 3"
    other = compute(manifest(["sh", "-x"], exit_code=3), {})
    assert other.text.startswith("mytool: sh: exit 3")
    ok = manifest(["seq", "3"], exit_code=0, app="seq")
    ok["run"]["status"] = "ok"
    sig = compute(ok, {"run/stdout.log": "1\n2\n3\n"})
    assert sig.kind == "report"
    assert sig.text == "seq: reported, no failure (exit 0)"
    assert sig.reasons[0].startswith("the run succeeded (exit 0)")
