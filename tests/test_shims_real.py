"""Shims in front of real programs (git, grep, ls, python3): what the user sees must be what
they see without rage, including after rage is uninstalled or its Python is gone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from rage.record.shims import render
from tests.conftest import run_rage

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
RAGE_PKG = Path(__file__).resolve().parent.parent / "rage"


def sh(argv: list[str], path: str, cwd: Path | None = None,
       timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PATH": path}
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)


def install(shim_dir: Path, *names: str, path: str) -> None:
    for name in names:
        proc = run_rage("shim", "install", name, "--dir", str(shim_dir),
                        env={**os.environ, "PATH": path})
        assert proc.returncode == 0, proc.stderr


def runs(app: str) -> list[dict[str, object]]:
    out = run_rage("list", "--json", "--app", app, "--limit", "1000")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["runs"]  # type: ignore[no-any-return]


def same(a: subprocess.CompletedProcess[bytes], b: subprocess.CompletedProcess[bytes]) -> None:
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


@pytest.mark.parametrize("argv", [
    ["grep", "rage", "README.md"],
    ["grep", "-c", "rage", "README.md", "missing"],
    ["ls", "rage"],
    ["ls", "-1", "."],
    ["git", "rage"],
])
def test_arguments_keep_their_meaning(tmp_path: Path, argv: list[str]) -> None:
    shim_dir, work = tmp_path / "shims", tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("rage records runs\nnothing here\nrage again\n")
    (work / "rage").mkdir()
    install(shim_dir, argv[0], path=f"{shim_dir}:{SYSTEM_PATH}")
    direct = sh(argv, SYSTEM_PATH, cwd=work)
    shimmed = sh(argv, f"{shim_dir}:{SYSTEM_PATH}", cwd=work)
    same(shimmed, direct)
    [run] = runs(argv[0])
    assert run["argv"] == argv


def test_moved_or_copied_shim_never_runs_itself(tmp_path: Path) -> None:
    shim_dir, a, b = tmp_path / "shims", tmp_path / "a", tmp_path / "b"
    install(shim_dir, "ls", path=f"{shim_dir}:{SYSTEM_PATH}")
    a.mkdir()
    b.mkdir()
    shutil.copy2(shim_dir / "ls", a / "ls")  # a copy: its baked paths name shim_dir
    os.rename(shim_dir / "ls", b / "ls")  # moved
    path = f"{a}:{b}:{shim_dir}:{SYSTEM_PATH}"
    direct = sh(["ls", "-1", str(a), str(b)], SYSTEM_PATH)
    same(sh(["ls", "-1", str(a), str(b)], path), direct)
    assert len(runs("ls")) == 1  # one wrapper, not one per shim on the way
    # with no real ls anywhere: "not found", never a loop
    gone = sh(["ls"], f"{a}:{b}")
    assert gone.returncode == 127
    assert gone.stderr.decode().startswith("ls: command not found (the rage shim ")
    assert len(runs("ls")) == 1


def make_venv(where: Path, with_pip: bool = False) -> Path:
    cmd = [sys.executable, "-m", "venv", str(where)]
    subprocess.run(cmd if with_pip else [*cmd, "--without-pip"], check=True, timeout=300,
                   capture_output=True)
    return where / "bin" / "python"


def test_shim_outlives_rage(tmp_path: Path) -> None:
    """rage installed in its own venv; then its files go, then the whole venv: the shimmed
    `ls` keeps working exactly as without rage, with one warning line."""
    venv = tmp_path / "rage-venv"
    py = make_venv(venv)
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    shutil.copytree(RAGE_PKG, site / "rage", ignore=shutil.ignore_patterns("__pycache__"))
    shim_dir = tmp_path / "shims"
    shim_dir.mkdir()
    (shim_dir / "ls").write_text(render("ls", python=str(py), lib=str(site)))
    (shim_dir / "ls").chmod(0o700)
    path = f"{shim_dir}:{SYSTEM_PATH}"
    argv = ["ls", "-1", str(shim_dir), str(tmp_path / "missing")]
    direct = sh(argv, SYSTEM_PATH)
    assert direct.stderr.startswith(b"ls: ")  # ls names itself by argv[0]
    same(sh(argv, path), direct)
    assert len(runs("ls")) == 1
    broken: list[Callable[[], object]] = [
        (site / "rage" / "_version.py").unlink,  # rage cannot be imported
        lambda: shutil.rmtree(site / "rage"),  # pip uninstall
        lambda: shutil.rmtree(venv),  # the venv (or its Python) is gone
    ]
    for breaking in broken:
        breaking()
        direct = sh(argv, SYSTEM_PATH)
        shimmed = sh(argv, path)
        assert (shimmed.returncode, shimmed.stdout) == (direct.returncode, direct.stdout)
        warning, rest = shimmed.stderr.split(b"\n", 1)
        assert warning.startswith(b"rage: warning: not recording ls: rage cannot start")
        assert rest == direct.stderr
    assert len(runs("ls")) == 1


def test_shim_carries_its_own_boot_code(tmp_path: Path) -> None:
    """The shim imports its boot code from rage (cached bytecode); when rage no longer has
    it (changed, or removed), the copy the shim carries runs instead: still recorded, no
    warning, the same output."""
    lib = tmp_path / "lib"
    shutil.copytree(RAGE_PKG, lib / "rage", ignore=shutil.ignore_patterns("__pycache__"))
    shim_dir = tmp_path / "shims"
    shim_dir.mkdir()
    (shim_dir / "ls").write_text(render("ls", python=sys.executable, lib=str(lib)))
    (shim_dir / "ls").chmod(0o700)
    path = f"{shim_dir}:{SYSTEM_PATH}"
    argv = ["ls", "-1", str(shim_dir), str(tmp_path / "missing")]
    direct = sh(argv, SYSTEM_PATH)
    boot = lib / "rage" / "record" / "shimboot.py"
    same(sh(argv, path), direct)
    assert list((lib / "rage" / "record" / "__pycache__").glob("shimboot.*.pyc"))
    # a later rage whose boot code has another entry point, then none at all
    boot.write_text(boot.read_text().replace("def boot1(", "def boot2("))
    same(sh(argv, path), direct)
    boot.unlink()
    shutil.rmtree(boot.parent / "__pycache__")
    same(sh(argv, path), direct)
    assert len(runs("ls")) == 3


def wheel(where: Path) -> Path:
    """A tiny wheel, to install into a venv with its own pip, offline."""
    path = where / "venvonly-1.0-py3-none-any.whl"
    files = {
        "venvonly/__init__.py": "VALUE = 42\n",
        "venvonly-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: venvonly\nVersion: 1.0\n",
        "venvonly-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
                                        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{n},,\n" for n in files) + "venvonly-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for n, text in files.items():
            z.writestr(n, text)
        z.writestr("venvonly-1.0.dist-info/RECORD", record)
    return path


def test_python3_shim_keeps_virtual_environments_working(tmp_path: Path) -> None:
    shim_dir = tmp_path / "shims"
    base_bin = str(Path(sysconfig.get_config_var("BINDIR") or "/usr/bin"))
    path = f"{shim_dir}:{base_bin}:{SYSTEM_PATH}"
    install(shim_dir, "python3", path=path)
    # a venv created through the shim, with pip inside it
    made = sh(["python3", "-m", "venv", str(tmp_path / "v")], path)
    assert made.returncode == 0, made.stderr
    vbin = tmp_path / "v" / "bin"
    assert (vbin / "python3").resolve() != (shim_dir / "python3").resolve()
    pip = sh([str(vbin / "python3"), "-m", "pip", "install", "-q", "--no-index",
              "--disable-pip-version-check", str(wheel(tmp_path))], path)
    assert pip.returncode == 0, pip.stderr
    # the venv's python3 found through the shim (shims first on PATH) is the venv
    code = "import sys, venvonly; print(sys.prefix, venvonly.VALUE)"
    vpath = f"{shim_dir}:{vbin}:{path}"
    done = sh(["python3", "-c", code], vpath)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == [str(tmp_path / "v"), "42"]
    assert same_python(sh(["python3", "-c", "import sys; print(sys.executable)"], vpath), vbin)
    recorded = [r for r in runs("python3") if r["argv"][1:2] == ["-c"]]  # type: ignore[index]
    assert len(recorded) == 2 and str(recorded[0]["app_version"]).startswith("Python 3.")


def same_python(done: subprocess.CompletedProcess[bytes], vbin: Path) -> bool:
    return done.returncode == 0 and Path(done.stdout.decode().strip()) == vbin / "python3"


def test_version_recorded_once_per_executable_change(tmp_path: Path) -> None:
    shim_dir, real_dir = tmp_path / "shims", tmp_path / "real"
    real_dir.mkdir()
    tool, probes = real_dir / "mytool", tmp_path / "probes"
    script = '#!/bin/sh\nif [ "$1" = --version ]; then echo x >> {p}; echo "mytool {v}"; fi\n'
    tool.write_text(script.format(p=probes, v="1.0"))
    tool.chmod(0o755)
    path = f"{shim_dir}:{real_dir}:{SYSTEM_PATH}"
    install(shim_dir, "mytool", path=path)
    for _ in range(3):
        assert sh(["mytool", "go"], path).returncode == 0
    assert probes.read_text() == "x\n"
    tool.write_text(script.format(p=probes, v="1.10"))  # upgraded: another size
    assert sh(["mytool", "go"], path).returncode == 0
    assert probes.read_text() == "x\nx\n"
    assert [r["app_version"] for r in runs("mytool")] == ["mytool 1.10"] + ["mytool 1.0"] * 3


def test_version_probe_never_holds_the_command_up(tmp_path: Path) -> None:
    """A program that hangs on --version (and leaves a child holding its stdout) costs the
    first run 3 s at most, and is not asked again until it changes."""
    import psutil

    shim_dir, real_dir, probes = tmp_path / "shims", tmp_path / "real", tmp_path / "probes"
    real_dir.mkdir()
    tool = real_dir / "hangs"
    marker = f"{300 + uuid.uuid4().int % 1000 / 1000:.3f}"  # names its sleeps
    tool.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo x >> {probes}; '
                    f'sleep {marker} & sleep {marker}; fi\necho ran\n')
    tool.chmod(0o755)
    path = f"{shim_dir}:{real_dir}:{SYSTEM_PATH}"
    install(shim_dir, "hangs", path=path)
    # a hang guard: waiting on the probe would take 300 s
    done = sh(["hangs", "x"], path, timeout=60)
    assert done.returncode == 0 and done.stdout == b"ran\n"
    assert probes.read_text() == "x\n"  # probed once
    assert sh(["hangs", "x"], path, timeout=60).stdout == b"ran\n"
    assert probes.read_text() == "x\n"  # not probed again
    left = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", marker]]
    for p in left:
        p.kill()
    assert left == []  # the probe's process group went with it
    assert [r["app_version"] for r in runs("hangs")] == [None, None]
