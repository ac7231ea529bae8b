"""The bundle format: round trips, tampering, and hostile archives (API and `rage inspect`)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rage.bundle import (
    BundleReader,
    BundleTooLarge,
    check_member_name,
    iter_capped,
    normalize_member_name,
    open_bundle,
    peek_manifest,
    read_members,
    sha256_of,
    validate_bundle,
    write_bundle,
)
from rage.bundle.frames import Framed
from rage.errors import BadInputError
from tests.conftest import run_rage

# -- helpers ---------------------------------------------------------------------------------

_part = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12)
member_names = st.lists(_part, min_size=1, max_size=3).map(lambda ps: "run/" + "/".join(ps))
# what traversals and confused readers are made of: random text almost never spells `..`,
# so these are drawn as often as text is, and `..` on its own as often again
HOSTILE_SEGMENTS = ("..", ".", "", "...", "..\\x", "x\\..", "\\", "x\0y", "\0", "~", "C:",
                    "x" * 1100, "run", "output.log", " ", "\n", "\x1b[2J", "\udcff", "é")
_segment = st.one_of(st.just(".."), st.sampled_from(HOSTILE_SEGMENTS), st.text(max_size=8))
hostile_names = st.builds(lambda lead, parts: lead + "/".join(parts),
                          st.sampled_from(("", "", "/", "./", "//")),
                          st.lists(_segment, min_size=1, max_size=5))


def is_plain(name: str) -> bool:
    """A plain relative POSIX path (the writer's rule), written out independently."""
    parts = name.split("/")
    return (0 < len(name) <= 1024 and not name.startswith("/") and "\\" not in name
            and not any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or 0xd800 <= ord(c) <= 0xdfff
                        for c in name)
            and not any(part in ("", ".", "..") for part in parts))


def manifest_for(members: dict[str, bytes]) -> bytes:
    files = [{"name": n, "size": len(d), "sha256": sha256_of(d)[1]} for n, d in members.items()]
    return json.dumps({"schema": 1, "app": "demo", "files": files}).encode()


def make_bundle(path: Path, members: dict[str, bytes]) -> Path:
    """A well-formed bundle written by the real writer."""
    entries: list[tuple[str, bytes | Path]] = [("manifest.json", manifest_for(members))]
    entries += list(members.items())
    write_bundle(path, entries, mtime=time.time())
    return path


def raw_tar_zst(path: Path, entries: Sequence[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    """Any tar (hostile ones included) compressed with zstd, bypassing the writer's checks."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in entries:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(buf.getvalue()))
    return path


def reg(name: str) -> tarfile.TarInfo:
    return tarfile.TarInfo(name)


def special(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    if kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        info.devmajor, info.devminor = 1, 3
    return info


def manifest_entry(members: dict[str, bytes] | None = None) -> tuple[tarfile.TarInfo, bytes]:
    return reg("manifest.json"), manifest_for(members or {})


def rewrite_with(src: Path, dst: Path, name: str, new: bytes) -> None:
    """Copy a bundle member by member, replacing one member's bytes (a tampered bundle)."""
    dctx = zstandard.ZstdDecompressor()
    with open(src, "rb") as f, dctx.stream_reader(f) as r:
        raw = r.read()
    entries: list[tuple[tarfile.TarInfo, bytes | None]] = []
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r") as tar:
        for info in tar:
            fobj = tar.extractfile(info)
            assert fobj is not None
            data = fobj.read()
            entries.append((info, new if info.name == name else data))
    raw_tar_zst(dst, entries)


# -- writing and reading ---------------------------------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(member_names, st.binary(max_size=3000), min_size=0, max_size=6))
def test_round_trip_arbitrary_contents(members: dict[str, bytes]) -> None:
    # a name cannot be both a file and a directory: keep leaves only
    names = sorted(members)
    members = {n: members[n] for n in names if not any(o.startswith(n + "/") for o in names)}
    members = {"summary.md": b"# demo\n", **members}
    with tempfile.TemporaryDirectory() as d:
        path = make_bundle(Path(d) / "b.tar.zst", members)
        reader = open_bundle(path)
        assert reader.verify() == []
        assert reader.summary == "# demo\n"
        assert [m.name for m in reader.members] == list(members)
        for name, data in members.items():
            assert reader.read(name) == data
        out = reader.extract(Path(d) / "x")
        assert {p.relative_to(Path(d) / "x").as_posix() for p in out} == {
            "manifest.json", *members}
        for name, data in members.items():
            assert (Path(d) / "x" / name).read_bytes() == data
        assert validate_bundle(path)["app"] == "demo"
        with open(path, "rb") as f:  # the receiver passes an open file
            assert validate_bundle(f)["schema"] == 1


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.binary(min_size=1, max_size=500), min_size=1, max_size=4),
    st.data(),
)
def test_tampered_member_fails_verification(contents: list[bytes], data: st.DataObject) -> None:
    members = {f"run/f{i}.log": c for i, c in enumerate(contents)}
    victim = data.draw(st.sampled_from(sorted(members)))
    pos = data.draw(st.integers(0, len(members[victim]) - 1))
    changed = bytearray(members[victim])
    changed[pos] ^= data.draw(st.integers(1, 255))
    with tempfile.TemporaryDirectory() as d:
        good = make_bundle(Path(d) / "good.tar.zst", members)
        bad = Path(d) / "bad.tar.zst"
        rewrite_with(good, bad, victim, bytes(changed))
        assert open_bundle(good).verify() == []
        assert open_bundle(bad).verify() == [f"{victim}: checksum mismatch"]
        with pytest.raises(BadInputError, match="checksum mismatch"):
            validate_bundle(bad)


