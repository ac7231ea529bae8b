"""A member read through its listing (rage.bundle.seek) is the member's bytes, for bundles
other tools compressed: `tar | zstd` from a pipe writes frames that do not declare their
content size, which the listing then learns by inflating each once."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rage.bundle.seek import build_listing, open_listed

needs_zstd = pytest.mark.skipif(not shutil.which("zstd") or not shutil.which("tar"),
                                reason="needs the tar and zstd programs")


def members(root: Path) -> dict[str, bytes]:
    files = {"manifest.json": b'{"schema": 1}\n',
             "run/output.log": b"".join(b"line %d\n" % i for i in range(50_000)),
             "run/random.bin": os.urandom(300_000)}
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return files


@needs_zstd
@pytest.mark.parametrize("frames", [1, 3])
def test_members_of_a_piped_zstd_bundle_read_through_the_listing(tmp_path: Path,
                                                                 frames: int) -> None:
    src = tmp_path / "src"
    files = members(src)
    tar = subprocess.run(["tar", "--format=pax", "-C", str(src), "-cf", "-", *files],
                         capture_output=True, check=True).stdout
    # frames of a pipe: zstd cannot know, and does not write, their content size
    cut = [len(tar) * i // frames // 512 * 512 for i in range(frames)] + [len(tar)]
    bundle = tmp_path / "b.tar.zst"
    with bundle.open("wb") as out:
        for a, b in itertools.pairwise(cut):
            out.write(subprocess.run(["zstd", "-q", "-c"], input=tar[a:b],
                                     capture_output=True, check=True).stdout)
    with bundle.open("rb") as f:
        listing = build_listing(f, 1 << 30)
        assert len(listing.frames_in) == frames
        assert list(listing.frames_out) == cut[:-1]
        for name, data in files.items():
            m = open_listed(f, listing, name)
            got: list[bytes] = []
            assert m.pump(got.append) == m.size == len(data)
            assert b"".join(got) == data, name
