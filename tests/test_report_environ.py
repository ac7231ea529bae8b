"""`rage report` reads a run's `environ.json` within a bound, like every other record
member: an oversized, broken or planted one is left out with one warning line (the
environment section then describes the reporting process and says so), never a traceback,
a hang or the memory of the whole file. Real runs, real files, a real memory limit."""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest

from rage.bundle import open_bundle
from tests.test_cli_exit_codes import RAGE, rage


def recorded_run() -> Path:
    """A real run of `true`, with the environ.json its wrapper kept."""
    made = rage("run", "--", "true")
    assert made.returncode == 0, made.stderr
    [run_dir] = (Path(os.environ["RAGE_HOME"]) / "true" / "runs").iterdir()
    assert json.loads((run_dir / "environ.json").read_text())["RAGE_HOME"]
    return run_dir


def report(out: Path, limit_bytes: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:  # in the child, before exec: the whole report within it
        if limit_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run([RAGE, "report", "--last", "--yes", "--no-upload", "--output",
                           str(out)], capture_output=True, text=True, timeout=120,
                          check=False, stdin=subprocess.DEVNULL, preexec_fn=limit)


def environment_section(bundle: Path) -> dict[str, object]:
    reader = open_bundle(bundle)
    assert reader.verify() == []
    data: dict[str, object] = json.loads(reader.read("collectors/environment.json"))
    return data


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("rage: warning:")]


def test_the_recorded_environment_is_reported(tmp_path: Path) -> None:
    recorded_run()
    proc = report(tmp_path / "b.tar.zst")
    assert proc.returncode == 0 and warnings(proc.stderr) == [], proc.stderr
    assert "'source': 'run'" in str(environment_section(tmp_path / "b.tar.zst"))


def test_an_oversized_environment_is_left_out_with_one_warning(tmp_path: Path) -> None:
    """6 MiB of well-formed variables: over the bound, not read."""
    run_dir = recorded_run()
    big = {f"VAR_{i}": "x" * 1000 for i in range(6 * 1024)}
    (run_dir / "environ.json").write_text(json.dumps(big))
    proc = report(tmp_path / "b.tar.zst")
    assert proc.returncode == 0, proc.stderr
    assert warnings(proc.stderr) == [
        f"rage: warning: environ.json of run {run_dir.name[-8:]} not used: larger than 4 MiB"]
    section = str(environment_section(tmp_path / "b.tar.zst"))
    assert "'source': 'reporting process'" in section and "VAR_1" not in section


def test_a_huge_environment_file_is_never_read_whole(tmp_path: Path) -> None:
    """A 2 GiB file (sparse) under a 1 GiB address-space limit: reading it whole failed
    with MemoryError (an internal error); only the bound is read."""
    run_dir = recorded_run()
    with open(run_dir / "environ.json", "r+b") as f:
        f.truncate(2 << 30)
    proc = report(tmp_path / "b.tar.zst", limit_bytes=1 << 30)
    assert proc.returncode == 0, proc.stderr
    assert len(warnings(proc.stderr)) == 1 and "larger than 4 MiB" in proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


@pytest.mark.parametrize(("content", "reason"), [
    ("[" * 200_000 + "]" * 200_000, "nested too deep"),
    ('{"PATH": "/bin", "N": NaN}', "NaN is not a number rage writes"),
    ('{"PATH": ["/bin"]}', "not an object of strings"),
    ('{"PATH": "/bin"', "Expecting"),
], ids=["deep", "nan", "not-strings", "cut"])
def test_a_broken_environment_is_left_out_with_one_warning(tmp_path: Path, content: str,
                                                           reason: str) -> None:
    run_dir = recorded_run()
    (run_dir / "environ.json").write_text(content)
    proc = report(tmp_path / "b.tar.zst")
    assert proc.returncode == 0, proc.stderr
    [line] = warnings(proc.stderr)
    assert "environ.json" in line and reason in line, line
    assert "Traceback" not in proc.stderr


def test_a_fifo_or_a_symlink_in_its_place_is_not_followed(tmp_path: Path) -> None:
    """A FIFO would block a plain read forever; a symlink could point anywhere."""
    run_dir = recorded_run()
    env_file = run_dir / "environ.json"
    env_file.unlink()
    os.mkfifo(env_file)
    proc = report(tmp_path / "a.tar.zst")  # (the timeout fails the test if it blocks)
    assert proc.returncode == 0, proc.stderr
    assert "not a regular file of yours" in "".join(warnings(proc.stderr))
    env_file.unlink()
    secret = tmp_path / "elsewhere.json"
    secret.write_text('{"STOLEN": "value"}')
    env_file.symlink_to(secret)
    proc = report(tmp_path / "b.tar.zst")
    assert proc.returncode == 0, proc.stderr
    assert "not a regular file of yours" in "".join(warnings(proc.stderr))
    assert "STOLEN" not in str(environment_section(tmp_path / "b.tar.zst"))
