"""`rage send` through the real CLI in a subprocess, against a local server."""

from __future__ import annotations

import json
import os
import pty
import select
import stat
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.conftest import rage_cmd, run_rage
from tests.test_upload_servers import Reply, make_bundle, serving


def _kept(home: Path, name: str = "20250101T000000Z-abc.tar.zst") -> Path:
    return make_bundle(home / "mytool" / "reports" / name)


def test_send_prints_link_markdown_and_issue_url(rage_home: Path, config_file: Path) -> None:
    b = _kept(rage_home)
    config_file.write_text('[app.mytool]\nissues_url = "https://github.com/me/mytool/issues"\n')
    with serving(Reply(200, b"{base}/b/xyz\n")) as s:
        p = run_rage("send", b.name, "--to", s.url, "--yes")
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert f"uploaded: {s.url}/b/xyz" in out
    assert f"  [rage report for mytool (failed, exit 1)]({s.url}/b/xyz)" in out
    issue = next(line.strip() for line in out if "github.com" in line)
    parts = urlsplit(issue)
    assert parts.path == "/me/mytool/issues/new"
    q = parse_qs(parts.query)
    assert q["title"] == ["mytool failed, exit 1: mytool sync --all"]
    assert f"{s.url}/b/xyz" in q["body"][0] and "exit code 1" in q["body"][0]
    side = Path(str(b) + ".sent.json")
    assert stat.S_IMODE(side.stat().st_mode) == 0o600
    assert json.loads(side.read_text())["url"] == f"{s.url}/b/xyz"
    assert json.loads(run_rage("pending", "--json").stdout) == {"bundles": []}


def test_send_json(rage_home: Path) -> None:
    b = _kept(rage_home)
    with serving(Reply(201, b'{"url": "{base}/b/1", "delete_url": "{base}/d/1"}')) as s:
        p = run_rage("send", str(b), "--to", f"receiver+{s.url}", "--yes", "--json",
                     env={**os.environ, "RAGE_UPLOAD_TOKEN": "hush", "RAGE_UPLOAD_URL": s.url})
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"url": f"{s.url}/b/1", "bundle": str(b),
                                    "delete_url": f"{s.url}/d/1"}
    assert "hush" not in p.stdout + p.stderr


def test_send_target_from_environment(rage_home: Path) -> None:
    b = _kept(rage_home)
    with serving(Reply(200, b"{base}/env")) as s:
        p = run_rage("send", "last", "--yes", env={**os.environ, "RAGE_UPLOAD_URL": s.url})
    assert p.returncode == 0, p.stderr
    assert f"uploaded: {s.url}/env" in p.stdout
    assert len(s.seen) == 1 and b.exists()


def test_send_without_terminal_needs_yes(rage_home: Path) -> None:
    b = _kept(rage_home)
    with serving(Reply(200, b"{base}/x")) as s:
        p = run_rage("send", str(b), "--to", s.url)
    assert p.returncode == 2
    assert "--yes" in p.stderr and "Traceback" not in p.stderr
    assert s.seen == []


def test_send_without_target(rage_home: Path) -> None:
    b = _kept(rage_home)
    p = run_rage("send", str(b), "--yes")
    assert p.returncode == 2
    assert "no upload target" in p.stderr and "--to" in p.stderr


def test_send_500_until_budget_keeps_bundle_exit_4(rage_home: Path) -> None:
    b = _kept(rage_home)
    with serving(Reply(500, b"oops")) as s:
        p = run_rage("send", str(b), "--to", s.url, "--yes",
                     env={**os.environ, "RAGE_UPLOAD_TIMEOUT": "2"})
    assert p.returncode == 4
    lines = p.stderr.strip().splitlines()
    retries = [ln for ln in lines if "retrying in" in ln]
    assert retries and all("HTTP 500" in ln and "giving up in" in ln for ln in retries)
    final = lines[len(retries):]
    assert len(final) == 2, p.stderr
    # every retry announced, none after the last attempt: the budget ended the loop
    assert final[0].endswith(f"HTTP 500 Internal Server Error ({len(s.seen)} attempts in 2s)")
    assert len(retries) == len(s.seen) - 1
    assert final[1].endswith(f"retry with: rage send {b} --to {s.url} --yes")
    assert str(b) in p.stderr and "Traceback" not in p.stderr
    assert p.stdout == ""
    assert b.exists() and not Path(str(b) + ".sent.json").exists()
    assert len(s.seen) >= 2
    pending = json.loads(run_rage("pending", "--json").stdout)["bundles"]
    assert [x["path"] for x in pending] == [str(b)]


def test_send_plain_http_remote_refused_with_hint(rage_home: Path) -> None:
    b = _kept(rage_home)
    p = run_rage("send", str(b), "--to", "http://192.0.2.1/up", "--yes")
    assert p.returncode == 2  # a target that cannot work: refused before connecting
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "plain http" in lines[0] and "--allow-http" in lines[0]


def test_send_missing_bundle(rage_home: Path) -> None:
    p = run_rage("send", "nope", "--to", "https://example.invalid", "--yes")
    assert p.returncode == 3
    assert "no such bundle" in p.stderr


def _pty_send(args: list[str], answer: bytes) -> tuple[int, str]:
    main, child = pty.openpty()
    proc = subprocess.Popen(rage_cmd(*args), stdin=child, stdout=child, stderr=child,
                            close_fds=True)
    os.close(child)
    out = b""
    answered = False
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            r, _, _ = select.select([main], [], [], 0.2)
            if r:
                try:
                    data = os.read(main, 4096)
                except OSError:
                    break
                if not data:
                    break
                out += data
            if not answered and b"[Y/n]" in out:
                os.write(main, answer + b"\n")
                answered = True
            if proc.poll() is not None and not r:
                break
    finally:
        os.close(main)
        rc = proc.wait(10)
    return rc, out.decode("utf-8", "replace")


def test_send_on_a_terminal_asks_first(rage_home: Path) -> None:
    b = _kept(rage_home)
    with serving(Reply(200, b"{base}/tty")) as s:
        rc, out = _pty_send(["send", str(b), "--to", s.url], b"n")
        assert rc == 5, out
        assert f"to {s.url}?" in out and s.seen == []
        rc, out = _pty_send(["send", str(b), "--to", s.url], b"y")
    assert rc == 0, out
    assert f"{s.url}/tty" in out and len(s.seen) == 1
