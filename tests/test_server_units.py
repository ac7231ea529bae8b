"""The receiver's parts in-process: validator, multipart reader, storage, flattening."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest
import zstandard

from rage.bundle import (
    BundleTooLarge,
    check_member_name,
    normalize_member_name,
    read_members,
    validate_bundle,
)
from rage.errors import BadInputError, NotFoundError
from rage.server.bundle_page import _flatten as flatten
from rage.server.multipart import PartTooLarge, copy_file_field
from rage.server.storage import LocalStorage, StoredBundle, new_id, token_hash
from tests.test_server import bomb_bundle, build_bundle, default_files


def test_bomb_fixture_really_inflates_to_a_huge_member(tmp_path: Path) -> None:
    bomb = bomb_bundle(tmp_path / "bomb.tar.zst")
    with open(bomb, "rb") as f:
        reader = zstandard.ZstdDecompressor().stream_reader(f)
        with tarfile.open(fileobj=reader, mode="r|") as tf:
            names = [(m.name, m.size) for m in (tf.next(), tf.next()) if m is not None]
    assert names[1] == ("run/output.log", 2 * 1024**3)


def test_budget_counts_many_small_members(tmp_path: Path) -> None:
    files = {f"run/attachments/a{i}.log": os.urandom(300_000) for i in range(4)}
    b = build_bundle(tmp_path / "b.tar.zst", files)
    assert validate_bundle(b, 10_000_000)["app"] == "mytool"
    with pytest.raises(BundleTooLarge):
        validate_bundle(b, 1_000_000)  # each member fits, the total does not


def test_read_members_keeps_the_end(tmp_path: Path) -> None:
    files = default_files()
    files["run/output.log"] = b"A" * 1000 + b"THE END\n"
    b = build_bundle(tmp_path / "b.tar.zst", files)
    with open(b, "rb") as f:
        members = read_members(f, max_decompressed=10**7, cap=100)
    out = members["run/output.log"]
    assert out.cut and out.size == 1008 and out.data.endswith(b"THE END\n")
    assert len(out.data) == 100


@pytest.mark.parametrize("name", ["../x", "a/../../x", "/etc/passwd", "a\\b", "", "./..", "a\0"])
def test_unsafe_names(name: str) -> None:
    with pytest.raises(BadInputError):
        check_member_name(name)  # the writer's strict check
    with pytest.raises(BadInputError):
        normalize_member_name(name)  # the reader's, which accepts harmless spellings


def test_safe_name_normalised() -> None:
    assert normalize_member_name("./run//output.log") == "run/output.log"
    with pytest.raises(BadInputError):
        check_member_name("./run//output.log")  # a bundle rage writes never needs it


def _multipart(boundary: str, parts: list[tuple[str, bytes]]) -> bytes:
    out = b""
    for name, data in parts:
        out += (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; "
                f"filename=\"{name}.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                ).encode() + data + b"\r\n"
    return out + f"--{boundary}--\r\n".encode()


@pytest.mark.parametrize("size", [0, 1, 256 * 1024 - 20, 256 * 1024 - 3, 256 * 1024 + 7,
                                  700_001])
def test_multipart_file_part_exact_across_chunk_edges(size: int) -> None:
    boundary = "----b0undary"
    # data full of near-boundaries to tempt a naive splitter; never the boundary itself
    # (its last character is "y")
    near = b"\r\n--" + boundary[:-1].encode() + os.urandom(5).replace(b"y", b"z")
    data = near * (size // 20 + 1)
    data = data[:size]
    body = _multipart(boundary, [("before", b"x" * 300_000), ("file", data), ("after", b"y")])
    out = io.BytesIO()
    n = copy_file_field(io.BytesIO(body), f"multipart/form-data; boundary={boundary}", "file",
                        out, limit=10**7, content_length=len(body))
    assert n == size and out.getvalue() == data


def test_multipart_limit_and_missing_field() -> None:
    body = _multipart("bb", [("file", b"z" * 5000)])
    ctype = "multipart/form-data; boundary=bb"
    with pytest.raises(PartTooLarge):
        copy_file_field(io.BytesIO(body), ctype, "file", io.BytesIO(), limit=4000)
    with pytest.raises(BadInputError, match="no 'upload' field"):
        copy_file_field(io.BytesIO(body), ctype, "upload", io.BytesIO(), limit=10**6)
    with pytest.raises(BadInputError, match="truncated"):
        copy_file_field(io.BytesIO(body[:-30]), ctype, "file", io.BytesIO(), limit=10**6)
    with pytest.raises(BadInputError, match="boundary"):
        copy_file_field(io.BytesIO(body), "multipart/form-data", "file", io.BytesIO(), limit=9)


def test_local_storage_round_trip(tmp_path: Path) -> None:
    store = LocalStorage(tmp_path / "s")
    tmp = store.tmp_dir() / "up"
    tmp.write_bytes(b"bundle bytes")
    meta = StoredBundle(id=new_id(), created_at="2026-01-01T00:00:00+00:00", size=12,
                        sha256="x", delete_token_hash=token_hash("t"), manifest={"app": "a"})
    store.put(tmp, meta)
    assert not tmp.exists()
    assert store.get_meta(meta.id) == meta
    with store.open(meta.id) as f:
        assert f.read() == b"bundle bytes"
    assert [b.id for b in store.list_recent(10)] == [meta.id]
    store.delete(meta.id)
    with pytest.raises(NotFoundError):
        store.get_meta(meta.id)
    with pytest.raises(NotFoundError):
        store.get_meta("../../etc/passwd")
    assert list((tmp_path / "s" / "bundles").iterdir()) == []


def test_ids_are_long_and_distinct() -> None:
    ids = {new_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(len(i) >= 22 for i in ids)


def test_flatten_nested() -> None:
    data = {"os": {"name": "Linux"}, "tags": ["a", "b"], "disks": [{"dev": "sda"}], "x": None}
    assert flatten(data) == [("os.name", "Linux"), ("tags", "a, b"), ("disks[0].dev", "sda"),
                             ("x", "\u2014")]  # nothing is a dash, never "null"
    many = {f"k{i}": i for i in range(10_000)}
    assert len(flatten(many)) == 301  # stops early: the page shows 300 and says "more"


def test_ansi_colours_become_classes_and_other_escapes_go() -> None:
    from rage.server.ansi import Styler, strip

    line = "\x1b[0m\x1b[01;34mbuild\x1b[0m <ok> \x1b]0;title\x07\x1b[2K\x1b[38;5;196mred"
    html = str(Styler().line(line))
    assert '<span class="b fg4">build</span>' in html
    assert "&lt;ok&gt;" in html and "\x1b" not in html and "title" not in html
    assert strip(line) == "build <ok> red"
    styler = Styler(max_spans=3)
    out = "".join(str(styler.line("\x1b[31mx")) for _ in range(10))
    assert out.count("<span") == 3 and out.count("x") == 10  # bounded, nothing lost


def test_traceback_frames_are_grouped_app_then_library() -> None:
    from rage.server import tracebacks

    text = ('Traceback (most recent call last):\n'
            '  File "/home/u/app/cli.py", line 3, in main\n    run()\n'
            '  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads\n    x\n'
            '  File "/v/lib/python3.11/site-packages/click/core.py", line 1, in f\n    y\n'
            '  File "/home/u/app/db.py", line 9, in save\n    z\n'
            'OSError: disk full\n')
    [block] = tracebacks.parse(text)
    assert [(g.library, len(g.frames)) for g in block.groups] == [(False, 1), (True, 2),
                                                                  (False, 1)]
    assert block.outro == ["OSError: disk full"]
    fatal = ('Fatal Python error: Segmentation fault\n\nCurrent thread 0x7f (most recent call '
             'first):\n  File "/home/u/app/native.py", line 7 in crash\n'
             '  File "/usr/lib/python3.11/threading.py", line 9 in run\n')
    [fblock] = tracebacks.parse(fatal)
    assert [(g.library, [f.func for f in g.frames]) for g in fblock.groups] == [
        (False, ["crash"]), (True, ["run"])]
    log = ["starting", *text.splitlines(), "after"]
    assert tracebacks.line_spans(log) == set(range(1, len(log) - 1))
    assert tracebacks.last_in(log) == text.rstrip("\n")


def test_human_values() -> None:
    from datetime import UTC, datetime

    from rage.server import human

    now = datetime(2026, 1, 3, tzinfo=UTC)
    assert human.when("2026-01-01T00:00:00Z", now) == "2026-01-01 00:00:00 UTC (2 days ago)"
    assert human.when(1767225600.0, now).startswith("2026-01-01 00:00:00 UTC")
    assert human.size(1536) == "1.5 KiB" and human.size(None) == "\u2014"
    assert human.duration(0.049) == "49 ms" and human.duration(75) == "1 min 15 s"
    assert (human.value(False), human.value(None)) == ("no", "\u2014")
    assert human.exit_text({"signal": 11}) == "killed by SIGSEGV"


@pytest.mark.parametrize("kind", ["traversal", "absolute", "symlink", "device", "bad-manifest",
                                  "manifest-not-first", "checksum", "unlisted", "random",
                                  "truncated"])
def test_agrees_with_rage_bundle_reader(tmp_path: Path, kind: str) -> None:
    """The receiver's fail-fast validation and `rage inspect`'s collect-all reading (both
    rage.bundle now) refuse the same hostile bundles and return the same manifest."""
    from rage.bundle import open_bundle
    from tests.test_server import hostile

    path = hostile(tmp_path, kind)
    with pytest.raises(BadInputError):
        validate_bundle(path, 10**8)
    try:
        found = open_bundle(path, max_decompressed=10**8).verify()
    except BadInputError:
        found = ["refused while reading"]
    assert found, kind
    good = build_bundle(tmp_path / "good.tar.zst")
    reader = open_bundle(good, max_decompressed=10**8)
    assert reader.verify() == []
    assert validate_bundle(good, 10**8) == reader.manifest


def test_templates_escape_by_default_and_carry_the_nonce() -> None:
    from rage.server.templating import render

    page = render("message.html", nonce="n0nce", title="<script>x</script>", text='"&')
    assert "<script>x</script>" not in page
    assert "&lt;script&gt;x&lt;/script&gt;" in page and "&#34;&amp;" in page
    assert '<style nonce="n0nce">' in page and "http" not in page.split("<body>")[0]


def test_bundle_page_stays_bounded_whatever_the_members_hold() -> None:
    import json as _json

    from rage.bundle import CappedMember
    from rage.server.bundle_page import Links
    from rage.server.pages import bundle_page_html

    cap = 256 * 1024

    def member(name: str, data: bytes) -> CappedMember:
        return CappedMember(name, len(data) * 100, data[-cap:], True, 10**6)

    record = _json.dumps({"level": "ERROR", "msg": "m" * 5000, "exc": "e" * 20000}).encode()
    collector = _json.dumps({"name": "c", "status": "ok", "data": {
        f"k{i}": "v" * 1000 for i in range(250)}}).encode()  # under the 256 KiB read cap
    members = {
        **{f"run/{n}.log": member(f"run/{n}.log", b"\x1b[31mx\n" * cap)
           for n in ("output", "stdout", "stderr")},
        "run/log.jsonl": member("run/log.jsonl", (record + b"\n") * 20),
        "run/traceback.txt": member("run/traceback.txt", b'  File "a", line 1, in f\n' * 10**4),
        **{f"run/attachments/a{i}": member(f"run/attachments/a{i}", b"y" * cap)
           for i in range(20)},
        **{f"collectors/c{i}.json": CappedMember(f"collectors/c{i}.json", len(collector),
                                                 collector, False) for i in range(40)},
    }
    meta = StoredBundle(id=new_id(), created_at="2026-01-01T00:00:00+00:00", size=1,
                        sha256="0" * 64, delete_token_hash="x", manifest={
                            "app": "a", "files": [{"name": f"f{i}", "size": 1}
                                                  for i in range(5000)]})
    html = bundle_page_html(meta, members, Links("http://h/b/x", "http://h/b/x.tar.zst"), "n")
    assert len(html.encode()) < 2_500_000, len(html)
