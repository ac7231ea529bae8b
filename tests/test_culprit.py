"""Whose bug is it: a crash inside a real installed third-party distribution is named with
its version and its tracker (from its own metadata), with a pre-filled issue for that
project; a crash in the app's own code, or in the standard library called from it, names
nobody; a wrapped native program that crashed is named by the system's package manager."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rage.report.culprit import python_culprit, tracker_of
from tests.test_cli_exit_codes import RAGE

LIB = '''def parse(text):
    """Numbers, or a crash inside this library."""
    return _convert(text)


def _convert(text):
    return int(text)
'''
METADATA = """Metadata-Version: 2.1
Name: crashlib
Version: 1.4.2
Summary: a small library that crashes
Project-URL: Homepage, https://example.org/crashlib
Project-URL: Issues, https://github.com/example/crashlib/issues

"""
APP = """import sys
sys.path.insert(0, {here!r})
import crashlib
{install}
def main():
    print(crashlib.parse(sys.argv[1]))

main()
"""


def wheel(tmp_path: Path, version: str = "1.4.2") -> Path:
    """A real wheel of ``crashlib`` (1.4.2), built by hand (the format is a zip)."""
    info = f"crashlib-{version}.dist-info"
    files = {"crashlib/__init__.py": LIB,
             f"{info}/METADATA": METADATA.replace("1.4.2", version),
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
                              "Root-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    path = tmp_path / f"crashlib-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def pip_install(whl: Path, *args: str, python: Path | None = None) -> None:
    """The real pip installs it: into ``python``'s environment, or where ``args`` say."""
    where = ["--python", str(python)] if python else []
    subprocess.run([sys.executable, "-m", "pip", *where, "install", "-q", "--no-deps",
                    "--no-index", *args, str(whl)], check=True, capture_output=True,
                   timeout=120)


def report(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, object], str]:
    out = tmp_path / "b.tar.zst"
    proc = subprocess.run([RAGE, "report", "--last", "--yes", "--no-collect", "--output",
                           str(out)], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stderr
    def member(name: str) -> str:
        return subprocess.run(["tar", "--zstd", "-xOf", str(out), name], capture_output=True,
                              text=True, check=True).stdout

    return proc, json.loads(member("manifest.json")), member("summary.md")


def assert_names_crashlib(proc: subprocess.CompletedProcess[str],
                          manifest: dict[str, object], summary: str) -> None:
    culprit = manifest["culprit"]
    assert isinstance(culprit, dict)
    assert (culprit["name"], culprit["version"], culprit["tracker"], culprit["kind"]) == (
        "crashlib", "1.4.2", "https://github.com/example/crashlib/issues", "python")
    assert str(culprit["issue_url"]).startswith(
        "https://github.com/example/crashlib/issues/new?title=ValueError")
    assert "The crash is inside crashlib 1.4.2" in proc.stdout
    assert "tell them too: https://github.com/example/crashlib/issues/new?title=" in proc.stdout
    assert "## Whose bug" in summary and "not myapp's own code" in summary


def test_a_crash_inside_a_distribution_in_a_venv_names_it(tmp_path: Path) -> None:
    """`rage run -- VENV/bin/python app.py`: the wrapper's run, another interpreter's
    site-packages."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    vpy = venv / "bin" / "python"
    pip_install(wheel(tmp_path), python=vpy)
    app = tmp_path / "myapp"
    app.write_text(APP.format(here=str(tmp_path / "nowhere"), install=""))
    run = subprocess.run([RAGE, "run", "--app", "myapp", "--", str(vpy), str(app), "x"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 1 and "invalid literal for int()" in run.stderr
    assert_names_crashlib(*report(tmp_path))


def test_the_integration_s_crash_inside_a_target_directory_names_it(tmp_path: Path) -> None:
    """rage.install in the app, the library installed with `pip install --target`."""
    target = tmp_path / "lib"
    pip_install(wheel(tmp_path), "--target", str(target))
    app = tmp_path / "myapp.py"
    app.write_text(APP.format(here=str(target),
                              install='import rage\nrage.install("myapp", version="3.0")\n'))
    run = subprocess.run([sys.executable, str(app), "x"], capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode == 1 and "ValueError" in run.stderr
    proc, manifest, summary = report(tmp_path)
    assert_names_crashlib(proc, manifest, summary)
    assert "(in myapp 3.0)" in str(manifest["culprit"]["issue_url"]).replace(  # type: ignore[index]
        "%20", " ").replace("%28", "(").replace("%29", ")")


@pytest.mark.parametrize("code", ["raise RuntimeError('mine')", "import json; json.loads('x')"])
def test_a_crash_in_the_app_s_own_code_names_nobody(tmp_path: Path, code: str) -> None:
    app = tmp_path / "myapp.py"
    app.write_text(code + "\n")
    subprocess.run([RAGE, "run", "--app", "myapp", "--", sys.executable, str(app)],
                   capture_output=True, timeout=60, check=False)
    proc, manifest, summary = report(tmp_path)
    assert manifest["culprit"] is None
    assert "Whose bug" not in summary and "crash is inside" not in proc.stdout


@pytest.mark.skipif(not shutil.which("dpkg-query") or not os.path.exists("/usr/bin/perl"),
                    reason="needs Debian's dpkg and perl")
def test_a_wrapped_native_program_that_crashed_is_named_by_its_package(tmp_path: Path) -> None:
    owner = subprocess.run(["dpkg-query", "-S", "/usr/bin/perl"], capture_output=True,
                           text=True, check=False).stdout.split(":")[0]
    if not owner:
        pytest.skip("perl is not a package here")
    run = subprocess.run([RAGE, "run", "--", "/usr/bin/perl", "-e", "kill SEGV => $$"],
                         capture_output=True, timeout=60, check=False)
    assert run.returncode == -11
    proc, manifest, _summary = report(tmp_path)
    culprit = manifest["culprit"]
    assert isinstance(culprit, dict)
    assert (culprit["name"], culprit["kind"]) == (owner, "dpkg")
    assert f"the dpkg package {owner}" in proc.stdout


def test_the_tracker_comes_from_the_metadata_s_own_labels() -> None:
    assert tracker_of([("Project-URL", "Bug Tracker, https://bugs.example.org/x")]) == (
        "https://bugs.example.org/x")
    assert tracker_of([("Project-URL", "Source, https://github.com/psf/requests/tree/main")]) == (
        "https://github.com/psf/requests/issues")
    assert tracker_of([("Home-page", "https://gitlab.com/a/b")]) == "https://gitlab.com/a/b/issues"
    assert tracker_of([("Project-URL", "Documentation, https://docs.example.org")]) is None


def test_a_bounded_read_of_a_hostile_traceback() -> None:
    """A frame line of a megabyte and a million lines: parsed within bounds, no culprit."""
    text = ("Traceback (most recent call last):\n" + '  File "' + "x" * 1_000_000 + '", line 1'
            + ", in f\n" + '  File "/nowhere/a.py", line 1, in g\n' * 100_000 + "E: e\n")
    assert python_culprit(text, "app") is None
