"""`rage shim`: real sh scripts on a real PATH, run as the user would run them."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from rage.record.shimboot import MARKER
from tests.conftest import run_rage

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"  # no rage here: shims must not need it on PATH


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    """(shim dir, dir holding the real `mytool`, which prints its argv)."""
    shim_dir, real_dir = tmp_path / "shims", tmp_path / "real"
    real_dir.mkdir()
    tool = real_dir / "mytool"
    tool.write_text('#!/bin/sh\necho "real $0 $*"\necho "to stderr" >&2\nexit 4\n')
    tool.chmod(0o755)
    return shim_dir, real_dir


def run_as_user(argv: list[str], path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)


def install(shim_dir: Path, name: str = "mytool", path: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path} if path is not None else None
    return run_rage("shim", "install", name, "--dir", str(shim_dir), env=env)


def test_install_run_records_through_rage(dirs: tuple[Path, Path]) -> None:
    shim_dir, real_dir = dirs
    path = f"{shim_dir}:{real_dir}:{SYSTEM_PATH}"
    proc = install(shim_dir, path=path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"installed {shim_dir / 'mytool'} -> {real_dir / 'mytool'}\n"
    assert proc.stderr == ""
    shim = shim_dir / "mytool"
    assert stat.S_IMODE(shim.stat().st_mode) == 0o700
    assert shim.read_text().splitlines()[1].startswith(f"# {MARKER} mytool")
    done = run_as_user(["mytool", "a b", "c"], path)
    assert done.returncode == 4
    assert done.stdout == f"real {real_dir / 'mytool'} a b c\n"
    assert done.stderr == "to stderr\n"
    listing = json.loads(run_rage("list", "--json", "--app", "mytool").stdout)["runs"]
    assert len(listing) == 1
    assert listing[0]["argv"] == ["mytool", "a b", "c"]  # as the user typed it
    assert listing[0]["executable"] == str(real_dir / "mytool")
    assert listing[0]["exit_code"] == 4 and listing[0]["recorder"] == "wrapper"


def test_program_sees_the_argv0_the_user_typed(tmp_path: Path) -> None:
    # ls names itself by argv[0] in its messages, as many programs do
    shim_dir, real_dir = tmp_path / "shims", tmp_path / "real"
    real_dir.mkdir()
    ls = shutil.which("ls")
    assert ls is not None
    (real_dir / "lister").symlink_to(ls)
    path = f"{shim_dir}:{real_dir}:{SYSTEM_PATH}"
    assert install(shim_dir, "lister", path=path).returncode == 0
    direct = run_as_user(["lister", str(tmp_path / "missing")], f"{real_dir}:{SYSTEM_PATH}")
    shimmed = run_as_user(["lister", str(tmp_path / "missing")], path)
    assert direct.stderr.startswith("lister: ")
    assert shimmed.stderr == direct.stderr and shimmed.returncode == direct.returncode


def test_shim_never_finds_itself(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    shim_dir, real_dir = dirs
    assert install(shim_dir).returncode == 0
    alias = tmp_path / "alias"  # the same directory under another name
    alias.symlink_to(shim_dir)
    path = f"{shim_dir}:{alias}:{shim_dir}/:{SYSTEM_PATH}"
    done = run_as_user(["mytool"], path)
    assert done.returncode == 127
    assert done.stderr.startswith("mytool: command not found (the rage shim")
    # with the real one further along PATH, it is found past every copy of the shim
    done = run_as_user(["mytool", "x"], f"{path}:{real_dir}")
    assert done.returncode == 4 and done.stdout == f"real {real_dir / 'mytool'} x\n"


def test_refuses_to_overwrite_or_remove_foreign_files(dirs: tuple[Path, Path]) -> None:
    shim_dir, _ = dirs
    shim_dir.mkdir()
    foreign = shim_dir / "mytool"
    foreign.write_text("#!/bin/sh\necho mine\n")
    proc = install(shim_dir)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == (
        f"rage: {foreign} exists and was not created by rage; not overwriting it")
    assert foreign.read_text() == "#!/bin/sh\necho mine\n"
    proc = run_rage("shim", "remove", "mytool", "--dir", str(shim_dir))
    assert proc.returncode == 2 and "not created by rage" in proc.stderr
    assert foreign.exists()
    proc = run_rage("shim", "remove", "other", "--dir", str(shim_dir))
    assert proc.returncode == 3 and proc.stderr == f"rage: no shim other in {shim_dir}\n"
    for bad in ("../x", "rage", "a/b"):
        proc = run_rage("shim", "install", bad, "--dir", str(shim_dir))
        assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_list_reinstall_and_remove(dirs: tuple[Path, Path]) -> None:
    shim_dir, real_dir = dirs
    path = f"{shim_dir}:{real_dir}:{SYSTEM_PATH}"
    assert install(shim_dir, path=path).returncode == 0
    assert install(shim_dir, "nosuchtool", path=path).returncode == 0
    (shim_dir / "unrelated").write_text("#!/bin/sh\n")
    env = {**os.environ, "PATH": path}
    proc = run_rage("shim", "list", "--dir", str(shim_dir), env=env)
    assert proc.returncode == 0
    assert proc.stdout.splitlines() == [
        f"mytool\t{shim_dir / 'mytool'} -> {real_dir / 'mytool'}",
        f"nosuchtool\t{shim_dir / 'nosuchtool'} -> (not found on PATH)",
    ]
    # a shim written by an older rage (no fallback when rage is gone) is flagged
    old_text = (shim_dir / "nosuchtool").read_text().replace("\nrage_lib=", "\nrage_where=")
    (shim_dir / "nosuchtool").write_text(old_text)
    proc = run_rage("shim", "list", "--dir", str(shim_dir), env=env)
    assert proc.stdout.splitlines()[1] == (
        f"nosuchtool\t{shim_dir / 'nosuchtool'} -> (not found on PATH)  (outdated: run "
        "`rage shim install nosuchtool` again)")
    data = json.loads(run_rage("shim", "list", "--dir", str(shim_dir), "--json", env=env).stdout)
    assert [s["outdated"] for s in data["shims"]] == [False, True]
    assert [s["name"] for s in data["shims"]] == ["mytool", "nosuchtool"]
    again = install(shim_dir, path=path)
    assert again.returncode == 0 and again.stdout.startswith("updated ")
    proc = run_rage("shim", "remove", "mytool", "--dir", str(shim_dir))
    assert proc.returncode == 0 and proc.stdout == f"removed {shim_dir / 'mytool'}\n"
    assert not (shim_dir / "mytool").exists() and (shim_dir / "unrelated").exists()


def test_install_warns_about_path_order(dirs: tuple[Path, Path]) -> None:
    shim_dir, real_dir = dirs
    proc = install(shim_dir, path=f"{real_dir}:{SYSTEM_PATH}")
    assert proc.returncode == 0
    assert proc.stderr == (f"rage: warning: {shim_dir} is not on PATH: add it in front of "
                           "PATH so `mytool` finds the shim\n")
    proc = install(shim_dir, path=f"{real_dir}:{shim_dir}:{SYSTEM_PATH}")
    assert proc.returncode == 0
    assert proc.stderr == (f"rage: warning: {shim_dir} comes after {real_dir} on PATH: `mytool` "
                           f"will run {real_dir / 'mytool'} without rage; put the shim "
                           "directory first\n")


def test_name_rage_is_an_ordinary_argument_unless_opted_in(dirs: tuple[Path, Path]) -> None:
    shim_dir, real_dir = dirs
    path = f"{shim_dir}:{real_dir}:{SYSTEM_PATH}"
    assert install(shim_dir, path=path).returncode == 0
    done = run_as_user(["mytool", "rage", "--help"], path)
    assert done.returncode == 4 and done.stdout == f"real {real_dir / 'mytool'} rage --help\n"
    # opted in (for the user's own tool): `mytool rage` opens `rage report --app mytool`
    env = {**os.environ, "PATH": path}
    proc = run_rage("shim", "install", "mytool", "--dir", str(shim_dir), "--report-subcommand",
                    env=env)
    assert proc.returncode == 0, proc.stderr
    done = run_as_user(["mytool", "rage", "--help"], path)
    assert done.returncode == 0, done.stderr
    assert "Usage: rage report" in done.stdout
    assert "real " not in done.stdout  # the real program did not run