def test_missing_and_unlisted_members_are_reported(tmp_path: Path) -> None:
    listed = {"run/a.log": b"a", "run/b.log": b"b"}
    path = raw_tar_zst(tmp_path / "b.tar.zst", [
        manifest_entry(listed), (reg("run/a.log"), b"a"), (reg("run/extra.log"), b"x"),
    ])
    assert sorted(open_bundle(path).verify()) == [
        "run/b.log: listed in the manifest but missing",
        "run/extra.log: not listed in the manifest",
    ]


def test_written_bundle_is_private_and_anonymous(tmp_path: Path) -> None:
    before = int(time.time())
    path = make_bundle(tmp_path / "out" / "b.tar.zst", {"summary.md": b"s", "run/x": b"xx"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    with open(path, "rb") as f, zstandard.ZstdDecompressor().stream_reader(f) as r:
        raw = r.read()
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        infos = tar.getmembers()
    assert [i.name for i in infos] == ["manifest.json", "summary.md", "run/x"]
    for i in infos:
        assert (i.uid, i.gid, i.uname, i.gname, i.mode) == (0, 0, "", "", 0o644)
        assert before <= i.mtime <= time.time() + 1


def test_writer_refuses_unsafe_names(tmp_path: Path) -> None:
    for bad in ("/etc/passwd", "../x", "a/../../x", "a//b", "./a", ""):
        with pytest.raises(BadInputError):
            write_bundle(tmp_path / "b.tar.zst", [(bad, b"x")], mtime=0)
    assert not (tmp_path / "b.tar.zst").exists()


@given(st.one_of(hostile_names, st.text(max_size=40)))
def test_check_member_name_accepts_only_plain_relative_paths(name: str) -> None:
    try:
        ok = check_member_name(name)
    except BadInputError:
        assert not is_plain(name)
        return
    assert ok == name and is_plain(ok)


@given(st.one_of(hostile_names, st.text(alphabet="ab./\\\0", max_size=20)))
def test_normalize_member_name_is_plain_or_refused(name: str) -> None:
    # the harmless spellings other tar writers use (`./a//b/`): empty and `.` parts dropped
    plain = "/".join(p for p in name.split("/") if p not in ("", "."))
    try:
        ok = normalize_member_name(name)
    except BadInputError:
        assert name.startswith("/") or not is_plain(plain), name
        return
    assert ok == plain and is_plain(ok), ok
    assert check_member_name(ok) == ok  # plain: the writer's strict rule holds
    assert normalize_member_name(ok) == ok


# -- hostile input through the API -----------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=2000), st.booleans())
def test_random_bytes_are_bad_input(blob: bytes, with_magic: bool) -> None:
    if with_magic:
        blob = b"\x28\xb5\x2f\xfd" + blob
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "r.tar.zst"
        p.write_bytes(blob)
        with pytest.raises(BadInputError):
            open_bundle(p)


def test_decompression_bomb_is_refused_early(tmp_path: Path) -> None:
    # 256 MiB of zeros compress to a few KiB; the reader must stop at the bound
    bomb = tmp_path / "bomb.tar.zst"
    size = 256 * 1024 * 1024
    info = reg("run/zeros")
    info.size = size
    cctx = zstandard.ZstdCompressor(level=3)
    with open(bomb, "wb") as f, cctx.stream_writer(f) as zw, tarfile.open(
        fileobj=zw, mode="w|"
    ) as tar:
        m_info, m_data = manifest_entry()
        m_info.size = len(m_data)
        tar.addfile(m_info, io.BytesIO(m_data))
        tar.addfile(info, _Zeros(size))
    assert bomb.stat().st_size < 1024 * 1024
    with pytest.raises(BadInputError, match="limit"):
        open_bundle(bomb, max_decompressed=8 * 1024 * 1024)


def test_many_small_members_still_hit_the_bound(tmp_path: Path) -> None:
    chunk = b"\0" * (1024 * 1024)
    entries = [manifest_entry()] + [(reg(f"run/z{i}"), chunk) for i in range(12)]
    path = raw_tar_zst(tmp_path / "b.tar.zst", entries)
    with pytest.raises(BadInputError, match="limit"):
        open_bundle(path, max_decompressed=8 * 1024 * 1024)
    assert open_bundle(path, max_decompressed=64 * 1024 * 1024).verify()  # unlisted members


class _Zeros:
    def __init__(self, n: int) -> None:
        self.left = n

    def read(self, size: int = -1) -> bytes:
        n = self.left if size < 0 else min(size, self.left)
        self.left -= n
        return b"\0" * n


# -- hostile input through `rage inspect` ----------------------------------------------------

def _hostile(tmp: Path, kind: str) -> Path:
    p = tmp / f"{kind}.tar.zst"
    m = manifest_entry()
    if kind == "absolute":
        return raw_tar_zst(p, [m, (reg(str(tmp / "outside" / "pwned")), b"x")])
    if kind == "dotdot":
        return raw_tar_zst(p, [m, (reg("run/../../outside/pwned"), b"x")])
    if kind == "symlink":
        return raw_tar_zst(p, [m, (special("run/link", tarfile.SYMTYPE,
                                           str(tmp / "outside")), None),
                               (reg("run/link/pwned"), b"x")])
    if kind == "hardlink":
        return raw_tar_zst(p, [m, (special("run/hl", tarfile.LNKTYPE, "/etc/passwd"), None)])
    if kind == "device":
        return raw_tar_zst(p, [m, (special("run/dev", tarfile.CHRTYPE), None)])
    if kind == "fifo":
        return raw_tar_zst(p, [m, (special("run/fifo", tarfile.FIFOTYPE), None)])
    if kind == "duplicate":
        return raw_tar_zst(p, [m, (reg("run/a"), b"1"), (reg("run/a"), b"2")])
    if kind == "manifest-not-first":
        return raw_tar_zst(p, [(reg("run/a"), b"1"), m])
    if kind == "bad-json":
        return raw_tar_zst(p, [(reg("manifest.json"), b"{not json")])
    if kind == "not-tar":
        p.write_bytes(zstandard.ZstdCompressor().compress(os.urandom(5000)))
        return p
    if kind == "not-zstd":
        p.write_bytes(os.urandom(5000))
        return p
    if kind == "truncated":
        good = make_bundle(tmp / "good.tar.zst", {"run/out.log": os.urandom(200_000)})
        p.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
        return p
    if kind == "bomb":
        return raw_tar_zst(p, [m, (reg("run/zeros"), b"\0" * (20 * 1024 * 1024))])
    raise AssertionError(kind)


HOSTILE = ["absolute", "dotdot", "symlink", "hardlink", "device", "fifo", "duplicate",
           "manifest-not-first", "bad-json", "not-tar", "not-zstd", "truncated", "bomb"]


@pytest.mark.parametrize("kind", HOSTILE)
def test_inspect_refuses_hostile_bundles(tmp_path: Path, kind: str) -> None:
    path = _hostile(tmp_path, kind)
    dest = tmp_path / "extract"
    proc = run_rage("inspect", str(path), "--extract", str(dest), "--max-size", "4MiB")
    assert proc.returncode == 6, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rage: "), proc.stderr
    assert not (tmp_path / "outside").exists()
    assert not dest.exists() or not any(dest.rglob("*"))  # nothing extracted either


def test_inspect_reports_each_failed_checksum(tmp_path: Path) -> None:
    members = {"summary.md": b"# s\n", "run/a.log": b"aaa", "run/b.log": b"bbb"}
    good = make_bundle(tmp_path / "good.tar.zst", members)
    bad = tmp_path / "bad.tar.zst"
    rewrite_with(good, bad, "run/b.log", b"BBB")
    proc = run_rage("inspect", str(bad), "--extract", str(tmp_path / "x"))
    assert proc.returncode == 6
    assert "rage: verification failed: run/b.log: checksum mismatch" in proc.stderr
    assert not (tmp_path / "x").exists()
    ok = run_rage("inspect", str(good), "--extract", str(tmp_path / "y"))
    assert ok.returncode == 0, ok.stderr
    assert "# s" in ok.stdout and "run/a.log" in ok.stdout and "checksums: ok" in ok.stdout
    assert (tmp_path / "y" / "run" / "b.log").read_bytes() == b"bbb"
    again = run_rage("inspect", str(good), "--extract", str(tmp_path / "y"))
    assert again.returncode == 6 and "already exists" in again.stderr  # never overwrites


def test_inspect_json_and_missing_file(tmp_path: Path) -> None:
    good = make_bundle(tmp_path / "g.tar.zst", {"summary.md": b"hi", "run/a": b"a"})
    proc = run_rage("inspect", str(good), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["problems"] == [] and [m["name"] for m in data["members"]] == ["summary.md",
                                                                              "run/a"]
    missing = run_rage("inspect", str(tmp_path / "nope.tar.zst"))
    assert missing.returncode == 3 and missing.stderr.startswith("rage: ")  # 3: no such bundle


def test_reader_read_unknown_member(tmp_path: Path) -> None:
    from rage.errors import NotFoundError

    reader: BundleReader = open_bundle(make_bundle(tmp_path / "g.tar.zst", {"run/a": b"a"}))
    with pytest.raises(NotFoundError):
        reader.read("run/zzz")


# -- one reader: normalised names, fail-fast validation, capped reads -------------------------

def test_reader_normalises_harmless_spellings(tmp_path: Path) -> None:
    members = {"run/a.log": b"alpha"}
    path = raw_tar_zst(tmp_path / "b.tar.zst", [
        manifest_entry(members), (reg("./run//a.log"), b"alpha")])
    reader = open_bundle(path)
    assert [m.name for m in reader.members] == ["run/a.log"] and reader.verify() == []
    assert reader.read("run/a.log") == b"alpha"
    assert (tmp_path / "x" / "run" / "a.log") in reader.extract(tmp_path / "x")
    dup = raw_tar_zst(tmp_path / "dup.tar.zst", [
        manifest_entry(members), (reg("run/a.log"), b"alpha"), (reg("./run/a.log"), b"again")])
    with pytest.raises(BadInputError, match="duplicate member"):
        open_bundle(dup)


def test_sparse_member_and_directory_first_are_refused(tmp_path: Path) -> None:
    sparse = reg("run/holes")
    sparse.type = tarfile.GNUTYPE_SPARSE
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        m_info, m_data = manifest_entry()
        m_info.size = len(m_data)
        tar.addfile(m_info, io.BytesIO(m_data))
        tar.addfile(sparse, io.BytesIO(b""))
    path = tmp_path / "s.tar.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(buf.getvalue()))
    with pytest.raises(BadInputError, match="special file"):
        open_bundle(path)
    dirfirst = raw_tar_zst(tmp_path / "d.tar.zst", [
        (special("run", tarfile.DIRTYPE), None), manifest_entry()])
    with pytest.raises(BadInputError, match="first member is 'run'"):
        validate_bundle(dirfirst)


def test_too_large_is_its_own_error_both_ways(tmp_path: Path) -> None:
    # tar reads ahead 10 KiB at a time: budgets here are well above that
    one = raw_tar_zst(tmp_path / "one.tar.zst", [manifest_entry(), (reg("run/z"), b"\0" * 10**5)])
    with pytest.raises(BundleTooLarge, match=r"'run/z' .* exceeds"):  # the header's claim
        validate_bundle(one, 64 * 1024)
    small = {f"run/z{i}": b"\0" * 100 for i in range(200)}
    many = raw_tar_zst(tmp_path / "many.tar.zst",
                       [manifest_entry(small)] + [(reg(n), d) for n, d in small.items()])
    with pytest.raises(BundleTooLarge, match="inflates beyond"):  # the byte counter
        validate_bundle(many, 64 * 1024)
    assert issubclass(BundleTooLarge, BadInputError)


def test_the_budget_is_exact_whatever_the_decompressor_reads_ahead(tmp_path: Path) -> None:
    # the reader takes blocks of 256 KiB from zstd; the budget still counts the bytes tar
    # reads, so a bundle of exactly the limit passes and one byte less refuses it
    members = {"run/a.log": os.urandom(300_000), "run/b.log": b"b" * 700_000}
    path = make_bundle(tmp_path / "b.tar.zst", members)
    inflated = len(zstandard.ZstdDecompressor().stream_reader(path.read_bytes()).read())
    assert validate_bundle(path, inflated)["files"]
    with pytest.raises(BundleTooLarge):
        validate_bundle(path, inflated - 1)


def test_the_decompressor_is_read_in_blocks(tmp_path: Path) -> None:
    from rage.bundle.stream import CHUNK, _Bounded

    data = os.urandom(CHUNK) * 3 + b"tail"
    calls: list[int] = []

    class Counting(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            calls.append(size if size is not None else -1)
            return super().read(size)

    b = _Bounded(Counting(data), limit=10 * len(data))
    out = bytearray()
    while chunk := b.read(10240):  # tarfile's record size
        out += chunk
    assert bytes(out) == data and b.total == len(data)
    assert calls == [CHUNK] * 5  # 4 blocks and the empty read at the end
    calls.clear()
    near = _Bounded(Counting(data), limit=len(data))  # never asks past the budget's end
    while near.read(10240):
        pass
    # the tail's 4 bytes and one more (a bomb costs at most the limit), then the end
    assert calls == [CHUNK] * 3 + [5, 1]
    whole = _Bounded(io.BytesIO(data), limit=len(data))
    assert whole.read(5) == data[:5] and whole.read() == data[5:]
    with pytest.raises(BundleTooLarge):
        _Bounded(io.BytesIO(data), limit=len(data) - 1).read()


def test_validation_refuses_an_unlisted_member_before_reading_it(tmp_path: Path) -> None:
    # the unlisted member's data is cut short: reading it would fail as "truncated"
    def block(info: tarfile.TarInfo, data: bytes) -> bytes:
        info.size = len(data)
        return info.tobuf(tarfile.PAX_FORMAT) + data + b"\0" * (-len(data) % 512)

    m_info, m_data = manifest_entry({"run/a.log": b"a"})
    extra = reg("run/unlisted.bin")
    extra.size = 1_000_000
    hostile = (block(m_info, m_data) + block(reg("run/a.log"), b"a")
               + extra.tobuf(tarfile.PAX_FORMAT) + os.urandom(4096))
    path = tmp_path / "h.tar.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(hostile))
    with pytest.raises(BadInputError, match=r"run/unlisted\.bin: not listed in the manifest"):
        validate_bundle(path)
    with pytest.raises(BadInputError, match=r"truncated|corrupt"):
        open_bundle(path)  # the collect-all reader does read it, and meets the cut


def test_manifest_rules(tmp_path: Path) -> None:
    data = {"run/a": b"a"}
    upper = json.loads(manifest_for(data))
    upper["files"][0]["sha256"] = upper["files"][0]["sha256"].upper()
    cases: list[tuple[dict[str, object], str | None]] = [
        (upper, None),
        ({**upper, "run": "not an object"}, "'run' is not an object"),
        ({**upper, "files": [{**upper["files"][0], "name": "../a"}]}, "unsafe member name"),
        ({**upper, "schema": 2}, "unsupported bundle schema"),
    ]
    for i, (manifest, error) in enumerate(cases):
        path = raw_tar_zst(tmp_path / f"m{i}.tar.zst", [
            (reg("manifest.json"), json.dumps(manifest).encode()), (reg("run/a"), b"a")])
        if error is None:
            assert validate_bundle(path)["files"] == upper["files"]
        else:
            with pytest.raises(BadInputError, match=error):
                validate_bundle(path)


def test_reads_from_a_pipe_and_across_zstd_frames(tmp_path: Path) -> None:
    one = make_bundle(tmp_path / "one.tar.zst", {"run/a.log": b"a" * 5000})
    with open(one, "rb") as f, zstandard.ZstdDecompressor().stream_reader(f) as r:
        raw = r.read()
    cctx = zstandard.ZstdCompressor()
    multi = tmp_path / "multi.tar.zst"
    multi.write_bytes(cctx.compress(raw[:3000]) + cctx.compress(raw[3000:]))
    assert open_bundle(multi).verify() == []
    with subprocess.Popen(["cat", str(multi)], stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        assert validate_bundle(proc.stdout)["app"] == "demo"


def test_capped_reads_keep_head_or_tail_of_selected_members(tmp_path: Path) -> None:
    log = b"".join(b"line %d\n" % i for i in range(1000))
    path = make_bundle(tmp_path / "b.tar.zst", {"summary.md": b"# s\n", "run/out.log": log,
                                                "run/core.bin": b"\xff" * 10})
    tails = read_members(path, cap=100)
    assert list(tails) == ["manifest.json", "summary.md", "run/out.log", "run/core.bin"]
    out = tails["run/out.log"]
    assert (out.cut, out.size, out.data) == (True, len(log), log[-100:])
    assert (tails["summary.md"].cut, tails["summary.md"].text) == (False, "# s\n")
    heads = read_members(path, cap=100, keep="head", select=lambda n, s: n.endswith(".log"))
    assert list(heads) == ["run/out.log"] and heads["run/out.log"].data == log[:100]

    seen: list[str] = []

    def until_first_log(name: str, size: int) -> bool:  # depends on what came before
        return not any(n.endswith(".log") for n in seen)

    for m in iter_capped(path, cap=10**6, keep="head", select=until_first_log):
        seen.append(m.name)
    assert seen == ["manifest.json", "summary.md", "run/out.log"]


def test_capped_reads_apply_the_safety_rules(tmp_path: Path) -> None:
    for kind in ("dotdot", "symlink", "manifest-not-first", "truncated", "bomb"):
        with pytest.raises(BadInputError):
            read_members(_hostile(tmp_path, kind), cap=10, max_decompressed=4 * 1024 * 1024)


def test_peek_manifest_reads_only_the_first_member(tmp_path: Path) -> None:
    good = make_bundle(tmp_path / "g.tar.zst", {"run/out.log": os.urandom(300_000)})
    cut = tmp_path / "cut.tar.zst"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    assert peek_manifest(cut)["app"] == "demo"
    with pytest.raises(BadInputError):
        open_bundle(cut)
    with pytest.raises(BadInputError, match="not zstd"):
        peek_manifest(_hostile(tmp_path, "not-zstd"))


# -- parser differentials: what rage reads must be what GNU tar extracts ----------------------

def _tar_then(tail: bytes) -> bytes:
    """A sound bundle's tar stream (end-of-archive zeros stripped), then ``tail``."""
    members = {"run/stdout.log": b"what rage shows\n"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in [("manifest.json", manifest_for(members)), *members.items()]:
            info = reg(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    head = buf.getvalue().rstrip(b"\0")
    return head + b"\0" * (-len(head) % 512) + tail


def _hidden_members() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in (("run/stdout.log", b"hidden from rage\n"), (".bashrc", b"evil\n")):
            info = reg(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        tar.addfile(special("etc", tarfile.SYMTYPE, "/etc"))
    return buf.getvalue()


def _gnu_tar_lists(path: Path) -> list[str]:
    proc = subprocess.run(["tar", "--zstd", "-tf", str(path)], capture_output=True, text=True,
                          check=False)
    return proc.stdout.split()


needs_gnu_tar = pytest.mark.skipif(
    subprocess.run(["tar", "--version"], capture_output=True, text=True,
                   check=False).stdout.find("GNU tar") < 0, reason="needs GNU tar")


@needs_gnu_tar
def test_a_bad_checksum_header_is_refused_not_read_as_the_end(tmp_path: Path) -> None:
    bad = bytearray(512)
    bad[:9] = b"garbage!!"
    bad[148:156] = b"0000000\0"  # a checksum that does not match the block
    path = tmp_path / "hidden.tar.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(_tar_then(bytes(bad)
                                                                   + _hidden_members())))
    # the differential is real: GNU tar skips the bad header and finds the hidden members
    listed = _gnu_tar_lists(path)
    assert ".bashrc" in listed and listed.count("run/stdout.log") == 2 and "etc" in listed
    with pytest.raises(BadInputError, match="bad tar header"):
        validate_bundle(path)
    proc = run_rage("inspect", str(path))
    assert proc.returncode == 6 and "bad tar header" in proc.stderr, proc.stderr
    assert "checksums: ok" not in proc.stdout


@needs_gnu_tar
@pytest.mark.parametrize("tail", ["members", "one-byte"])
def test_only_zero_blocks_may_follow_the_end_of_the_archive(tmp_path: Path, tail: str) -> None:
    after = _hidden_members() if tail == "members" else b"\0" * 1023 + b"x"
    path = tmp_path / "after.tar.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(
        _tar_then(b"\0" * 1024 + after)))
    with pytest.raises(BadInputError, match="after the end of the tar archive"):
        validate_bundle(path)
    # ... while trailing zero blocks (tar pads to a whole record) are fine
    ok = tmp_path / "ok.tar.zst"
    ok.write_bytes(zstandard.ZstdCompressor().compress(_tar_then(b"\0" * 20 * 512)))
    assert validate_bundle(ok)["app"] == "demo"
    assert _gnu_tar_lists(ok) == ["manifest.json", "run/stdout.log"]


def test_deep_manifest_and_odd_member_names_are_one_line_errors(tmp_path: Path) -> None:
    deep = b'{"schema": 1, "files": [], "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    path = raw_tar_zst(tmp_path / "deep.tar.zst", [(reg("manifest.json"), deep)])
    proc = run_rage("inspect", str(path))
    assert proc.returncode == 6 and "nested too deeply" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    for name in ("run/a\nb.log", "run/\x1b[2J.log", "run/\udcff.log"):
        with pytest.raises(BadInputError, match="unsafe member name"):
            check_member_name(name)


# -- members compressed ahead (frames) -----------------------------------------------------

def _tarfile_bytes(entries: Sequence[tuple[str, bytes | Path]], mtime: int) -> bytes:
    """The tar Python's tarfile writes for ``entries``, as the writer describes members."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            info.mtime, info.mode, info.uid, info.gid = mtime, 0o644, 0, 0
            info.uname = info.gname = ""
            content = data if isinstance(data, bytes) else data.read_bytes()
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buf.getvalue()


def _unzstd(path: Path) -> bytes:
    return zstandard.ZstdDecompressor().stream_reader(
        path.read_bytes(), read_across_frames=True).read()


def test_the_tar_stream_is_what_tarfile_writes(tmp_path: Path) -> None:
    """Long and non-ASCII names (pax headers), empty and block-sized members, a file."""
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(70_001))
    entries: list[tuple[str, bytes | Path]] = [
        ("manifest.json", b"{}\n"), ("run/" + "x" * 150 + ".log", b"a" * 512),
        ("collectors/\u00e9t\u00e9.json", b""), ("run/big.bin", big), ("run/one", b"1")]
    write_bundle(tmp_path / "b.tar.zst", entries, mtime=1_700_000_000.7)
    assert _unzstd(tmp_path / "b.tar.zst") == _tarfile_bytes(entries, 1_700_000_000)


def _framed(tmp_path: Path, content: bytes, pieces: int, *, in_file: bool = False) -> Framed:
    from rage.bundle.frames import MEMORY_MAX, FrameCompressor, FrameWriter

    w = FrameWriter(tmp_path / "member.zst", FrameCompressor(),
                    memory_max=0 if in_file else MEMORY_MAX)
    step = -(-len(content) // pieces)
    compress = FrameCompressor()
    for i in range(0, len(content), step):
        piece = content[i:i + step]
        # as the redaction workers hand them: most with their frames, some without
        w.add(piece, compress(piece) if i // step % 3 else None)
    return w.close()


@pytest.mark.parametrize("in_file", [False, True], ids=["held in memory", "in a file"])
def test_a_framed_member_is_copied_as_its_frames(tmp_path: Path, in_file: bool) -> None:
    content = b"".join(b"line %d of an ordinary log\n" % i for i in range(60_000))
    framed = _framed(tmp_path, content, pieces=7, in_file=in_file)
    assert framed.size == len(content)
    assert (framed.frames is not None) == in_file == (tmp_path / "member.zst").exists()
    entries: list[tuple[str, bytes | Path | Framed]] = [
        ("manifest.json", b"{}\n"), ("run/output.log", framed), ("run/after.log", b"after\n")]
    out = tmp_path / "b.tar.zst"
    size, digest = write_bundle(out, entries, mtime=1_700_000_000)
    # what the writer says of the file (hashed by a second thread while it is written)
    assert (size, digest) == (out.stat().st_size, hashlib.sha256(out.read_bytes()).hexdigest())
    expected = _tarfile_bytes([("manifest.json", b"{}\n"), ("run/output.log", content),
                               ("run/after.log", b"after\n")], 1_700_000_000)
    assert _unzstd(out) == expected
    listing = subprocess.run(["zstd", "-lv", str(out)], check=True, capture_output=True,
                             text=True).stdout
    assert "# Zstandard Frames: 9" in listing  # before, 7 pieces, after
    extracted = subprocess.run(f"zstd -dc {out} | tar -xO run/output.log", shell=True,
                               check=True, capture_output=True).stdout
    assert extracted == content


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 300_000), st.integers(0, 300_000), st.booleans())
def test_a_framed_member_reads_any_range(start: int, length: int, in_file: bool) -> None:
    """What the preview and the summary read of a member kept only as frames."""
    content = b"".join(b"%d," % i for i in range(50_000))  # ~290 kB in 5 pieces
    with tempfile.TemporaryDirectory() as d:
        framed = _framed(Path(d), content, pieces=5, in_file=in_file)
        assert framed.read(start, length) == content[start:start + length]


def test_frames_that_changed_are_an_error_not_a_bundle(tmp_path: Path) -> None:
    framed = _framed(tmp_path, b"old content\n" * 1000, pieces=2, in_file=True)
    assert framed.frames is not None
    with open(framed.frames, "ab") as f:
        f.write(b"more")
    with pytest.raises(OSError, match="frames changed"):
        write_bundle(tmp_path / "b.tar.zst", [("run/output.log", framed)], mtime=0)
    assert not (tmp_path / "b.tar.zst").exists()
    import threading

    assert not [t for t in threading.enumerate() if t.name == "rage-bundle-hash"], (
        "the hashing thread stops with the write")


def test_frames_past_the_memory_limit_move_to_a_private_file(tmp_path: Path) -> None:
    """Frames are held in memory until they would pass ``memory_max``; then every frame so
    far, and each one after, goes to the file (0600), in order."""
    from rage.bundle.frames import FrameCompressor, FrameWriter

    compress = FrameCompressor()
    pieces = [b"".join(b"piece %d line %d\n" % (p, i) for i in range(4000)) for p in range(6)]
    frames = [compress(p) for p in pieces]
    limit = sum(map(len, frames[:3]))  # the fourth frame passes it
    path = tmp_path / "member.zst"
    w = FrameWriter(path, compress, memory_max=limit)
    for p, f in zip(pieces[:3], frames[:3], strict=True):
        w.add(p, f)
    assert not path.exists()
    for p in pieces[3:]:
        w.add(p)  # compressed here: the same frames the workers would make
    assert path.exists() and stat.S_IMODE(path.stat().st_mode) == 0o600
    framed = w.close()
    assert framed.frames == path and framed.held == ()
    assert path.read_bytes() == b"".join(frames)
    assert framed.read(0, framed.size) == b"".join(pieces)
    w2 = FrameWriter(tmp_path / "never.zst", compress, memory_max=limit)
    w2.add(pieces[0], frames[0])
    w2.discard()
    assert not (tmp_path / "never.zst").exists()
