"""Helpers the redaction tests share: the engine on a text, both scans on it, a recorded
run's bundle."""

from __future__ import annotations

import os
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rage.redact import Redactor
from tests.conftest import run_rage

_TEXT = ("import sys; from rage.redact import Redactor; "
         "sys.stdout.write(Redactor(pseudonymize=False).text(sys.stdin.read()))")


def red(text: str, **names: str) -> tuple[str, dict[str, int]]:
    """``text`` redacted (names pseudonymised only when given) and the counts."""
    r = Redactor(**names) if names else Redactor(pseudonymize=False)  # type: ignore[arg-type]
    return r.text(text), dict(r.counts)


def both_scans(text: str) -> tuple[str, str]:
    """``text`` redacted by the native scan and by the pure-Python one, each in a new
    process (which scan is read when a redactor builds)."""
    native, pure = (subprocess.run([sys.executable, "-c", _TEXT], input=text, text=True,
                                   capture_output=True, check=True,
                                   env=dict(os.environ, RAGE_NATIVE_SCAN=flag)).stdout
                    for flag in ("1", "0"))
    return native, pure


def red_both(text: str) -> tuple[str, dict[str, int]]:
    """:func:`red` of ``text``, once the native and the pure-Python scans are seen to
    redact it the same way."""
    out, counts = red(text)
    native, pure = both_scans(text)
    assert native == pure == out, (native, pure, out)
    return out, counts


def reported(app: str | None, out: Path, env: dict[str, str] | None = None) -> bytes:
    """`rage report` of ``app``'s last run (the last run of any app for None) into ``out``
    (in ``env``, if given): the bundle, decompressed."""
    rep = run_rage("report", "--last", *(() if app is None else ("--app", app)), "--yes",
                   "--output", str(out), **({} if env is None else {"env": env}))
    assert rep.returncode == 0, rep.stderr
    return subprocess.run(["zstd", "-dc", str(out)], check=True, capture_output=True).stdout


def record_script(tmp_path: Path, script: str, secrets: str, env: dict[str, str] | None = None
                  ) -> tuple[subprocess.CompletedProcess[str], bytes, Path]:
    """Run the Python ``script`` under `rage run` (with ``env`` added to the environment),
    the ``secrets`` in a file it is given (as a browser or a keyring would hand them: never
    in argv), then `rage report` it: the run's process, the bundle decompressed, and the
    bundle's path."""
    path = tmp_path / "script.py"
    path.write_text(script)
    (tmp_path / "secrets").write_text(secrets)
    env = dict(os.environ, RAGE_HOME=str(tmp_path / "rh"), RAGE_CONFIG=os.devnull,
               **(env or {}))
    proc = run_rage("run", "--", sys.executable, str(path), str(tmp_path / "secrets"), env=env)
    out = tmp_path / "b.tar.zst"
    return proc, reported(None, out, env), out


def member(bundle: Path, name: str) -> str:
    """One member of ``bundle``, as text, read with the system's zstd and tar."""
    return subprocess.run(["tar", "--zstd", "-xOf", str(bundle), name], check=True,
                          capture_output=True, text=True).stdout


@contextmanager
def serving(server: socketserver.TCPServer) -> Iterator[int]:
    """``server`` (bound to 127.0.0.1) answering in a thread of its own until the block
    ends, then shut down and closed: its port."""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def http_server(status: int) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 (http.server, in a thread) that answers every GET
    and POST with ``status`` after reading the request's body: its base URL."""
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args: object) -> None:
            pass

    with serving(http.server.HTTPServer(("127.0.0.1", 0), Handler)) as port:
        yield f"http://127.0.0.1:{port}"


_SERVED = """\
import http.server, subprocess, sys, threading

class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response({status})
        self.end_headers()
    do_GET = do_POST
    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = "http://127.0.0.1:%d" % server.server_address[1]
"""


def served_script(status: int, body: str) -> str:
    """A script for :func:`record_script` that serves HTTP on 127.0.0.1 (every request
    answered with ``status``, nothing logged; its base URL in ``url``), then runs ``body``
    (a client such as curl, as a program under rage would)."""
    import textwrap

    return _SERVED.format(status=status) + textwrap.dedent(body)
