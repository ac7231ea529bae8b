"""What changed since it last worked: a successful run, then an option added, a secret
environment value changed and a real distribution upgraded in a real venv, then a failing
run. The report, `rage diff` and the bundle name exactly those three, and no value of the
secret, from the wrapper and from the integration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli_exit_codes import RAGE
from tests.test_culprit import pip_install, wheel

ROOT = Path(__file__).resolve().parent.parent
APP = """import sys
{install}
import crashlib
if "--fast" in sys.argv:
    sys.exit(4)
print(crashlib.parse("7"))
"""
OLD_KEY, NEW_KEY = "k3y-Old-Value-0123456789", "k3y-New-Value-9876543210"
EXPECTED = ["crashlib 1.4.2 -> 1.5.0", "option --fast added", "env MYTOOL_API_KEY changed"]


def venv(tmp_path: Path) -> Path:
    root = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                   timeout=120)
    return root / "bin" / "python"


def env(home: Path, key: str) -> dict[str, str]:
    return {**os.environ, "RAGE_HOME": str(home), "MYTOOL_API_KEY": key,
            "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize("recorder", ["wrapper", "integration"])
def test_the_report_names_exactly_what_changed(tmp_path: Path, recorder: str) -> None:
    home = tmp_path / "home"
    vpy = venv(tmp_path)
    pip_install(wheel(tmp_path, "1.4.2"), python=vpy)
    app = tmp_path / "tool.py"
    app.write_text(APP.format(install='import rage; rage.install("tool", version="1.0")'
                              if recorder == "integration" else ""))

    def run(key: str, *args: str) -> int:
        argv = [str(vpy), str(app), *args]
        if recorder == "wrapper":
            argv = [RAGE, "run", "--app", "tool", "--", *argv]
        return subprocess.run(argv, env=env(home, key), capture_output=True, timeout=60,
                              check=False).returncode

    assert run(OLD_KEY) == 0
    pip_install(wheel(tmp_path, "1.5.0"), "--upgrade", python=vpy)
    assert run(NEW_KEY, "--fast") == 4

    out = tmp_path / "b.tar.zst"
    rep = subprocess.run([RAGE, "report", "--last", "--app", "tool", "--yes", "--no-collect",
                          "--output", str(out)], env=env(home, "another-shell-value-1"),
                         capture_output=True, text=True, timeout=120, check=False,
                         stdin=subprocess.DEVNULL)
    assert rep.returncode == 0, rep.stderr
    [since] = [line for line in rep.stderr.splitlines() if line.startswith("Since it last")]
    assert since.split("): ", 1)[1] == ", ".join(EXPECTED)
    raw = subprocess.run(["zstd", "-dc", str(out)], capture_output=True, check=True).stdout
    for secret in (OLD_KEY, NEW_KEY):
        assert secret.encode() not in raw
    changes = json.loads(subprocess.run(["tar", "--zstd", "-xOf", str(out), "changes.json"],
                                        capture_output=True, check=True).stdout)
    assert changes["distributions"] == {"added": {}, "removed": {},
                                        "changed": {"crashlib": ["1.4.2", "1.5.0"]}}
    assert changes["options"]["added"] == ["--fast"]
    assert changes["env"] == {"added": [], "removed": [], "changed": ["MYTOOL_API_KEY"]}
    assert changes["exit"] == ["exit 0", "exit 4"]
    summary = subprocess.run(["tar", "--zstd", "-xOf", str(out), "summary.md"],
                             capture_output=True, text=True, check=True).stdout
    assert "## Since it last worked" in summary and "crashlib 1.4.2 -> 1.5.0" in summary

    diff = subprocess.run([RAGE, "diff", "--app", "tool"], env=env(home, "x"),
                          capture_output=True, text=True, timeout=60, check=False)
    assert diff.returncode == 0, diff.stderr
    assert [line[4:] for line in diff.stdout.splitlines() if line.startswith("  - ")] == EXPECTED


def test_a_run_that_never_worked_says_so_and_diff_needs_a_baseline(tmp_path: Path) -> None:
    home = tmp_path / "home"
    subprocess.run([RAGE, "run", "--", "sh", "-c", "exit 2"], env=env(home, "x"), check=False,
                   capture_output=True, timeout=60)
    rep = subprocess.run([RAGE, "report", "--last", "--yes", "--no-collect", "--output",
                          str(tmp_path / "b.tar.zst")], env=env(home, "x"), capture_output=True,
                         text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert "It never worked before" in rep.stderr
    diff = subprocess.run([RAGE, "diff"], env=env(home, "x"), capture_output=True, text=True,
                          timeout=60, check=False)
    assert diff.returncode == 3 and "no earlier successful run" in diff.stderr
    assert "Traceback" not in diff.stderr


def test_config_files_declared_by_the_app_are_compared(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conf = tmp_path / "tool.toml"
    conf.write_text("retries = 3\n")
    base = [RAGE, "run", "--app", "tool", "--config-file", str(conf), "--", "sh", "-c"]
    subprocess.run([*base, "exit 0"], env=env(home, "x"), check=True, timeout=60,
                   capture_output=True)
    conf.write_text("retries = 0\n")
    subprocess.run([*base, "exit 1"], env=env(home, "x"), check=False, timeout=60,
                   capture_output=True)
    diff = subprocess.run([RAGE, "diff", "--json"], env=env(home, "x"), capture_output=True,
                          text=True, timeout=60, check=False)
    found = json.loads(diff.stdout)
    assert found["config"]["changed"] == [str(conf)]
    assert "retries" not in diff.stdout  # compared by digest: its content is never shown


def test_no_findings_leaves_them_out(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for code in ("0", "3"):
        subprocess.run([RAGE, "run", "--app", "tool", "--", "sh", "-c", f"exit {code}"],
                       env=env(home, "x"), capture_output=True, timeout=60, check=False)
    out = tmp_path / "b.tar.zst"
    rep = subprocess.run([RAGE, "report", "--last", "--yes", "--no-collect", "--no-findings",
                          "--output", str(out)], env=env(home, "x"), capture_output=True,
                         text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert rep.returncode == 0, rep.stderr
    assert "Since it last worked" not in rep.stdout + rep.stderr
    names = subprocess.run(["tar", "--zstd", "-tf", str(out)], capture_output=True, text=True,
                           check=True).stdout.split()
    assert "changes.json" not in names
    manifest = json.loads(subprocess.run(["tar", "--zstd", "-xOf", str(out), "manifest.json"],
                                         capture_output=True, check=True).stdout)
    assert manifest["culprit"] is None and manifest["since_it_worked"] is None
