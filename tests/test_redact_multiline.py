"""Values across lines, and tokens across the 1 MiB segment mark of a very long line."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from rage.redact import Redactor
from rage.redact.engine import MAX_SEGMENT
from tests.conftest import rage_cmd

S = "Zq8s3cretValue77"
TOKEN = "ghp_" + "Zq8Lr2Vx9Kp4Tn6Wm1Hc3Bd5Fg7Js0Ya2Ue4"


def red(text: str) -> str:
    return Redactor(pseudonymize=False).text(text)


@pytest.mark.parametrize("text", [
    # YAML block scalars
    f"db:\n  password: |\n    {S}\n    {S}2\n  host: db.local\n",
    f"tls:\n  client_secret: >-\n    {S}\n\n    {S}3\nnext: 1\n",
    # a Bearer token a logger wrapped at 80 columns
    f"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9{S}abcd\n    {S}Abc123defGhi\n{S}x9Yz\n",
    # Kubernetes env entries and JSON name/value pairs
    f"env:\n  - name: GITHUB_TOKEN\n    value: {S}\n  - name: LOG_LEVEL\n    value: debug\n",
    f'env:\n- name: DB_PASSWORD\n  value: "{S}"\n',
    f'[\n  {{\n    "name": "API_KEY",\n    "value": "{S}"\n  }}\n]\n',
    # a Kubernetes Secret: any key under data/stringData
    f"apiVersion: v1\ndata:\n  config.json: {S}\n  .dockerconfigjson: {S}x\nkind: Secret\n"
    "metadata:\n  name: regcred\ntype: kubernetes.io/dockerconfigjson\n",
    f"---\nkind: Secret\nstringData:\n  anything: {S}\n",
    # PuTTY .ppk
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: k\nPublic-Lines: 2\n"
    "AAAAC3NzaC1lZDI1NTE5AAAAIB\nAAAA\nPrivate-Lines: 2\n" + S + "AAAA\n" + S + "BBBB\n"
    "Private-MAC: " + "ab12" * 8 + "\n",
])
def test_value_across_lines_removed(text: str) -> None:
    out = red(text)
    assert S not in out, out


@pytest.mark.parametrize("text", [
    "env:\n  - name: LOG_LEVEL\n    value: debug\n  - name: MAX_TOKENS\n    value: \"4096\"\n",
    "script: |\n  echo building\n  make all\n",
    "description: >\n  A tool that refreshes the token\n",
    "Authorization: Bearer [REDACTED:auth-header]\nHTTP/1.1 200 OK\n",
    "kind: ConfigMap\ndata:\n  log_level: debug\n",
])
def test_benign_multiline_kept(text: str) -> None:
    assert red(text) == text


def _long_line_with_token_at(mark: int, glue: str) -> bytes:
    """One line of 3 MiB with a token crossing byte ``mark``."""
    head = (f"x{glue}" * (mark // (1 + len(glue)) + 1))[: mark - len(TOKEN) // 2]
    return (head + TOKEN + glue + f"y{glue}" * MAX_SEGMENT + "\n").encode()


@pytest.mark.parametrize("glue", [",", ";", " ", "\"", "}"])
@pytest.mark.parametrize("workers", [0, 2])
def test_token_across_the_segment_mark(glue: str, workers: int) -> None:
    data = _long_line_with_token_at(MAX_SEGMENT, glue) * 2
    r = Redactor(pseudonymize=False)
    chunks = [data[i:i + 65536] for i in range(0, len(data), 65536)]
    out = b"".join(r.stream(iter(chunks), workers=workers, size=len(data)))
    assert TOKEN.encode() not in out
    assert r.counts.get("github-token") == 2
    assert Redactor(pseudonymize=False).bytes(data) == out


def test_stream_keeps_a_block_scalar_whole_across_blocks() -> None:
    filler = b"".join(b"line %d of ordinary output\n" % i for i in range(40000))
    data = filler + f"password: |\n  {S}\n  {S}\n".encode() + filler
    for cut in (len(filler) - 10, len(filler) + 5, len(filler) + 14):
        chunks = [data[:cut], data[cut:]]
        out = b"".join(Redactor(pseudonymize=False).stream(iter(chunks), block=len(filler)))
        assert S.encode() not in out


def test_native_prefilter_and_pure_python_agree(tmp_path: Path) -> None:
    """The optional Hyperscan scan (the `fast` extra) and the pure-Python scan give
    the same output and counts: the same text redacted in two processes, one with
    RAGE_NATIVE_SCAN=0."""
    from tests.corpus.contexts import TOKEN_CONTEXTS, render
    from tests.corpus.secrets import SAMPLES, sample

    lines = []
    for i, name in enumerate(sorted(SAMPLES)):
        kind, _secret, planted = sample(name)
        ctx = sorted(TOKEN_CONTEXTS)[i % len(TOKEN_CONTEXTS)]
        lines.append(render(TOKEN_CONTEXTS[ctx], planted, kind))
        lines.append(f"2024-05-01 INFO user session {i} token refreshed request={i:08x}")
    src = tmp_path / "in.log"
    src.write_text("\n".join(lines) + "\n")
    outs = []
    for native in ("1", "0"):
        proc = subprocess.run([*rage_cmd("redact", str(src), "--json", "--no-pseudonyms")],
                              capture_output=True, check=True,
                              env=dict(os.environ, RAGE_NATIVE_SCAN=native))
        outs.append((proc.stdout, json.loads(proc.stderr)))
    assert outs[0] == outs[1]
    assert outs[0][1]["total"] >= len(SAMPLES)


def test_a_tagged_block_scalar_as_pyyaml_writes_bytes() -> None:
    """PyYAML dumps bytes as `key: !!binary |` and their base64 below it (Ansible writes a
    vaulted value as `!vault |`): under a secret name the block goes, as an untagged one
    does; a tagged block under another name stays."""
    import base64

    import yaml  # type: ignore[import-untyped]  # (yamllint, a test extra, brings it)

    secret = b"hunter2-very-secret-password-value-0123456789abcdef" * 2  # two lines of base64
    text = yaml.dump({"db": {"password": secret}, "token": secret[:24], "icon": b"GIF89a.."})
    out = red(text)
    encoded = base64.b64encode(secret).decode()
    assert encoded[:40] in text.replace("\n", "").replace(" ", "")  # PyYAML wrote it so
    flat = out.replace("\n", "").replace(" ", "")
    for part in (encoded[:12], encoded[-12:], base64.b64encode(secret[:24]).decode()[:12]):
        assert part not in flat, out
    assert base64.b64encode(b"GIF89a..").decode() in out  # no secret name above it
    assert "password: !!binary |" in out and "token: !!binary |" in out
