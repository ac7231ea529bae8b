"""What a report does not import: the bundle reader (tar streams, the hostile-input checks)
and the email package (an HTTP-date Retry-After's parser), which writing a bundle does not
need, and on Linux psutil (the system collector reads /proc itself); OpenSSL (hashlib: a
small bundle is hashed by CPython's own sha256, rage.digest), the writer's hashing
thread's queue, the culprit finder for a run with no traceback and no signal, and the
pending bundles' listing (rage.report.elsewhere notes a bundle written elsewhere); seen in
the real process's sys.modules at its exit (-X importtime misses what the collectors'
threads import). The names stay importable from ``rage.bundle`` and load their module on
first use.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.test_cli_exit_codes import RAGE

NOT_IMPORTED = ("rage.bundle.read", "rage.bundle.stream", "rage.bundle.capped", "email.utils",
                "psutil", "hashlib", "_hashlib", "queue", "rage.report.culprit",
                "rage.report.pending")


# the report's process, writing what it imported to argv[1] at its end (rage.__main__ ends
# a report with os._exit, before any exit handler)
REPORT = """import gc, os, runpy, sys
out = sys.argv.pop(1)
end = os._exit
def dump_and_end(code):
    open(out, "w").write("\\n".join([*sys.modules, f"gc-threshold-{gc.get_threshold()[0]}"]))
    end(code)
os._exit = dump_and_end
runpy.run_module("rage", run_name="__main__")
"""


def test_a_report_imports_no_reader(rage_home: Path, tmp_path: Path) -> None:
    env = {**os.environ, "RAGE_HOME": str(rage_home), "GITHUB_TOKEN": "ghp_x"}
    subprocess.run([RAGE, "run", "--", "sh", "-c", "echo hi; exit 3"], env=env,
                   capture_output=True, timeout=60, check=False)
    first, out = tmp_path / "first", tmp_path / "out"
    first.mkdir()
    out.mkdir()
    # the first report builds the caches (importlib.metadata's walk imports email): the
    # second is what every later report is
    subprocess.run([sys.executable, "-m", "rage", "report", "--last", "--yes", "--output",
                    f"{first}/"], env=env,
                   capture_output=True, timeout=120, check=True, stdin=subprocess.DEVNULL)
    log = tmp_path / "modules"
    subprocess.run([sys.executable, "-c", REPORT, str(log), "report", "--last", "--yes",
                    "--output", f"{out}/"], env=env, capture_output=True, timeout=120,
                   check=True, stdin=subprocess.DEVNULL)
    names = set(log.read_text().split())
    # the cyclic collector runs after 50,000 new objects, not 700 (none in a small report)
    assert "gc-threshold-50000" in names
    # with a token the hint asks rage.upload.github, never the uploader's HTTP client
    assert {"rage.bundle.write", "rage.upload.github", "collectors.system"} <= names
    assert not names & {"rage.upload.gist", "rage.upload.http"}
    absent = set(NOT_IMPORTED) - ({"psutil"} if sys.platform != "linux" else set())
    assert not names & absent, sorted(names & absent)
    [bundle] = out.iterdir()
    code = ("import sys\nfrom rage.bundle import validate_bundle, BundleTooLarge\n"
            "print(validate_bundle(sys.argv[1])['schema'], BundleTooLarge.__module__)")
    check = subprocess.run([sys.executable, "-c", code, str(bundle)], env=env,
                           capture_output=True, text=True, timeout=60, check=True)
    assert check.stdout.split() == ["1", "rage.bundle.stream"]


TEARDOWN = """import atexit, runpy
atexit.register(lambda: print("teardown", flush=True))
runpy.run_module("rage", run_name="__main__")
"""


def test_a_report_ends_without_the_interpreters_teardown(rage_home: Path,
                                                         tmp_path: Path) -> None:
    """`rage report` ends with os._exit once its streams are flushed: an exit handler of the
    process never runs, and what it printed to a pipe (block-buffered) is whole, with its
    exit code, for a bundle written and for an error alike."""
    env = {**os.environ, "RAGE_HOME": str(rage_home)}
    subprocess.run([RAGE, "run", "--", "sh", "-c", "echo hi; exit 3"], env=env,
                   capture_output=True, timeout=60, check=False)
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run([sys.executable, "-c", TEARDOWN, "report", "--last", "--yes",
                           "--output", f"{out}/"], env=env, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr
    [bundle] = out.iterdir()
    assert done.stdout.startswith(f"bundle written: {bundle} (")
    assert done.stdout.rstrip().endswith("--to URL") and "teardown" not in done.stdout
    bad = subprocess.run([sys.executable, "-c", TEARDOWN, "report", "--last", "--yes",
                          "--output", f"{tmp_path}/missing/x.tar.zst"], env=env,
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                         check=False)
    assert bad.returncode == 2 and "no such directory" in bad.stderr
    assert "teardown" not in bad.stdout
    # every other command ends as Python does
    listed = subprocess.run([sys.executable, "-c", TEARDOWN, "list"], env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert listed.returncode == 0 and listed.stdout.rstrip().endswith("teardown")


WIDE_CLASSES = r"""import re, sys
seen = []
compile_ = re._compile
def noting(pattern, flags):
    if isinstance(pattern, str) and ("\ud800" in pattern or "\\ud800" in pattern):
        seen.append(pattern)
    return compile_(pattern, flags)
re._compile = noting
from rage.bundle.names import check_member_name
from rage.cli.termtext import clean, clean_line
from rage.report.pipeline import escape_undecodable
assert check_member_name("run/output.log") == "run/output.log"
assert clean_line("bundle written: a.tar.zst (4.5 KiB)") == "bundle written: a.tar.zst (4.5 KiB)"
assert clean("two\tlines\n") == "two\tlines\n"
assert escape_undecodable({"k": ["ascii", "caf\u00e9"]}) == {"k": ["ascii", "caf\u00e9"]}
print(len(seen))
assert clean_line("a\x1b[0m\udc80") == "a\\x1b[0m\\x80"
assert escape_undecodable("caf\udce9") == "caf\\xe9"
print(len(seen))
"""


def test_printable_text_compiles_no_class_of_control_characters() -> None:
    """The classes of unprintable characters (their surrogate ranges cost ~4M instructions
    each to compile) are compiled only for text that holds one: a report's names, lines and
    strings are printable."""
    got = subprocess.run([sys.executable, "-c", WIDE_CLASSES], capture_output=True,
                         text=True, timeout=60, check=True)
    assert got.stdout.split() == ["0", "2"]


def test_the_pipeline_gates_the_culprit_finder_on_its_own_terms() -> None:
    from rage.report import culprit, pipeline

    assert (pipeline._TB_START, pipeline._CULPRIT_TEXT_MAX) == (culprit.TB_START,
                                                                culprit.TEXT_MAX)


def test_the_engines_plans_are_plain_classes() -> None:
    """The engine's plans (catalogue entries, scan plans) are made once and never changed:
    as frozen dataclasses, whose methods are written and compiled from source when they
    are defined, they cost every report ~14M instructions (3% of a small one)."""
    from dataclasses import is_dataclass

    from rage.redact.catalogue import Compiled
    from rage.redact.formats import FORMATS, SecretFormat
    from rage.redact.scan import Group, ScanPlan

    assert not any(is_dataclass(c) for c in (Compiled, SecretFormat, Group, ScanPlan))
    assert len(FORMATS) > 100 and not any(hasattr(f, "__dict__") for f in FORMATS)
