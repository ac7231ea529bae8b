"""Each upload protocol against a real local server (or a real directory)."""

from __future__ import annotations

import json
import stat
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path

import pytest

from rage.errors import UploadError, UsageError
from rage.report.pending import sent_info
from rage.upload import parse_target, upload_bundle
from tests.test_upload_servers import Reply, bundle, fast, make_bundle, serving

__all__ = ["bundle"]  # the fixture, re-exported for pytest


def test_multipart_request_shape(bundle: Path) -> None:
    with serving(Reply(200, b"{base}/abc\n")) as s:
        r = upload_bundle(bundle, target=s.url + "/", settings=fast())
    (req,) = s.seen
    assert req.method == "POST" and req.path == "/"
    ctype = req.headers["Content-Type"]
    assert ctype.startswith("multipart/form-data; boundary=")
    assert int(req.headers["Content-Length"]) == req.size
    assert req.body is not None
    msg = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {ctype}\r\n\r\n".encode() + req.body)
    (part,) = list(msg.iter_parts())
    assert part.get_param("name", header="content-disposition") == "file"
    assert part.get_filename() == "r1.tar.zst"
    assert part.get_payload(decode=True) == bundle.read_bytes()
    assert r.url == f"{s.url}/abc"
    assert (sent_info(bundle) or {})["url"] == r.url


def test_put_appends_filename_to_a_directory_url(bundle: Path) -> None:
    with serving(Reply(200, b"{base}/get/r1.tar.zst\n",
                       {"X-Url-Delete": "{base}/del/r1"})) as s:
        r = upload_bundle(bundle, target=f"put+{s.url}/", settings=fast())
    (req,) = s.seen
    assert (req.method, req.path) == ("PUT", "/r1.tar.zst")
    assert req.body == bundle.read_bytes()
    assert r.url == f"{s.url}/get/r1.tar.zst"
    assert r.delete_url == f"{s.url}/del/r1"
    assert r.protocol == "put"


def test_put_presigned_url_used_exactly(bundle: Path) -> None:
    with serving(Reply(200, b"")) as s:
        target = f"{s.url}/bucket/key.tar.zst?X-Amz-Signature=abc%2Fdef&X-Amz-Expires=60"
        r = upload_bundle(bundle, target=target, settings=fast(), protocol="put")
    (req,) = s.seen
    assert req.path == "/bucket/key.tar.zst?X-Amz-Signature=abc%2Fdef&X-Amz-Expires=60"
    assert req.body == bundle.read_bytes()
    assert r.url == f"{s.url}/bucket/key.tar.zst"  # the signature is not part of the link


def test_receiver_api(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGE_UPLOAD_TOKEN", "tok-123")
    answer = json.dumps({"id": "b1", "url": "{base}/b/b1", "raw_url": "{base}/b/b1/raw",
                         "delete_url": "{base}/b/b1?delete=zz", "delete_token": "zz"})
    with serving(Reply(201, answer.encode(), {"Content-Type": "application/json"})) as s:
        r = upload_bundle(bundle, target=f"receiver+{s.url}/",
                          settings=fast(upload_url=f"receiver+{s.url}/"))
    (req,) = s.seen
    assert (req.method, req.path) == ("POST", "/api/v1/bundles")
    assert req.headers["Content-Type"] == "application/zstd"
    assert req.headers["Authorization"] == "Bearer tok-123"
    assert req.body == bundle.read_bytes()
    assert (r.url, r.delete_url) == (f"{s.url}/b/b1", f"{s.url}/b/b1?delete=zz")
    assert "tok-123" not in Path(str(bundle) + ".sent.json").read_text()


def test_receiver_without_token_sends_no_authorization(bundle: Path) -> None:
    with serving(Reply(201, b'{"url": "{base}/b/2"}')) as s:
        upload_bundle(bundle, target=s.url, settings=fast(upload_protocol="receiver"))
    assert "Authorization" not in s.seen[0].headers


def test_gist_request_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            config_file: Path) -> None:
    b = make_bundle(tmp_path / "g.tar.zst", extra=[("run/core.bin", b"\x00\x01\xff\xfe"),
                                                   ("collectors/python.json", b'{"v": 3}')])
    monkeypatch.setenv("MY_GH_TOKEN", "ghp_github")  # GitHub's: never sent to another host
    answer = json.dumps({"url": "{base}/api/gists/1", "html_url": "https://gist.example/u/1"})
    with serving(Reply(201, answer.encode(), {"Content-Type": "application/json"})) as s:
        config_file.write_text(f'[tokens]\n"{s.url}" = "ghp_secret"\n')
        r = upload_bundle(b, target="gist",
                          settings=fast(gist_api_url=s.url + "/api", gist_token_env="MY_GH_TOKEN"))
    (req,) = s.seen
    assert (req.method, req.path) == ("POST", "/api/gists")
    assert req.headers["Authorization"] == "Bearer ghp_secret"
    assert req.body is not None
    payload = json.loads(req.body)
    assert payload["public"] is False
    assert "mytool" in payload["description"]
    assert set(payload["files"]) == {"manifest.json", "summary.md", "run__output.log",
                                     "collectors__python.json"}
    assert payload["files"]["run__output.log"]["content"] == "starting\nerror: disk on fire\n"
    assert r.url == "https://gist.example/u/1"
    assert r.protocol == "gist"


