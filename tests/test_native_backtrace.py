"""Native backtraces of wrapped programs that crash (opt-in): a real C program segfaults in
crash_here() called from caller_fn(); with RAGE_NATIVE_BACKTRACE=1 (or --backtrace) the
record holds gdb's backtrace naming both, no core is left in the program's directory, and
the receiver's signature names the frames. Without opting in nothing changes, the core
limit the program sees included."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rage.server.signature import compute
from tests.test_cli_exit_codes import RAGE

CRASH_C = """\
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
void crash_here(int *p) { *p = 42; }
void caller_fn(void) { crash_here(NULL); }
int main(int argc, char **argv) {
  struct rlimit r;
  getrlimit(RLIMIT_CORE, &r);
  printf("core limit %lld\\n", (long long)r.rlim_cur);
  fflush(stdout);
  if (argc > 1) caller_fn();
  return 0;
}
"""


def _pattern() -> str:
    try:
        return Path("/proc/sys/kernel/core_pattern").read_text().strip()
    except OSError:
        return ""


pytestmark = pytest.mark.skipif(
    not shutil.which("gcc") or not shutil.which("gdb") or _pattern().startswith("|")
    or not _pattern(), reason="needs gcc, gdb and cores written as files (core_pattern)")


@pytest.fixture
def program(tmp_path: Path) -> Path:
    src = tmp_path / "crash.c"
    src.write_text(CRASH_C)
    subprocess.run(["gcc", "-g", "-O0", "-o", str(tmp_path / "crash"), str(src)], check=True,
                   timeout=120)
    return tmp_path / "crash"


def run(program: Path, *args: str, env: dict[str, str] | None = None,
        rage_args: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RAGE, "run", *rage_args, "--", str(program), *args],
                          cwd=program.parent, capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, **(env or {})})


def the_run(home: Path) -> Path:
    [run_dir] = list((home / "crash" / "runs").iterdir())
    return run_dir


def cores(where: Path) -> list[str]:
    return sorted(p.name for p in where.iterdir() if p.name.startswith("core"))


def test_a_crash_with_native_backtrace_names_both_functions(program: Path,
                                                              rage_home: Path) -> None:
    proc = run(program, "crash", env={"RAGE_NATIVE_BACKTRACE": "1"})
    assert proc.returncode == -11  # the shell sees the program's own death
    run_dir = the_run(rage_home)
    bt = (run_dir / "backtrace.txt").read_text()
    assert "crash_here" in bt and "caller_fn" in bt
    assert cores(program.parent) == [] and cores(run_dir) == []  # taken, then deleted
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["native_backtrace"] == {"method": "core file + gdb", "core": "deleted"}
    assert (run_dir / "backtrace.txt").stat().st_mode & 0o777 == 0o600
    # the report sends it (redacted), and the signature is the frames'
    out = program.parent / "b.tar.zst"
    rep = subprocess.run([RAGE, "report", "--last", "--yes", "--no-collect", "--output",
                          str(out)], capture_output=True, text=True, timeout=120, check=False)
    assert rep.returncode == 0, rep.stderr
    member = subprocess.run(["tar", "--zstd", "-xOf", str(out), "run/backtrace.txt"],
                            capture_output=True, text=True, check=True).stdout
    assert "caller_fn" in member
    manifest = json.loads(subprocess.run(["tar", "--zstd", "-xOf", str(out), "manifest.json"],
                                         capture_output=True, text=True, check=True).stdout)
    sig = compute(manifest, {"run/backtrace.txt": member})
    assert sig.text == "crash killed by SIGSEGV in crash_here < caller_fn < main"


def test_keep_core_keeps_it_private_and_out_of_the_bundle(program: Path,
                                                          rage_home: Path) -> None:
    proc = run(program, "crash", rage_args=("--backtrace", "--keep-core"))
    assert proc.returncode == -11
    run_dir = the_run(rage_home)
    assert cores(program.parent) == [] and cores(run_dir) == ["core"]
    assert (run_dir / "core").stat().st_mode & 0o777 == 0o600
    out = program.parent / "b.tar.zst"
    assert subprocess.run([RAGE, "report", "--last", "--yes", "--no-collect", "--output",
                           str(out)], capture_output=True, timeout=120, check=False).returncode == 0
    names = subprocess.run(["tar", "--zstd", "-tf", str(out)], capture_output=True, text=True,
                           check=True).stdout.split()
    assert "run/core" not in names and "run/backtrace.txt" in names


def test_without_opting_in_nothing_changes(program: Path, rage_home: Path) -> None:
    bare = subprocess.run([str(program)], capture_output=True, text=True, timeout=60,
                          cwd=program.parent, check=False)
    recorded = run(program)
    assert recorded.stdout == bare.stdout  # the program's own core limit, untouched
    opted = run(program, env={"RAGE_NATIVE_BACKTRACE": "1"})
    assert opted.stdout != bare.stdout or "core limit 0" not in bare.stdout
    crashed = run(program, "crash")
    assert crashed.returncode == -11
    newest = max((rage_home / "crash" / "runs").iterdir())
    assert not (newest / "backtrace.txt").exists()
    assert "native_backtrace" not in json.loads((newest / "meta.json").read_text())
    assert cores(program.parent) == [] or "core limit 0" not in bare.stdout


def test_the_setting_is_documented_and_checked() -> None:
    out = subprocess.run([sys.executable, "-m", "rage", "run", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "--backtrace" in out and "--keep-core" in out
