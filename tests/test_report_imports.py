"""What a report does not import: the bundle reader (tar streams, the hostile-input checks)
and the email package (an HTTP-date Retry-After's parser), none of which writing a bundle
needs; seen in the real process's import log. The names stay importable from
``rage.bundle`` and load their module on first use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.test_cli_exit_codes import RAGE

NOT_IMPORTED = ("rage.bundle.read", "rage.bundle.stream", "rage.bundle.capped", "email.utils")


def imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


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
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "rage", "report", "--last",
                           "--yes", "--output", f"{out}/"], env=env, capture_output=True,
                          text=True, timeout=120, check=True, stdin=subprocess.DEVNULL)
    names = imported(done.stderr)
    assert "rage.bundle.write" in names and "rage.upload.gist" in names
    assert not names & set(NOT_IMPORTED), sorted(names & set(NOT_IMPORTED))
    [bundle] = out.iterdir()
    code = ("import sys\nfrom rage.bundle import validate_bundle, BundleTooLarge\n"
            "print(validate_bundle(sys.argv[1])['schema'], BundleTooLarge.__module__)")
    check = subprocess.run([sys.executable, "-c", code, str(bundle)], env=env,
                           capture_output=True, text=True, timeout=60, check=True)
    assert check.stdout.split() == ["1", "rage.bundle.stream"]
