"""Uploads through the real console script: fail fast, say why, keep the bundle, and a
resend hint that works as printed."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.test_cli_exit_codes import RAGE, rage
from tests.test_select import record
from tests.test_upload_servers import Reply, make_bundle, serving


def kept(name: str = "20250101T000000Z-abc.tar.zst") -> Path:
    return make_bundle(Path(os.environ["RAGE_HOME"]) / "mytool" / "reports" / name)


def free_port() -> int:
    with socket.socket() as s:  # free a moment ago: nothing listens there now
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pending() -> list[str]:
    return [b["path"] for b in json.loads(rage("pending", "--json").stdout)["bundles"]]


def test_connection_refused_fails_fast_and_the_hint_works_as_printed() -> None:
    b = kept()
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    # a hang guard: a minute of silent retries would trip it
    p = rage("send", str(b), "--to", url, "--yes", env={"RAGE_UPLOAD_TIMEOUT": "60"}, timeout=30)
    assert p.returncode == 4
    first, hint = p.stderr.splitlines()  # no retry announced: refused is final
    assert first == (f"rage: cannot upload to 127.0.0.1: connection refused (nothing is "
                     f"listening on port {port}; is the server running?)")
    assert "HTTPConnectionPool" not in p.stderr and "Errno" not in p.stderr
    command = hint.split("retry with: ", 1)[1]
    assert command == f"rage send {b} --to {url} --yes"
    assert pending() == [str(b)]
    # the hint, run as printed, once something listens on that port
    with serving(Reply(200, b"{base}/ok")) as s:
        argv = shlex.split(command.replace(url, s.url + "/"))
        again = subprocess.run([RAGE, *argv[1:]], capture_output=True, text=True,
                               timeout=60, stdin=subprocess.DEVNULL, check=False)
    assert again.returncode == 0, again.stderr
    assert pending() == []


def test_unknown_host_fails_fast_in_plain_words() -> None:
    b = kept()
    p = rage("send", str(b), "--to", "https://no-such-host.invalid/", "--yes",
             env={"RAGE_UPLOAD_TIMEOUT": "60"}, timeout=30)  # retrying would trip the guard
    assert p.returncode == 4 and "retrying" not in p.stderr, p.stderr
    assert len(p.stderr.splitlines()) == 2  # the error and its hint, nothing retried
    assert p.stderr.startswith("rage: cannot upload to no-such-host.invalid: the host name "
                               "could not be resolved")


def test_retries_are_visible_then_succeed() -> None:
    b = kept()
    with serving(Reply(503, b"busy"), Reply(200, b"{base}/b/1")) as s:
        p = rage("send", str(b), "--to", s.url, "--yes")
    assert p.returncode == 0, p.stderr
    line = p.stderr.splitlines()[0]
    assert line.startswith(f"rage: upload to {s.url.split('//')[1]}: HTTP 503")
    assert "retrying in" in line and "giving up in" in line


def test_redirect_is_not_success() -> None:
    b = kept()
    for code in (301, 302, 303):
        with serving(Reply(code, b"", {"Location": "{base}/login"})) as s:
            p = rage("send", str(b), "--to", s.url, "--yes")
        assert p.returncode == 4, (code, p.stderr)
        assert f"redirect to {s.url}/login (HTTP {code}): nothing was stored" in p.stderr
        assert "uploaded:" not in p.stdout
        assert pending() == [str(b)]


def test_upload_timeout_bounds_a_trickling_server() -> None:
    b = kept()
    with serving(Reply(200, b"x" * 1000, trickle=0.2)) as s:
        # a hang guard: the trickled answer would take 200 s
        p = rage("send", str(b), "--to", s.url, "--yes", env={"RAGE_UPLOAD_TIMEOUT": "2"},
                 timeout=60)
    assert p.returncode == 4, p.stderr
    assert "did not finish within upload_timeout (2s)" in p.stderr


def test_interrupt_during_upload_keeps_the_bundle_and_says_how_to_resend() -> None:
    b = kept()
    with serving(Reply(hang=True)) as s:
        proc = subprocess.Popen([RAGE, "send", str(b), "--to", s.url, "--yes"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not s.seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert s.seen, "the upload never reached the server"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert f"rage: upload interrupted; the file is kept: {b}" in err
    assert f"retry with: rage send {b} --to {s.url}" in err
    assert "Traceback" not in err and b.exists() and pending() == [str(b)]


def test_token_is_sent_by_every_http_uploader() -> None:
    b = kept()
    for prefix in ("", "put+", "receiver+"):
        with serving(Reply(201, b'{"url": "{base}/b/1"}')) as s:
            p = rage("send", str(b), "--to", f"{prefix}{s.url}/", "--yes",
                     env={"RAGE_UPLOAD_TOKEN": "s3cret", "RAGE_UPLOAD_URL": s.url})
        assert p.returncode == 0, (prefix, p.stderr)
        assert s.seen[0].headers.get("Authorization") == "Bearer s3cret", prefix
        assert "s3cret" not in p.stdout + p.stderr


def test_missing_and_wrong_token_say_what_to_do() -> None:
    b = kept()
    with serving(Reply(401, b'{"error": "unauthorized"}')) as s:
        missing = rage("send", str(b), "--to", s.url, "--yes")
        wrong = rage("send", str(b), "--to", s.url, "--yes",
                     env={"RAGE_UPLOAD_TOKEN": "nope", "RAGE_UPLOAD_URL": s.url})
    assert missing.returncode == wrong.returncode == 4
    assert "wants an upload token, and none was sent" in missing.stderr
    assert "did not accept the upload token" in wrong.stderr
    for p in (missing, wrong):
        assert "set RAGE_UPLOAD_TOKEN" in p.stderr


def test_send_refuses_what_is_not_a_bundle(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my private notes\n")
    share = tmp_path / "share"
    share.mkdir()
    p = rage("send", str(notes), "--to", share.as_uri(), "--yes")
    assert p.returncode == 6
    assert "is not a valid rage bundle" in p.stderr and "--any-file" in p.stderr
    assert list(share.iterdir()) == []
    forced = rage("send", str(notes), "--to", share.as_uri(), "--yes", "--any-file")
    assert forced.returncode == 0, forced.stderr
    assert [x.name for x in share.iterdir()] == ["notes.txt"]


def test_send_refuses_a_tampered_bundle(tmp_path: Path) -> None:
    import zstandard

    b = make_bundle(tmp_path / "b.tar.zst")
    raw = zstandard.ZstdDecompressor().decompressobj().decompress(b.read_bytes())
    bad = tmp_path / "bad.tar.zst"
    bad.write_bytes(zstandard.ZstdCompressor().compress(raw.replace(b"on fire", b"is fine")))
    with serving(Reply(200, b"{base}/x")) as s:
        p = rage("send", str(bad), "--to", s.url, "--yes")
    assert p.returncode == 6 and "checksum mismatch" in p.stderr and s.seen == []


def test_file_target_to_a_missing_directory_is_an_error(tmp_path: Path) -> None:
    b = kept()
    p = rage("send", str(b), "--to", (tmp_path / "nope" / "dir").as_uri(), "--yes")
    assert p.returncode == 4
    assert f"no such directory: {tmp_path / 'nope' / 'dir'}" in p.stderr
    assert not (tmp_path / "nope").exists()


def test_report_upload_failure_names_host_and_the_resend_command(tmp_path: Path) -> None:
    record("demo", ["demo"], 1, output=b"x\n")
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    p = rage("report", "--last", "--yes", "--no-collect", "--to", url)
    assert p.returncode == 4
    assert "connection refused" in p.stderr and "127.0.0.1" in p.stderr
    bundle = p.stdout.split("bundle written: ", 1)[1].split(" (", 1)[0]
    assert f"resend it with: rage send {bundle} --to {url}" in p.stderr
    assert Path(bundle).exists()
