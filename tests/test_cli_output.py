"""`rage report --output`: only new regular files, `-` is stdout, nothing else is touched.

Device nodes and fifos are made by the test in its own directory, never the machine's.
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest
import zstandard

from rage.bundle import open_bundle
from tests.test_cli_exit_codes import RAGE, rage
from tests.test_select import record


def report(*args: str) -> subprocess.CompletedProcess[str]:
    return rage("report", "--last", "--yes", "--no-collect", *args)


def bundles_anywhere(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".tar.zst")]


def test_existing_file_is_refused_and_untouched(tmp_path: Path) -> None:
    record("demo", ["demo"], 1, output=b"x\n")
    victim = tmp_path / "notes.txt"
    victim.write_text("precious\n")
    victim.chmod(0o644)
    p = report("--output", str(victim))
    assert p.returncode == 2
    assert p.stderr.startswith(f"rage: {victim} already exists (a file)")
    assert victim.read_text() == "precious\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_symlink_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    record("demo", ["demo"], 1)
    target = tmp_path / "target.txt"
    target.write_text("keep me")
    link = tmp_path / "link.tar.zst"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.tar.zst"
    dangling.symlink_to(tmp_path / "nowhere")
    for path in (link, dangling):
        p = report("--output", str(path))
        assert p.returncode == 2 and "(a symbolic link)" in p.stderr
        assert path.is_symlink()
    assert target.read_text() == "keep me"
    assert not (tmp_path / "nowhere").exists()


def test_fifo_is_refused_and_untouched(tmp_path: Path) -> None:
    record("demo", ["demo"], 1)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    p = report("--output", str(fifo))
    assert p.returncode == 2 and "(a named pipe)" in p.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_device_node_like_dev_null_is_untouched(tmp_path: Path) -> None:
    record("demo", ["demo"], 1)
    dev = tmp_path / "null"
    try:  # our own /dev/null twin (char 1,3), in the test's directory
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    before = os.lstat(dev)
    p = report("--output", str(dev))
    assert p.returncode == 2 and "(a device)" in p.stderr, p.stderr
    after = os.lstat(dev)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert after.st_mode == before.st_mode and after.st_ino == before.st_ino


def test_dash_writes_the_bundle_to_stdout(tmp_path: Path) -> None:
    record("demo", ["demo", "x"], 1, output=b"boom\n")
    p = subprocess.run([RAGE, "report", "--last", "--yes", "--no-collect", "--output", "-"],
                       capture_output=True, timeout=60, stdin=subprocess.DEVNULL, check=False,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "-").exists()
    raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(p.stdout)).read()
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        names = tar.getnames()
    assert names[:2] == ["manifest.json", "summary.md"] and "run/output.log" in names
    assert b"bundle written to standard output" in p.stderr
    assert not bundles_anywhere(Path(os.environ["RAGE_HOME"]))
    out = tmp_path / "piped.tar.zst"
    out.write_bytes(p.stdout)
    assert open_bundle(out).verify() == []


def test_dash_refuses_a_terminal_and_upload(tmp_path: Path) -> None:
    record("demo", ["demo"], 1)
    p = report("--output", "-", "--to", (tmp_path).as_uri())
    assert p.returncode == 2 and "--output -" in p.stderr


def test_missing_directory_with_slash_is_an_error(tmp_path: Path) -> None:
    record("demo", ["demo"], 1)
    p = report("--output", f"{tmp_path / 'nodir'}/")
    assert p.returncode == 2
    assert p.stderr.startswith(f"rage: no such directory: {tmp_path / 'nodir'}/")
    assert not (tmp_path / "nodir").exists()
    p = report("--output", str(tmp_path / "nodir" / "b.tar.zst"))
    assert p.returncode == 2 and "no such directory" in p.stderr
    assert not (tmp_path / "nodir").exists()


def test_existing_directory_gets_a_new_private_file(tmp_path: Path) -> None:
    record("demo", ["demo"], 1)
    d = tmp_path / "out"
    d.mkdir()
    for arg in (str(d), f"{d}/"):
        p = report("--output", arg)
        assert p.returncode == 0, p.stderr
    made = sorted(d.iterdir())
    assert len(made) == 2  # two reports in the same second get distinct names
    for b in made:
        assert b.name.startswith("demo-") and b.name.endswith(".tar.zst")
        assert stat.S_IMODE(b.stat().st_mode) == 0o600
        assert open_bundle(b).verify() == []
    assert not [p for p in d.iterdir() if p.name.startswith(".")]  # no temporary left


def test_new_file_is_written_0600(tmp_path: Path) -> None:
    record("demo", ["demo"], 1)
    out = tmp_path / "bug.tar.zst"
    p = report("--output", str(out))
    assert p.returncode == 0, p.stderr
    assert f"bundle written: {out}" in p.stdout
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and open_bundle(out).verify() == []
