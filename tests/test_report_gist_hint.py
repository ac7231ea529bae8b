"""The hint a report prints when no upload target is set names the gist upload as ready
when a GitHub token is at hand (its variable, or `gh auth token`), else after `gh auth
login`; with neither the variable nor `gh` the report never imports the uploader (seen
in the real process's import log)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.test_cli_exit_codes import RAGE

READY = "  - upload it as a private gist: rage send"
LOGIN = "  - upload it as a private gist (after `gh auth login`): rage send"


def run_report(home: Path, out: Path, path: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
    full = {**base, "RAGE_HOME": str(home), "PATH": path, **env}
    subprocess.run([RAGE, "run", "--", "true"], env=full, capture_output=True, timeout=60,
                   check=True)
    out.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "rage", "report", "--last",
                           "--yes", "--no-collect", "--output", f"{out}/"], env=full,
                          capture_output=True, text=True, timeout=120, check=True,
                          stdin=subprocess.DEVNULL)


def gist_line(done: subprocess.CompletedProcess[str]) -> str:
    [line] = [x for x in done.stdout.splitlines() if "private gist" in x]
    return line


def bare_path(tmp_path: Path) -> str:
    """A PATH with what a report runs and no `gh`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("sh", "true", "git", "zstd"):
        for d in ("/usr/bin", "/bin"):
            if os.path.exists(f"{d}/{tool}") and not (bin_dir / tool).exists():
                (bin_dir / tool).symlink_to(f"{d}/{tool}")
    return str(bin_dir)


def test_no_token_and_no_gh_never_imports_the_uploader(rage_home: Path,
                                                      tmp_path: Path) -> None:
    done = run_report(rage_home, tmp_path / "out", bare_path(tmp_path))
    assert gist_line(done).startswith(LOGIN)
    assert "rage.upload.gist" not in done.stderr  # (-X importtime lists every import)


def test_a_token_in_the_variable_is_ready(rage_home: Path, tmp_path: Path) -> None:
    done = run_report(rage_home, tmp_path / "out", bare_path(tmp_path), GITHUB_TOKEN="ghp_x")
    assert gist_line(done).startswith(READY)


def test_gh_with_a_token_is_asked(rage_home: Path, tmp_path: Path) -> None:
    path = bare_path(tmp_path)
    gh = Path(path) / "gh"
    gh.write_text("#!/bin/sh\n[ \"$1 $2\" = 'auth token' ] && echo gho_fromgh && exit 0\nexit 1\n")
    gh.chmod(0o755)
    done = run_report(rage_home, tmp_path / "out", path)
    assert gist_line(done).startswith(READY)
    gh.write_text("#!/bin/sh\nexit 1\n")  # logged out
    done = run_report(rage_home, tmp_path / "out2", path)
    assert gist_line(done).startswith(LOGIN)
