"""What a report does not import: the bundle reader (tar streams, the hostile-input checks)
and the email package (an HTTP-date Retry-After's parser), which writing a bundle does not
need, and on Linux psutil (the system collector reads /proc itself); seen in the real
process's sys.modules at its exit (-X importtime misses what the collectors' threads
import). The names stay importable from ``rage.bundle`` and load their module on first use.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.test_cli_exit_codes import RAGE

NOT_IMPORTED = ("rage.bundle.read", "rage.bundle.stream", "rage.bundle.capped", "email.utils",
                "psutil")


# the report's process, writing what it imported to argv[1] at exit
REPORT = """import atexit, runpy, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write("\\n".join(sys.modules)))
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
    assert {"rage.bundle.write", "rage.upload.gist", "collectors.system"} <= names
    absent = set(NOT_IMPORTED) - ({"psutil"} if sys.platform != "linux" else set())
    assert not names & absent, sorted(names & absent)
    [bundle] = out.iterdir()
    code = ("import sys\nfrom rage.bundle import validate_bundle, BundleTooLarge\n"
            "print(validate_bundle(sys.argv[1])['schema'], BundleTooLarge.__module__)")
    check = subprocess.run([sys.executable, "-c", code, str(bundle)], env=env,
                           capture_output=True, text=True, timeout=60, check=True)
    assert check.stdout.split() == ["1", "rage.bundle.stream"]