def test_gist_without_token_fails_before_any_request(
        bundle: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no `gh` to ask
    with serving(Reply(201, b"{}")) as s, pytest.raises(UploadError) as ei:
        upload_bundle(bundle, target="gist", settings=fast(gist_api_url=s.url))
    assert "no token for the gist API at" in ei.value.message
    assert ei.value.hint and "[tokens]" in ei.value.hint
    assert s.seen == []


def test_directory_target(bundle: Path, tmp_path: Path) -> None:
    dest = tmp_path / "drop box"
    dest.mkdir(mode=0o700)
    r1 = upload_bundle(bundle, target=dest.as_uri(), settings=fast())
    r2 = upload_bundle(bundle, target=dest.as_uri(), settings=fast())
    copies = sorted(dest.iterdir())
    assert [p.name for p in copies] == ["r1-2.tar.zst", "r1.tar.zst"]
    for p in copies:
        assert p.read_bytes() == bundle.read_bytes()
        assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert stat.S_IMODE(dest.stat().st_mode) == 0o700
    assert r1.url == (dest / "r1.tar.zst").as_uri()
    assert r2.url == (dest / "r1-2.tar.zst").as_uri()
    assert r1.url.startswith("file:///") and "%20" in r1.url


def test_directory_target_that_cannot_be_a_directory(bundle: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(UploadError) as ei:
        upload_bundle(bundle, target=(blocker / "x").as_uri(), settings=fast())
    assert "no such directory" in ei.value.message
    assert ei.value.bundle == str(bundle)


def test_directory_target_missing_is_an_error_not_created(bundle: Path, tmp_path: Path) -> None:
    missing = tmp_path / "share" / "bugs"
    with pytest.raises(UploadError) as ei:
        upload_bundle(bundle, target=missing.as_uri(), settings=fast())
    assert f"no such directory: {missing}" in ei.value.message
    assert not (tmp_path / "share").exists()
    assert sent_info(bundle) is None


@pytest.mark.parametrize(("target", "protocol", "expected"), [
    ("https://0x0.st", None, ("multipart", "https://0x0.st")),
    ("https://h/x", "receiver", ("receiver", "https://h/x")),
    ("put+https://transfer.sh/", "receiver", ("put", "https://transfer.sh/")),
    ("RECEIVER+http://127.0.0.1:9/", None, ("receiver", "http://127.0.0.1:9/")),
    ("gist", None, ("gist", None)),
    ("file:///tmp/x", None, ("file", "file:///tmp/x")),
    ("/srv/drop", "file", ("file", "/srv/drop")),
])
def test_parse_target(target: str, protocol: str | None,
                      expected: tuple[str, str | None]) -> None:
    assert parse_target(target, protocol) == expected


@pytest.mark.parametrize(("target", "protocol"), [
    ("ftp://example.org/", None), ("example.org", None), ("https://h/", "carrier-pigeon"),
    ("file:///tmp/x", "put"),
])
def test_parse_target_rejects(target: str, protocol: str | None) -> None:
    with pytest.raises(UsageError):
        parse_target(target, protocol)


def test_bad_target_is_a_usage_error(bundle: Path) -> None:
    with pytest.raises(UsageError) as ei:
        upload_bundle(bundle, target="ftp://example.org/", settings=fast())
    assert "ftp://example.org/" in ei.value.message
    assert sent_info(bundle) is None
