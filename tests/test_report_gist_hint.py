"""The hint a report prints when no upload target is set names the gist upload as ready
when a GitHub token is at hand (its variable, or `gh auth token`), else after `gh auth
login`; with neither the variable nor `gh` the report never imports the uploader (seen
in the real process's import log), and `gh` is not run when its config names no logged-in
github.com (a stand-in `gh` on PATH logs each run)."""

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
    """A PATH with what a report runs, and rage, and no `gh`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "rage").exists():
        (bin_dir / "rage").symlink_to(RAGE)
    for tool in ("sh", "true", "git", "zstd"):
        for d in ("/usr/bin", "/bin"):
            if os.path.exists(f"{d}/{tool}") and not (bin_dir / tool).exists():
                (bin_dir / tool).symlink_to(f"{d}/{tool}")
    return str(bin_dir)


def test_no_token_and_no_gh_never_imports_the_uploader(rage_home: Path,
                                                      tmp_path: Path) -> None:
    done = run_report(rage_home, tmp_path / "out", bare_path(tmp_path))
    assert gist_line(done).startswith(LOGIN)
    # (-X importtime lists every import): neither the uploader nor its HTTP client
    assert "rage.upload.gist" not in done.stderr and "rage.upload.http" not in done.stderr


def test_a_token_in_the_variable_is_ready(rage_home: Path, tmp_path: Path) -> None:
    done = run_report(rage_home, tmp_path / "out", bare_path(tmp_path), GITHUB_TOKEN="ghp_x")
    assert gist_line(done).startswith(READY)


def fake_gh(path: str, log: Path, script: str) -> None:
    gh = Path(path) / "gh"
    gh.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\n{script}")
    gh.chmod(0o755)


def logged_in(config: Path) -> str:
    config.mkdir(exist_ok=True)
    (config / "hosts.yml").write_text("github.com:\n    user: alice\n    git_protocol: https\n")
    return str(config)


def test_gh_with_a_token_is_asked(rage_home: Path, tmp_path: Path) -> None:
    path, log = bare_path(tmp_path), tmp_path / "gh.log"
    fake_gh(path, log, "[ \"$1 $2\" = 'auth token' ] && echo gho_fromgh && exit 0\nexit 1\n")
    config = logged_in(tmp_path / "gh")
    done = run_report(rage_home, tmp_path / "out", path, GH_CONFIG_DIR=config)
    assert gist_line(done).startswith(READY)
    assert log.read_text() == "auth token\n"
    fake_gh(path, log, "exit 1\n")  # its token gone from the keyring: gh says so
    done = run_report(rage_home, tmp_path / "out2", path, GH_CONFIG_DIR=config)
    assert gist_line(done).startswith(LOGIN)


def test_gh_logged_out_is_not_run(rage_home: Path, tmp_path: Path) -> None:
    path, log = bare_path(tmp_path), tmp_path / "gh.log"
    fake_gh(path, log, "[ \"$1 $2\" = 'auth token' ] && echo gho_fromgh && exit 0\nexit 1\n")
    config = tmp_path / "gh"
    config.mkdir()
    done = run_report(rage_home, tmp_path / "out", path, GH_CONFIG_DIR=str(config))
    assert gist_line(done).startswith(LOGIN)
    (config / "hosts.yml").write_text("gitlab.example.com:\n    user: alice\n")
    done = run_report(rage_home, tmp_path / "out2", path, GH_CONFIG_DIR=str(config))
    assert gist_line(done).startswith(LOGIN)
    done = run_report(rage_home, tmp_path / "out3", path, XDG_CONFIG_HOME=str(tmp_path),
                      GH_CONFIG_DIR="")
    assert gist_line(done).startswith(LOGIN)
    assert not log.exists()  # gh was never run
    # its own token variable: gh would print it, so it is asked
    done = run_report(rage_home, tmp_path / "out4", path, GH_CONFIG_DIR=str(config),
                      GH_TOKEN="gho_x")
    assert gist_line(done).startswith(READY)
    assert log.read_text() == "auth token\n"


def test_a_token_bound_to_github_in_the_config_is_ready(rage_home: Path, tmp_path: Path,
                                                         config_file: Path) -> None:
    """No variable, no gh: a [tokens] entry for api.github.com is what the upload uses."""
    config_file.write_text('[tokens]\n"https://api.github.com" = "ghp_fromconfig"\n')
    done = run_report(rage_home, tmp_path / "out", bare_path(tmp_path))
    assert gist_line(done).startswith(READY)
    config_file.write_text('[tokens]\n"ftp://x" = "t"\n')  # unusable: the report still ends
    done = run_report(rage_home, tmp_path / "out2", bare_path(tmp_path))
    assert gist_line(done).startswith(
        "  - upload it as a private gist (after fixing [tokens] in the config): rage send")


def test_the_upload_does_not_run_gh_when_logged_out_either(rage_home: Path,
                                                           tmp_path: Path) -> None:
    """The hint and the upload ask the same question: `rage send --to gist` with gh on
    PATH and no logged-in github.com says what to do without starting gh."""
    path, log = bare_path(tmp_path), tmp_path / "gh.log"
    fake_gh(path, log, "[ \"$1 $2\" = 'auth token' ] && echo gho_fromgh && exit 0\nexit 1\n")
    config = tmp_path / "gh"
    config.mkdir()
    base = {k: v for k, v in os.environ.items() if k != "GITHUB_TOKEN"}
    env = {**base, "RAGE_HOME": str(rage_home), "PATH": path, "GH_CONFIG_DIR": str(config)}
    done = run_report(rage_home, tmp_path / "out", path, GH_CONFIG_DIR=str(config))
    [bundle] = (tmp_path / "out").iterdir()
    sent = subprocess.run([RAGE, "send", str(bundle), "--to", "gist", "--yes"], env=env,
                          capture_output=True, text=True, timeout=60, check=False,
                          stdin=subprocess.DEVNULL)
    assert sent.returncode == 4, sent.stderr
    assert "no GitHub token for the gist upload" in sent.stderr
    assert "gh auth login" in sent.stderr and gist_line(done).startswith(LOGIN)
    assert not log.exists()  # gh was never run
