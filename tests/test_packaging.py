"""The release artefacts: `python -m build` makes an sdist and a wheel, and the wheel alone,
installed in a fresh virtual environment with no checkout on its path, runs rage.

The build resolves its backend (setuptools) and the install rage's dependencies from the
package index, as a user's would; the pip cache makes both quick after the first time.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

def run(argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=cwd, stdin=subprocess.DEVNULL, check=False)


def build(tmp: Path) -> tuple[Path, Path]:
    """sdist and wheel of a copy of the checkout (the build writes egg-info beside it)."""
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", "*.egg-info", "build", "dist", "site", ".mypy_cache",
        ".ruff_cache", ".pytest_cache", ".hypothesis"))
    out = tmp / "dist"
    p = run([sys.executable, "-m", "build", "--outdir", str(out), str(src)])
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (sdist,) = out.glob("rage_report-*.tar.gz")
    (wheel,) = out.glob("rage_report-*-py3-none-any.whl")
    return sdist, wheel


def check_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = z.read(meta).decode()
        entry_points = z.read(meta.replace("METADATA", "entry_points.txt")).decode()
    tops = {n.split("/")[0] for n in names}
    data = meta.split("/")[0].replace(".dist-info", ".data")
    assert tops == {"rage", "collectors", meta.split("/")[0], data}, tops  # no tests/, docs/
    with zipfile.ZipFile(wheel) as z:
        script = z.read(f"{data}/scripts/rage")
    # the `rage` command is a script of its own, not the launcher pip writes for an entry
    # point (which imports `re` on every recorded command); installers fix its first line
    assert script.startswith(b"#!python\n") and b"import re" not in script
    for needed in ("rage/__init__.py", "rage/py.typed", "rage/cli/main.py",
                   "rage/server/templates/bundle.html", "rage/server/templates/style.css",
                   "collectors/__init__.py", "collectors/git.py"):
        assert needed in names, needed
    assert re.search(r"^Requires-Python: >=3\.11", metadata, re.MULTILINE)
    assert re.search(r"^License-Expression: MIT$", metadata, re.MULTILINE)
    assert re.search(r"^Provides-Extra: server$", metadata, re.MULTILINE)
    assert "console_scripts" not in entry_points
    assert "git = collectors.git:GitCollector" in entry_points


def check_sdist(sdist: Path) -> None:
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    for needed in ("pyproject.toml", "README.md", "rage/__init__.py", "collectors/git.py",
                   "rage/server/templates/bundle.html", "bin/rage"):
        assert needed in names, needed


def test_the_extra_hint_names_how_this_rage_was_installed() -> None:
    from rage.cli.extras import install_command

    # the suite runs from an editable install of this checkout (the README's test command)
    assert shlex.split(install_command("server")) == [
        sys.executable, "-m", "pip", "install", "-e", f"{ROOT}[server]"]


@pytest.mark.slow  # a build, a venv and two installs: ~25 s
def test_the_wheel_builds_installs_alone_and_runs(tmp_path: Path) -> None:
    sdist, wheel = build(tmp_path)
    check_sdist(sdist)
    check_wheel(wheel)

    venv = tmp_path / "venv"
    assert run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    py, rage = venv / "bin" / "python", str(venv / "bin" / "rage")
    p = run([str(py), "-m", "pip", "install", "-q", str(wheel)])
    assert p.returncode == 0, p.stderr[-3000:]

    # a user's shell: nothing of the checkout or the test environment on the path
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "VIRTUAL_ENV", "RAGE_"))}
    env.update(PATH=f"{venv / 'bin'}:/usr/bin:/bin", HOME=str(tmp_path / "home"),
               RAGE_HOME=str(tmp_path / "state"))
    where = run([str(py), "-c", "import rage, collectors; print(rage.__file__, "
                 "collectors.__file__)"], env=env, cwd=work)
    assert where.stdout.count(str(venv / "lib")) == 2, where.stdout + where.stderr

    p = run([rage, "run", "--", "true"], env=env, cwd=work)
    assert p.returncode == 0, p.stderr
    assert Path(rage).read_text().startswith(f"#!{py}")
    p = run([str(py), "-X", "importtime", rage, "run", "--", "true"], env=env, cwd=work)
    assert p.returncode == 0 and "| rage.record.wrapper" in p.stderr, p.stderr
    assert not [ln for ln in p.stderr.splitlines() if ln.endswith("| re")], p.stderr
    out = work / "out"
    out.mkdir()
    p = run([rage, "report", "--last", "--yes", "--output", f"{out}/"], env=env, cwd=work)
    assert p.returncode == 0, p.stderr
    (bundle,) = out.glob("*.tar.zst")
    p = run([rage, "inspect", str(bundle)], env=env, cwd=work)
    assert p.returncode == 0 and "checksums: ok" in p.stdout, p.stdout + p.stderr
    p = run([rage, "serve", "--help"], env=env, cwd=work)
    assert p.returncode == 0 and "--max-bundle-size" in p.stdout, p.stderr

    # without the server extra, `rage serve` says exactly what to run; running it works
    p = run([rage, "serve", "--port", "0", "--storage", str(tmp_path / "srv")], env=env,
            cwd=work)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    hint = p.stderr.strip().splitlines()[-1]
    prefix = "rage: install it with: "
    assert hint.startswith(prefix), p.stderr
    command = hint[len(prefix):]
    assert shlex.split(command) == [str(py), "-m", "pip", "install", f"{wheel}[server]"]
    installed = run(["sh", "-c", command], env=env, cwd=work)
    assert installed.returncode == 0, installed.stderr[-3000:]
    server = subprocess.Popen([rage, "serve", "--port", "0", "--storage",
                               str(tmp_path / "srv")], env=env, cwd=work,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline and "listening on" not in line:
            line = server.stdout.readline()
            if not line and server.poll() is not None:
                break
        assert "rage serve: listening on http://127.0.0.1:" in line, line
    finally:
        server.terminate()
        server.communicate(timeout=30)  # waits, and closes the pipe
