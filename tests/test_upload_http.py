"""The HTTP policy: retries, Retry-After, time budget, redirects, TLS, http refusal, streaming."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tracemalloc
from pathlib import Path

import pytest

from rage.errors import UploadError
from rage.report.pending import sent_info
from rage.upload import make_uploader, upload_bundle
from rage.upload.http import retry_after
from tests.test_upload_servers import Reply, bundle, fast, serving

__all__ = ["bundle"]


def test_503_then_200_is_retried(bundle: Path) -> None:
    with serving(Reply(503), Reply(200, b"{base}/ok\n")) as s:
        r = upload_bundle(bundle, target=s.url, settings=fast())
    assert [x.method for x in s.seen] == ["POST", "POST"]
    assert s.seen[0].sha256 == s.seen[1].sha256  # the body was sent again, whole
    assert r.url.endswith("/ok")


def test_retry_after_is_honoured(bundle: Path) -> None:
    with serving(Reply(429, b"slow down", {"Retry-After": "2"}), Reply(200, b"{base}/ok")) as s:
        upload_bundle(bundle, target=s.url, settings=fast())
    gap = s.seen[1].time - s.seen[0].time
    assert gap >= 1.9, gap


@pytest.mark.timeout(10)  # a hang guard: sleeping out the 20 s budget would trip it
def test_retry_after_longer_than_budget_gives_up_at_once(bundle: Path) -> None:
    said: list[str] = []
    with serving(Reply(503, b"", {"Retry-After": "120"})) as s, \
            pytest.raises(UploadError) as ei:
        upload_bundle(bundle, target=s.url, settings=fast(upload_timeout=20),
                      notify=said.append)
    assert len(s.seen) == 1 and said == []  # no retry announced, so none waited for
    assert ei.value.message.endswith(": HTTP 503 Service Unavailable (1 attempt in 20s)")


def test_retry_after_http_date() -> None:
    when = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=30)
    value = when.strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert 27 <= (retry_after(value) or 0) <= 31
    assert retry_after("7") == 7.0
    assert retry_after("soon") is None


@pytest.mark.timeout(30)  # a hang guard: the budget is 2 s
def test_500_until_the_budget_ends(bundle: Path) -> None:
    said: list[str] = []
    with serving(Reply(500, b"boom")) as s, pytest.raises(UploadError) as ei:
        upload_bundle(bundle, target=s.url, settings=fast(upload_timeout=2), notify=said.append)
    assert len(s.seen) >= 2
    # every retry announced, and none after the last attempt: the budget ended the loop
    assert len(said) == len(s.seen) - 1
    assert all("HTTP 500" in line and "giving up in" in line for line in said)
    assert ei.value.message.endswith(f"HTTP 500 Internal Server Error ({len(s.seen)} attempts "
                                     "in 2s)")
    assert sent_info(bundle) is None and bundle.exists()


def test_4xx_is_not_retried(bundle: Path) -> None:
    with serving(Reply(413, b"Payload Too Large: max 1 MiB")) as s, \
            pytest.raises(UploadError) as ei:
        upload_bundle(bundle, target=s.url, settings=fast())
    assert len(s.seen) == 1
    assert "HTTP 413" in ei.value.message and "max 1 MiB" in ei.value.message


@pytest.mark.timeout(30)  # a hang guard: the server never answers
def test_hanging_server_times_out_within_budget(bundle: Path) -> None:
    with serving(Reply(hang=True)) as s, pytest.raises(UploadError) as ei:
        upload_bundle(bundle, target=s.url, settings=fast(upload_timeout=1.5))
    assert "did not finish within upload_timeout (1.5s)" in ei.value.message
    assert len(s.seen) == 1


def test_connection_refused(bundle: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(UploadError) as ei:
        upload_bundle(bundle, target=f"http://127.0.0.1:{port}/", settings=fast(upload_timeout=1))
    assert "connection refused" in ei.value.message


def test_307_redirect_keeps_method_and_body(bundle: Path) -> None:
    with serving(Reply(307, b"", {"Location": "/elsewhere"}), Reply(200, b"{base}/ok")) as s:
        r = upload_bundle(bundle, target=f"put+{s.url}/", settings=fast())
    assert [(x.method, x.path) for x in s.seen] == [("PUT", "/r1.tar.zst"), ("PUT", "/elsewhere")]
    assert s.seen[1].body == bundle.read_bytes()
    assert r.url.endswith("/ok")


def test_redirect_to_another_host_drops_the_token(
        bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGE_UPLOAD_TOKEN", "tok")
    with serving(Reply(201, b'{"url": "{base}/b/1"}')) as target:
        # 127.0.0.1 -> localhost: same machine, another origin
        other = target.url.replace("127.0.0.1", "localhost") + "/api/v1/bundles"
        with serving(Reply(308, b"", {"Location": other})) as first:
            r = upload_bundle(bundle, target=f"receiver+{first.url}",
                              settings=fast(upload_url=first.url))
    assert first.seen[0].headers["Authorization"] == "Bearer tok"
    assert "Authorization" not in target.seen[0].headers
    assert target.seen[0].body == bundle.read_bytes()
    assert r.url == f"{target.url}/b/1"


def test_redirect_to_plain_http_elsewhere_is_refused(bundle: Path) -> None:
    with serving(Reply(307, b"", {"Location": "http://192.0.2.1/x"})) as s, \
            pytest.raises(UploadError) as ei:
        upload_bundle(bundle, target=s.url, settings=fast())
    assert "plain http" in ei.value.message


def test_plain_http_to_remote_host_refused_before_connecting(
        bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 192.0.2.1 is TEST-NET-1. Any request to it would go to this proxy on the loopback
    # (requests honours http_proxy), which counts the connections made to it: none
    import socket

    with socket.socket() as proxy:
        proxy.bind(("127.0.0.1", 0))
        proxy.listen(8)
        proxy.setblocking(False)
        for var in ("http_proxy", "HTTP_PROXY"):
            monkeypatch.setenv(var, f"http://127.0.0.1:{proxy.getsockname()[1]}")
        for var in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
            monkeypatch.delenv(var, raising=False)
        with pytest.raises(UploadError) as ei:
            upload_bundle(bundle, target="http://192.0.2.1/upload", settings=fast())
        try:
            made, _ = proxy.accept()
            made.close()
        except BlockingIOError:  # nothing waiting to be accepted: nothing connected
            made = None
    assert made is None, "a connection was made before the upload was refused"
    assert "refusing to upload over plain http to 192.0.2.1" in ei.value.message
    assert ei.value.hint and "--allow-http" in ei.value.hint


def test_plain_http_allowed_to_loopback_names(bundle: Path) -> None:
    with serving(Reply(200, b"{base}/ok")) as s:
        r = upload_bundle(bundle, target=s.url.replace("127.0.0.1", "localhost"),
                          settings=fast())
    assert r.url.endswith("/ok")


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rage test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_tls_self_signed_refused_unless_trusted(
        bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = _self_signed(tmp_path)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    with serving(Reply(200, b"{base}/tls-ok"), tls=ctx) as s:
        assert s.url.startswith("https://")
        with pytest.raises(UploadError) as ei:
            upload_bundle(bundle, target=s.url, settings=fast())
        assert "TLS error" in ei.value.message and "certificate" in ei.value.message.lower()
        assert ei.value.hint and "REQUESTS_CA_BUNDLE" in ei.value.hint
        assert s.seen == []  # nothing was sent to an unverified server
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
        r = upload_bundle(bundle, target=s.url, settings=fast())
    assert r.url == f"{s.url}/tls-ok"
    assert s.seen[0].body is not None and len(s.seen[0].body) > len(bundle.read_bytes())


def test_progress_reports_every_byte(bundle: Path) -> None:
    calls: list[tuple[int, int]] = []
    with serving(Reply(200, b"{base}/ok")) as s:
        make_uploader(f"put+{s.url}/", fast()).upload(
            bundle, progress=lambda a, b: calls.append((a, b)))
    size = bundle.stat().st_size
    assert calls[0] == (0, size) and calls[-1] == (size, size)
    assert [a for a, _ in calls] == sorted(a for a, _ in calls)


def test_20mb_upload_is_streamed(tmp_path: Path) -> None:
    big = tmp_path / "big.tar.zst"
    with open(big, "wb") as f:
        for i in range(20):
            f.write(bytes([i]) * (1024 * 1024))
    small = tmp_path / "small.tar.zst"
    small.write_bytes(b"warm-up")
    with serving(Reply(200, b"{base}/big"), keep_body_max=0) as s:
        # a first small upload imports requests & co., so the peak below is the transfer's
        upload_bundle(small, target=s.url, settings=fast())
        tracemalloc.start()
        try:
            upload_bundle(big, target=s.url, settings=fast(upload_timeout=30))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert s.seen[1].size > 20 * 1024 * 1024
    # the server thread drains in 1 MiB reads and the client sends 1 MiB chunks
    assert peak < 6 * 1024 * 1024, peak
