"""The README's three journeys, run from the README's own code blocks.

A maintainer starts a receiver with the tokens exported as the README shows (never on the
command line); a user reports the last failed run to it with `--to receiver+...`; a tool
author's three lines give a click tool `mytool rage`. The blocks are read from README.md, so
an edit that breaks one fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.test_docs import blocks

ROOT = Path(__file__).resolve().parent.parent
RAGE = str(Path(sys.executable).with_name("rage"))


def readme_block(lang: str, containing: str) -> str:
    found, _prose = blocks((ROOT / "README.md").read_text())
    matches = ["\n".join(b) for language, b in found if language == lang and containing in
               "\n".join(b)]
    assert len(matches) == 1, (lang, containing, matches)
    return matches[0]


def strip_comment(line: str) -> str:
    return re.sub(r"\s+#.*$", "", line)


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """The maintainer's block: export the tokens, start `rage serve` (on a free port and a
    temporary storage directory instead of 8080 and /srv/rage). Its URL and environment."""
    export, serve = readme_block("sh", "export RAGE_SERVER_UPLOAD_TOKEN").splitlines()
    assert export.startswith("export RAGE_SERVER_UPLOAD_TOKEN=") and "--" not in export
    serve = serve.replace("--port 8080", "--port 0").replace("/srv/rage", str(tmp_path / "srv"))
    assert "token" not in serve.lower()
    env = {**os.environ, "PATH": f"{Path(RAGE).parent}:{os.environ['PATH']}"}
    proc = subprocess.Popen(["sh", "-c", f"{export}\nexec {serve}"], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)/", first)
        assert m, first
        # the tokens are in the receiver's environment and nowhere on its command line
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        environ = dict(v.split(b"=", 1) for v in
                       Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0") if b"=" in v)
        tokens = {k.decode(): environ[k].decode() for k in
                  (b"RAGE_SERVER_UPLOAD_TOKEN", b"RAGE_SERVER_ADMIN_TOKEN")}
        assert all(len(t) == 48 for t in tokens.values())
        assert not any(t.encode() in arg for t in tokens.values() for arg in cmdline)
        yield m.group(1), tokens
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def rage(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RAGE, *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})},
                          check=False)


def test_a_user_reports_to_the_maintainers_receiver(
        receiver: tuple[str, dict[str, str]]) -> None:
    url, tokens = receiver
    assert rage("run", "--", "ls", "/nonexistent").returncode != 0
    block = readme_block("sh", "rage report --last-failed --to")
    lines = [strip_comment(line) for line in block.splitlines()]
    (line,) = [line for line in lines if "--to" in line]
    argv = line.replace("https://rage.example.org/", f"{url}/").split()[1:]
    assert argv[argv.index("--to") + 1].startswith("receiver+http://127.0.0.1:")

    refused = rage(*argv)  # the receiver wants the upload token
    assert refused.returncode == 4, refused.stdout + refused.stderr
    # the token alone is not sent to a --to: the hint names what the README does (the
    # receiver's RAGE_SERVER_UPLOAD_TOKEN, RAGE_UPLOAD_URL), not the `rage serve` option
    # the README tells maintainers never to use
    token_only = rage(*argv, env={"RAGE_UPLOAD_TOKEN": tokens["RAGE_SERVER_UPLOAD_TOKEN"]})
    assert token_only.returncode == 4, token_only.stdout + token_only.stderr
    for hint in (refused.stderr, token_only.stderr):
        assert "RAGE_SERVER_UPLOAD_TOKEN" in hint and "RAGE_UPLOAD_URL" in hint, hint
        assert "--upload-token" not in hint, hint
    # as the README says: the token, and the receiver it belongs to
    receiver_url = argv[argv.index("--to") + 1]
    assert "`RAGE_UPLOAD_URL`" in (ROOT / "README.md").read_text()
    sent = rage(*argv, env={"RAGE_UPLOAD_TOKEN": tokens["RAGE_SERVER_UPLOAD_TOKEN"],
                            "RAGE_UPLOAD_URL": receiver_url})
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert "https://rage.example.org/b/" in sent.stdout + sent.stderr  # its --public-url

    admin = {"Authorization": f"Bearer {tokens['RAGE_SERVER_ADMIN_TOKEN']}"}
    signatures = requests.get(f"{url}/api/v1/signatures", headers=admin, timeout=30)
    assert signatures.status_code == 200, signatures.text
    assert "ls" in signatures.text
    assert requests.get(f"{url}/api/v1/signatures", timeout=30).status_code == 401


def test_a_tool_author_adds_rage_in_three_lines(tmp_path: Path) -> None:
    lines = readme_block("python", "rage.click.attach").strip()
    assert len([line for line in lines.splitlines() if line.strip()]) <= 3
    tool = tmp_path / "mytool.py"
    tool.write_text(textwrap.dedent("""\
        import click


        @click.group()
        def cli():
            "A tool."


        @cli.command()
        def hello():
            click.echo("hello")


        """) + lines + '\n\nif __name__ == "__main__":\n    cli()\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    hello = subprocess.run([sys.executable, str(tool), "hello"], capture_output=True,
                           text=True, timeout=60, env=env, check=False)
    assert hello.returncode == 0 and hello.stdout == "hello\n", hello.stderr
    out = tmp_path / "out"
    out.mkdir()
    report = subprocess.run([sys.executable, str(tool), "rage", "--last", "--yes",
                             "--no-upload", "--output", f"{out}/"], capture_output=True,
                            text=True, timeout=120, env=env, check=False)
    assert report.returncode == 0, report.stderr
    (bundle,) = out.glob("mytool-*.tar.zst")
    shown = rage("inspect", str(bundle))
    assert "checksums: ok" in shown.stdout and "hello" in shown.stdout, shown.stdout
