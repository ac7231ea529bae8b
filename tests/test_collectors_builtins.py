"""Each built-in collector against the real machine, checked by independent means."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from collectors.base import Context
from collectors.environment import EnvironmentCollector, looks_secret_value
from collectors.git import GitCollector, strip_credentials
from collectors.packages import PackagesCollector
from collectors.platform import PlatformCollector
from collectors.python import PythonCollector
from collectors.system import SystemCollector
from collectors.tools import ToolsCollector

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True,
                          text=True).stdout


# --- platform ---------------------------------------------------------------------------

def test_platform_matches_uname_and_os_release() -> None:
    data = PlatformCollector().collect(Context())
    u = os.uname()
    assert data["kernel"] == u.release
    assert data["machine"] == u.machine
    assert data["system"] == u.sysname
    if Path("/etc/os-release").exists():
        fields = dict(
            line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines()
            if "=" in line
        )
        assert data["os"]["id"] == fields["ID"].strip('"')
    assert data["container"] == ("docker" if Path("/.dockerenv").exists()
                                 else data["container"])
    assert data["time_zone"]["utc_offset"][0] in "+-"


def test_platform_sees_ci_and_terminal_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITLAB_CI", "true")
    monkeypatch.setenv("TERM", "xterm-testing")
    data = PlatformCollector().collect(Context())
    assert data["ci"] == "gitlab-ci"
    assert data["terminal"]["term"] == "xterm-testing"


# --- python -----------------------------------------------------------------------------

def test_python_is_this_interpreter() -> None:
    data = PythonCollector().collect(Context())
    assert data["executable"] == sys.executable
    assert data["version_info"] == list(sys.version_info[:3])
    assert data["implementation"] == sys.implementation.name.replace("cpython", "CPython")
    assert data["prefix"] == sys.prefix
    assert data["virtualenv"] == (sys.prefix != sys.base_prefix)
    assert data["sys_path"] == sys.path
    try:
        assert data["pip"] == importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        assert data["pip"] is None


def test_python_queries_another_interpreter(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
    other = env_dir / "bin" / "python"
    data = PythonCollector().collect(Context(python=str(other)))
    assert data["source"] == "run"
    assert data["virtualenv"] is True
    assert Path(data["prefix"]).resolve() == env_dir.resolve()
    assert any(p.startswith(str(env_dir)) and p.endswith("site-packages")
               for p in data["sys_path"])
    assert "" not in data["sys_path"]
    expected = subprocess.run([str(other), "-c", "import sys; print(sys.version.split()[0])"],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert data["version"] == expected


def test_python_reports_an_interpreter_that_cannot_run(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="cannot run"):
        PythonCollector().collect(Context(python=str(tmp_path / "no-such-python")))


# --- packages ---------------------------------------------------------------------------

def test_packages_lists_installed_versions() -> None:
    data = PackagesCollector().collect(Context())
    by_name = {d["name"].lower().replace("_", "-"): d for d in data["distributions"]}
    assert by_name["click"]["version"] == importlib.metadata.version("click")
    assert by_name["psutil"]["version"] == importlib.metadata.version("psutil")
    assert data["count"] == len(data["distributions"])
    assert data["app"] is None


def test_packages_puts_the_app_tree_first() -> None:
    # `rage` is the console script of the rage-report distribution
    data = PackagesCollector().collect(Context(app="rage"))
    assert data["app"]["name"] == "rage-report"
    required = {c["name"].lower() for c in data["app"]["requires"]}
    assert {"click", "psutil"} <= required
    first = data["distributions"][0]["name"].lower().replace("_", "-")
    assert first == "rage-report"
    names = [d["name"].lower() for d in data["distributions"][: len(required) + 8]]
    assert "click" in names


# --- system -----------------------------------------------------------------------------

def test_system_matches_os_facts(tmp_path: Path) -> None:
    import resource

    import psutil

    data = SystemCollector().collect(Context(cwd=tmp_path, history_root=tmp_path / "not-yet"))
    assert data["cpu"]["logical"] == os.cpu_count()
    assert data["memory"]["total_bytes"] == psutil.virtual_memory().total
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert data["rlimits"]["open_files"]["soft"] == (
        None if soft == resource.RLIM_INFINITY else soft)
    assert data["disk"]["cwd"]["total_bytes"] == shutil.disk_usage(tmp_path).total
    assert data["disk"]["history"]["path"] == str(tmp_path / "not-yet")
    assert data["disk"]["history"]["total_bytes"] == shutil.disk_usage(tmp_path).total
    assert data["uptime_s"] > 0


# --- environment ------------------------------------------------------------------------

def test_environment_hides_secrets_and_splits_paths(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    token = "ghp_" + "aB3" * 12
    monkeypatch.setenv("MY_API_TOKEN", "plain-words")
    monkeypatch.setenv("HARMLESS_LOOKING", token)
    monkeypatch.setenv("DATABASE_URL", "postgres://bob:hunter2@db.example.org/app")
    monkeypatch.setenv("GREETING", "hello world")
    missing = str(tmp_path / "gone")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), missing]))
    data = EnvironmentCollector().collect(Context())
    v = data["variables"]
    assert v["MY_API_TOKEN"] == "[set, 11 chars, hidden]"
    assert v["HARMLESS_LOOKING"] == f"[set, {len(token)} chars, hidden]"
    assert v["DATABASE_URL"].endswith("chars, hidden]")
    assert v["GREETING"] == "hello world"
    assert v["PATH"] == os.environ["PATH"].split(os.pathsep)
    assert v["PYTHONPATH"] == [str(tmp_path), missing]
    assert data["missing_entries"]["PYTHONPATH"] == [missing]
    assert set(data["variables"]) == set(os.environ)
    assert {"MY_API_TOKEN", "HARMLESS_LOOKING", "DATABASE_URL"} <= set(data["hidden"])
    assert token not in repr(data) and "hunter2" not in repr(data)


@pytest.mark.parametrize("value", [
    "AKIAIOSFODNN7EXAMPLE", "xoxb-123456789012-abcdefABCDEF", "glpat-abcdefghij1234567890",
    "sk-proj-abcdefghijklmnop1234", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl",
    "https://user:pass@example.org/",
])
def test_secret_looking_values(value: str) -> None:
    assert looks_secret_value(value)


@pytest.mark.parametrize("value", [
    "/usr/local/bin:/usr/bin", "en_US.UTF-8", "xterm-256color", "hello world",
    "https://example.org/path", "/home/someone/.cache/some-long-directory-name",
])
def test_ordinary_values_are_shown(value: str) -> None:
    assert not looks_secret_value(value)


# --- git --------------------------------------------------------------------------------

@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "a.txt").write_text("one\n")
    git(r, "add", "a.txt")
    git(r, "commit", "-q", "-m", "first")
    git(r, "remote", "add", "origin", "https://user:pw@host/x.git")
    git(r, "remote", "add", "mirror", "git@example.org:team/x.git")
    return r


@needs_git
def test_git_reports_head_dirt_and_clean_remotes(repo: Path) -> None:
    (repo / "a.txt").write_text("two\n")
    (repo / "new.txt").write_text("untracked\n")
    sub = repo / "sub"
    sub.mkdir()
    c = GitCollector()
    ctx = Context(cwd=sub)
    assert c.applies(ctx)
    data = c.collect(ctx)
    assert data["head"] == git(repo, "rev-parse", "HEAD").strip()
    assert data["branch"] == "main"
    assert data["dirty"] == 2 and data["changed"] == 1 and data["untracked"] == 1
    assert data["remotes"] == {"origin": "https://host/x.git",
                               "mirror": "git@example.org:team/x.git"}
    assert data["in_progress"] == []
    assert Path(data["top_level"]).resolve() == repo.resolve()


@needs_git
def test_git_detects_a_rebase_in_progress(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "topic")
    (repo / "a.txt").write_text("topic\n")
    git(repo, "commit", "-q", "-am", "topic change")
    git(repo, "checkout", "-q", "main")
    (repo / "a.txt").write_text("main\n")
    git(repo, "commit", "-q", "-am", "main change")
    git(repo, "checkout", "-q", "topic")
    env_rebase = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", "rebase",
                                 "main"], cwd=repo, capture_output=True, check=False)
    assert env_rebase.returncode != 0  # the conflict stops it half way
    data = GitCollector().collect(Context(cwd=repo))
    assert data["in_progress"] == ["rebase"]
    assert data["conflicted"] == 1


def test_git_does_not_apply_outside_a_work_tree(tmp_path: Path) -> None:
    assert not GitCollector().applies(Context(cwd=tmp_path))


def test_strip_credentials() -> None:
    assert strip_credentials("https://user:pw@host/x.git") == "https://host/x.git"
    assert strip_credentials("https://ghp_token@github.com/a/b") == "https://github.com/a/b"
    assert strip_credentials("ssh://git:secret@host:22/x") == "ssh://git@host:22/x"
    assert strip_credentials("git@github.com:a/b.git") == "git@github.com:a/b.git"
    assert strip_credentials("/srv/git/x.git") == "/srv/git/x.git"


# --- tools ------------------------------------------------------------------------------

@needs_git
def test_tools_records_first_version_line(tmp_path: Path) -> None:
    data = ToolsCollector().collect(Context(tools=("git", "no-such-tool-rage-test")))
    expected = subprocess.run(["git", "--version"], capture_output=True, text=True,
                              check=True).stdout.splitlines()[0]
    assert data["git"]["version"] == expected
    assert data["git"]["path"] == shutil.which("git")
    assert data["no-such-tool-rage-test"] == {"path": None, "error": "not found"}


def test_tools_gives_up_on_a_slow_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from collectors import tools

    slow = tmp_path / "slowtool"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    monkeypatch.setattr(tools, "TOOL_TIMEOUT", 0.3)
    data = ToolsCollector().collect(Context(tools=(str(slow),)))
    assert data[str(slow)]["error"].startswith("no answer within")


def test_tools_applies_only_when_named() -> None:
    assert not ToolsCollector().applies(Context())
    assert ToolsCollector().applies(Context(tools=("git",)))
