"""`rage report` end to end: real runs, real redaction, real tar/zstd/sha256sum on the bundle."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rage.bundle import open_bundle
from rage.bundle.read import BundleReader
from rage.record.capture import MARKER
from rage.report import fair_shares
from tests.conftest import run_rage
from tests.test_select import pty_rage, record

# Secrets of shapes any redactor must know; each is unique so a grep finds any leak.
GH_TOKEN = "ghp_" + "Zq8Lr2Vx9Kp4Tn6Wm1Hc3Bd5Fg7Js0Ya2Ue4"
AWS_KEY = "AKIA" + "QWERTYUIOP5LKJHG"
PASSWORD = "hunter2-Sup3rS3cret-xyzzy"
DB_URL_PW = "s3cretDbPw77"
CUSTOMER = "ACME-884411"  # caught only by the user's own pattern (RAGE_REDACT)

SCRIPT = f"""
import os, sys
print("starting with token", os.environ["MYTOOL_API_TOKEN"])
for i in range(60):
    print(f"\\x1b[32mstep {{i}}\\x1b[0m working")
print("aws key in use:", "{AWS_KEY}", file=sys.stderr)
print("db at https://bob:{DB_URL_PW}@db.example.com/main", file=sys.stderr)
print("customer {CUSTOMER} affected", file=sys.stderr)
print("fatal: could not frobnicate", file=sys.stderr)
sys.exit(3)
"""


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, MYTOOL_API_TOKEN=GH_TOKEN, RAGE_REDACT=r"ACME-[0-9]{6}", **extra)


def _record_failing_run(tmp_path: Path) -> None:
    script = tmp_path / "tool.py"
    script.write_text(SCRIPT)
    proc = run_rage("run", "--app", "mytool", "--", sys.executable, str(script),
                    f"--password={PASSWORD}", env=_env())
    assert proc.returncode == 3, proc.stderr


def _all_bytes(root: Path) -> bytes:
    return b"\n".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_report_end_to_end_with_system_tar_and_zstd(tmp_path: Path) -> None:
    _record_failing_run(tmp_path)
    out = tmp_path / "bundle.tar.zst"
    proc = run_rage("report", "--last", "--yes", "--output", str(out),
                    "--note", f"it broke for {CUSTOMER}", env=_env())
    assert proc.returncode == 0, proc.stderr
    assert str(out) in proc.stdout
    assert stat.S_IMODE(out.stat().st_mode) == 0o600

    listing = subprocess.run(f"zstd -dc {out} | tar -t", shell=True, check=True,
                             capture_output=True, text=True).stdout.split()
    # what changed since it last worked (here: it never did) comes before the run's files
    assert listing[:4] == ["manifest.json", "summary.md", "changes.json", "run/meta.json"]
    first_collector = next(i for i, n in enumerate(listing) if n.startswith("collectors/"))
    assert all(n.startswith("run/") for n in listing[3:first_collector])
    assert all(n.startswith("collectors/") for n in listing[first_collector:])
    assert "run/stdout.log" in listing and "run/stderr.log" in listing

    dest = tmp_path / "x"
    dest.mkdir()
    subprocess.run(f"zstd -dc {out} | tar -x -C {dest}", shell=True, check=True)
    raw = subprocess.run(["zstd", "-dc", str(out)], check=True, capture_output=True).stdout
    for secret in (GH_TOKEN, AWS_KEY, PASSWORD, DB_URL_PW, CUSTOMER):
        assert secret.encode() not in raw, secret
    assert b"[REDACTED:" in _all_bytes(dest)

    manifest = json.loads((dest / "manifest.json").read_text())
    sums = subprocess.run(["sha256sum", *[e["name"] for e in manifest["files"]]], cwd=dest,
                          check=True, capture_output=True, text=True).stdout
    actual = {line.split()[1]: line.split()[0] for line in sums.splitlines()}
    assert actual == {e["name"]: e["sha256"] for e in manifest["files"]}
    assert {e["name"] for e in manifest["files"]} | {"manifest.json"} == set(listing)
    assert manifest["schema"] == 1 and manifest["app"] == "mytool"
    assert manifest["run"]["exit_code"] == 3 and manifest["run"]["status"] == "failed"
    assert sum(manifest["redaction"]["counts"].values()) >= 6
    assert manifest["note"].startswith("it broke") and CUSTOMER not in manifest["note"]
    assert {c["name"] for c in manifest["collectors"]} >= {"platform", "python"}
    assert all(c["status"] in {"ok", "skipped", "error", "timeout"}
               for c in manifest["collectors"])

    summary = (dest / "summary.md").read_text()
    assert summary.startswith("# mytool: failed run")
    assert "**Exit code:** 3" in summary
    assert "step 59 working" in summary and "\x1b[" not in summary
    assert "it broke" in summary
    assert "## Environment" in summary and "- **Python:** CPython" in summary

    inspect = run_rage("inspect", str(out))
    assert inspect.returncode == 0, inspect.stderr
    assert "checksums: ok" in inspect.stdout


def test_preview_shows_redacted_content_and_writes_nothing(tmp_path: Path) -> None:
    _record_failing_run(tmp_path)
    proc = run_rage("report", "--last", "--preview", "--no-collect", env=_env())
    assert proc.returncode == 0, proc.stderr
    assert "===== summary.md" in proc.stdout and "===== run/stderr.log" in proc.stdout
    assert "fatal: could not frobnicate" in proc.stdout
    for secret in (GH_TOKEN, AWS_KEY, PASSWORD, DB_URL_PW, CUSTOMER):
        assert secret not in proc.stdout
    assert not list(Path(os.environ["RAGE_HOME"]).rglob("*.tar.zst"))

    as_json = run_rage("report", "--last", "--preview", "--json", "--no-collect", env=_env())
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    names = [m["name"] for m in data["members"]]
    assert names[:2] == ["manifest.json", "summary.md"]
    assert data["redaction_counts"]


def test_default_location_is_the_reports_dir(tmp_path: Path) -> None:
    run = record("demo", ["demo", "go"], 1, output=b"boom\n")
    proc = run_rage("report", run.short_id, "--yes", "--no-collect", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    path = Path(result["bundle"]["path"])
    assert path.parent == Path(os.environ["RAGE_HOME"]) / "demo" / "reports"
    assert path.name.startswith(f"demo-{run.short_id}-") and path.name.endswith(".tar.zst")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert result["upload"] is None


def test_big_output_is_truncated_head_and_tail(tmp_path: Path) -> None:
    lines = b"".join(b"line %06d of the log\n" % i for i in range(50_000))  # ~1.1 MB
    record("demo", ["demo"], 1, output=lines, files={"traceback.txt": b"Traceback: boom\n"})
    out = tmp_path / "b.tar.zst"
    proc = run_rage("report", "--last", "--yes", "--no-collect", "--output", str(out),
                    env=dict(os.environ, RAGE_BUNDLE_MAX_BYTES="128KiB"))
    assert proc.returncode == 0, proc.stderr
    reader = open_bundle(out)
    assert reader.verify() == []
    log = reader.read("run/output.log")
    assert len(log) < 140 * 1024
    assert log.startswith(b"line 000000") and log.endswith(b"line 049999 of the log\n")
    assert b"bytes dropped here" in log
    assert reader.read("run/traceback.txt") == b"Traceback: boom\n"  # small files kept whole
    notes = reader.manifest["truncation"]
    assert [n["name"] for n in notes if n["stage"] == "bundle"] == ["run/output.log"]
    assert "## Traceback" in reader.summary and "## Truncated" in reader.summary


KiB = 1024
MiB = 1024 * KiB
BIG = 4 * MiB  # a run file well over its share: the dropped middle is never read
HALF = 128 * KiB  # head and tail kept of a file whose cap is 256 KiB
GH_TAIL = "ghp_" + "Yt3Mn8Rq2Ws5Xv7Lp0Kb4Dj6Hf9Gc1Na3Ze5"


def _filler(out: bytearray, upto: int) -> None:
    """Ordinary log lines (nothing to redact) up to exactly offset ``upto``."""
    while len(out) < upto:
        line = b"2025-06-01 INFO worker step %08d doing ordinary work\n" % len(out)
        room = upto - len(out)
        out += line if len(line) <= room else b"." * (room - 1) + b"\n"


def _log(size: int, plants: dict[int, bytes]) -> bytes:
    """A log of exactly ``size`` bytes with each planted text starting at its offset."""
    out = bytearray()
    for offset, text in sorted(plants.items()):
        _filler(out, offset)
        assert len(out) == offset
        out += text
    _filler(out, size)
    assert len(out) == size
    return bytes(out)


def _key_block(tag: bytes, size: int) -> bytes:
    """A PEM private key block of about ``size`` bytes whose lines all carry ``tag``."""
    lines = [b"-----BEGIN RSA PRIVATE KEY-----\n"]
    n = len(lines[0])
    while n < size:
        line = (tag + b"%06d" % len(lines)).ljust(64, b"Q") + b"\n"
        lines.append(line)
        n += len(line)
    lines.append(b"-----END RSA PRIVATE KEY-----\n")
    return b"".join(lines)


def _report(out: Path, budget: str) -> tuple[bytes, dict[str, Any], BundleReader]:
    proc = run_rage("report", "--last", "--yes", "--no-collect", "--output", str(out),
                    env=dict(os.environ, RAGE_BUNDLE_MAX_BYTES=budget))
    assert proc.returncode == 0, proc.stderr
    reader = open_bundle(out)
    assert reader.verify() == []
    raw = subprocess.run(["zstd", "-dc", str(out)], check=True, capture_output=True).stdout
    return raw, reader.manifest, reader


def _cut(data: bytes, dropped: int) -> tuple[bytes, bytes]:
    """The head and the tail of a capped member, which must hold exactly one marker."""
    assert data.count(b" bytes dropped here: ") == 1
    head, sep, tail = data.partition(MARKER % dropped)
    assert sep, "the marker names the dropped bytes of the manifest"
    return head, tail


def test_truncated_file_redacts_only_what_is_sent(tmp_path: Path) -> None:
    """Secrets at both ends and across both cuts never show; the middle is never read."""
    a = _log(BIG, {
        10_000: f"using token {GH_TOKEN} for the api\n".encode(),  # (a) in the head
        HALF - 200: b"password=" + b"Zx9Qw" * 80 + b"\n",  # (c) across the head cut
        2 * MiB: f"aws key {AWS_KEY} seen\n".encode(),  # only in the dropped middle
        BIG - HALF - 200: b"api_key=" + b"Qm7Vt" * 80 + b"\n",  # (d) across the tail cut
        BIG - 5000: b"Authorization: Bearer " + b"Tk5Rb" * 10 + b"\n",  # (b) in the tail
        BIG - 4000: f"then {GH_TAIL} again\n".encode(),  # (b)
    })
    b = _log(BIG, {
        HALF - 30 * KiB: _key_block(b"KeyHeadLine", 60 * KiB),  # a key block across the head cut
        BIG - HALF - 100 * KiB: _key_block(b"KeyTailLine", 120 * KiB),  # (e) from the middle
    })
    record("demo", ["demo"], 1, output=a, files={"app.log": b})
    raw, manifest, reader = _report(tmp_path / "cut.tar.zst", "512KiB")
    for leak in (GH_TOKEN, GH_TAIL, AWS_KEY, "Zx9Qw", "Qm7Vt", "Tk5Rb", "KeyHeadLine",
                 "KeyTailLine"):
        assert leak.encode() not in raw, leak
    counts = manifest["redaction"]["counts"]
    assert counts["github-token"] == 2 and counts["private-key"] == 2
    assert counts["secret-field"] == 2 and counts["auth-header"] == 1
    assert "aws-access-key" not in counts  # the middle was not redacted: never read

    whole_raw, whole_manifest, whole = _report(tmp_path / "whole.tar.zst", "64MiB")
    assert whole_manifest["truncation"] == []
    assert whole_manifest["redaction"]["counts"]["aws-access-key"] == 1
    assert AWS_KEY.encode() not in whole_raw and b" bytes dropped here: " not in whole_raw
    notes = {n["name"]: n for n in manifest["truncation"]}
    for name, src in (("run/output.log", a), ("run/app.log", b)):
        note = notes[name]
        assert note["stage"] == "bundle" and note["total_bytes"] == len(src)
        assert note["dropped_bytes"] == len(src) - 2 * HALF  # source bytes not included
        head, tail = _cut(reader.read(name), note["dropped_bytes"])
        assert len(head) == HALF and len(tail) == HALF
        full = whole.read(name)
        assert len(full) < len(src)  # secrets were replaced by shorter placeholders
        assert head == full[:HALF] and tail == full[-HALF:]  # as if all had been redacted
        assert head.startswith(src[:9000]) and tail.endswith(src[-3000:])


def test_key_block_open_across_the_tail_region_start(tmp_path: Path) -> None:
    """A key block begun before the tail region and reaching into the kept tail (the tail
    after it shrank under redaction) is redacted from its BEGIN line."""
    region = BIG - HALF - MiB  # the tail region's start before it is moved back
    src = _log(BIG, {
        region - 100_000: _key_block(b"KeyOpenLine", 900_000),
        region + 820_000: _key_block(b"KeyShrinkLine", 300_000),
    })
    record("demo", ["demo"], 1, output=src)
    raw, manifest, reader = _report(tmp_path / "cut.tar.zst", "256KiB")
    assert b"KeyOpenLine" not in raw and b"KeyShrinkLine" not in raw
    assert manifest["redaction"]["counts"] == {"private-key": 2}
    (note,) = manifest["truncation"]
    head, tail = _cut(reader.read("run/output.log"), note["dropped_bytes"])
    assert len(head) == HALF and tail.startswith(b"[REDACTED:private-key]\n")
    assert len(tail) < HALF  # the whole (shrunk) tail region is kept
    assert note["dropped_bytes"] == region - 100_000 - HALF  # the source up to the block
    assert tail.endswith(src[-50_000:])
    assert re.search(rb"\[rage: \d+ bytes dropped here", raw)


def test_upload_needs_yes_without_a_terminal(tmp_path: Path) -> None:
    record("demo", ["demo"], 1, output=b"x\n")
    target = (tmp_path / "inbox").as_uri()
    proc = run_rage("report", "--last", "--no-collect", "--to", target)
    assert proc.returncode == 2
    assert "--yes" in proc.stderr
    assert not list(Path(os.environ["RAGE_HOME"]).rglob("*.tar.zst"))
    assert not (tmp_path / "inbox").exists()


def test_upload_with_yes_prints_link_and_issue_url(tmp_path: Path, config_file: Path) -> None:
    record("demo", ["demo", "sync"], 1, output=b"x\n")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    config_file.write_text(
        f'[app.demo]\nupload_url = "{inbox.as_uri()}"\n'
        'issues_url = "https://github.com/me/demo/issues"\n')
    proc = run_rage("report", "--last", "--yes", "--no-collect", "--note", "sync fails")
    assert proc.returncode == 0, proc.stderr
    sent = list(inbox.iterdir())
    assert len(sent) == 1 and open_bundle(sent[0]).verify() == []
    assert f"uploaded: {sent[0].resolve().as_uri()}" in proc.stdout
    assert f"]({sent[0].resolve().as_uri()})" in proc.stdout  # the markdown line
    assert "https://github.com/me/demo/issues/new?" in proc.stdout
    no_up = run_rage("report", "--last", "--yes", "--no-collect", "--no-upload")
    assert no_up.returncode == 0 and len(list(inbox.iterdir())) == 1


def test_unknown_collector_is_a_usage_error() -> None:
    record("demo", ["demo"], 1)
    proc = run_rage("report", "--last", "--yes", "--only", "no-such-collector")
    assert proc.returncode == 2 and "no-such-collector" in proc.stderr


def test_interactive_report_on_a_pty(tmp_path: Path) -> None:
    record("demo", ["demo", "older"], 2, output=b"older output\n")
    record("demo", ["demo", "newer"], 0, output=b"newer output\n")
    with pty_rage("report", "--app", "demo", "--no-collect") as p:
        p.expect("q to quit]")
        p.send("2\n")
        p.expect("What went wrong?")
        p.send("the older one failed\n")
        overview = p.expect("Create the bundle? [Y/n, p to preview]")
        assert "run/output.log" in overview and "summary.md" in overview
        p.send("\n")
        p.expect("bundle written: ")
        assert p.wait() == 0
    bundles = list((Path(os.environ["RAGE_HOME"]) / "demo" / "reports").glob("*.tar.zst"))
    assert len(bundles) == 1
    reader = open_bundle(bundles[0])
    assert reader.manifest["run"]["argv"] == ["demo", "older"]
    assert reader.manifest["note"] == "the older one failed"


def test_interactive_decline_writes_nothing() -> None:
    record("demo", ["demo"], 2, output=b"out\n")
    with pty_rage("report", "--last", "--app", "demo", "--no-collect") as p:
        p.expect("What went wrong?")
        p.send("\n")
        p.expect("Create the bundle? [Y/n, p to preview]")
        p.send("n\n")
        assert p.wait() == 5
    assert not list(Path(os.environ["RAGE_HOME"]).rglob("*.tar.zst"))


def test_interactive_upload_is_asked_and_defaults_to_yes(tmp_path: Path) -> None:
    """Both questions default to yes: Enter does what the user asked for with --to."""
    record("demo", ["demo"], 2, output=b"out\n")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    with pty_rage("report", "--last", "--app", "demo", "--no-collect", "--to",
                  inbox.as_uri()) as p:
        p.expect("What went wrong?")
        p.send("\n")
        p.expect("Create the bundle? [Y/n, p to preview]")
        p.send("\n")
        asked = p.expect(f"Upload it to {inbox}? [Y/n]")
        p.send("n\n")
        p.expect("not uploaded; send it later with: rage send ")
        assert p.wait() == 0
    assert "bundle written: " in asked  # written before the question, and said so after
    assert list(inbox.iterdir()) == []
    with pty_rage("report", "--last", "--app", "demo", "--no-collect", "--to",
                  inbox.as_uri()) as p:
        p.expect("What went wrong?")
        p.send("\n")
        p.expect("Create the bundle? [Y/n, p to preview]")
        p.send("\n")
        p.expect(f"Upload it to {inbox}? [Y/n]")
        p.send("\n")
        p.expect("uploaded: file://")
        assert p.wait() == 0
    assert len(list(inbox.iterdir())) == 1


def test_factory_scopes_to_one_app(tmp_path: Path) -> None:
    import click

    from rage.cli.report_cmd import make_report_command

    mine = record("mytool", ["mytool", "a"], 1, output=b"mine\n")
    record("other", ["other", "b"], 1, output=b"theirs\n")  # newer, another app
    cmd = make_report_command(app="mytool", name="rage", help="Report a bug in mytool.",
                              app_defaults={"bundle_max_bytes": "1MiB"})
    assert "--app" not in [o for p in cmd.params for o in getattr(p, "opts", [])]
    ctx = click.Context(cmd, info_name="mytool rage")
    assert "Report a bug in mytool." in cmd.get_help(ctx)
    out = tmp_path / "b.tar.zst"
    script = (
        "import sys\n"
        "from rage.cli.report_cmd import make_report_command\n"
        "cmd = make_report_command(app='mytool')\n"
        "cmd.main(args=sys.argv[1:], prog_name='mytool rage')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, "--last", "--yes", "--no-collect",
                           "--output", str(out)], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 0, proc.stderr
    assert open_bundle(out).manifest["run"]["id"] == mine.id
    bad = subprocess.run([sys.executable, "-c", script, "--last-failed", "--yes", "--app", "x"],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                         check=False)
    assert bad.returncode == 2 and "--app" in bad.stderr
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    with_defaults = script.replace(
        "app='mytool'", f"app='mytool', app_defaults={{'upload_url': {inbox.as_uri()!r}}}")
    sent = subprocess.run([sys.executable, "-c", with_defaults, "--last", "--yes",
                           "--no-collect"], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)
    assert sent.returncode == 0, sent.stderr
    assert [open_bundle(p).manifest["run"]["id"] for p in inbox.iterdir()] == [mine.id]
    none = subprocess.run([sys.executable, "-c", script.replace("'mytool'", "'empty'"),
                           "--last"], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)
    assert none.returncode == 3 and none.stderr.startswith("mytool: no runs recorded")


@given(st.dictionaries(st.text(min_size=1, max_size=5), st.integers(0, 10_000), max_size=8),
       st.integers(0, 40_000))
def test_fair_shares_fit_the_budget(sizes: dict[str, int], budget: int) -> None:
    caps = fair_shares(sizes, budget)
    assert set(caps) == set(sizes)
    assert sum(caps.values()) <= budget
    if sum(sizes.values()) <= budget:
        assert caps == sizes
    for name, cap in caps.items():
        assert cap <= sizes[name]
        if cap < sizes[name]:  # a truncated file got at least as much as any other file
            assert all(cap >= other for other in caps.values())


@pytest.mark.parametrize("flags", [["--last", "--last-failed"], ["abc", "--last"]])
def test_conflicting_selectors(flags: list[str]) -> None:
    record("demo", ["demo"], 1)
    proc = run_rage("report", *flags, "--yes")
    # this usage error, not another (an unknown option, a missing argument) that exits 2 too
    assert (proc.returncode, proc.stderr) == (
        2, "rage: give only one of RUN, --last and --last-failed\n")


def test_interactive_with_nothing_recorded_exits_3() -> None:
    with pty_rage("report", "--app", "demo") as p:
        p.expect("rage run -- CMD")
        assert p.wait() == 3


def test_preview_on_a_pty_goes_through_the_pager() -> None:
    record("demo", ["demo"], 1, output=b"visible line\n")
    with pty_rage("report", "--last", "--app", "demo", "--preview", "--no-collect",
                  env={"PAGER": "sed s/^/PAGED:/"}) as p:
        p.expect("PAGED:===== run/output.log")
        p.expect("PAGED:visible line")
        assert p.wait() == 0
    assert not list(Path(os.environ["RAGE_HOME"]).rglob("*.tar.zst"))


def test_interactive_p_previews_then_asks_again() -> None:
    record("demo", ["demo"], 1, output=b"visible line\n")
    with pty_rage("report", "--last", "--app", "demo", "--no-collect",
                  env={"PAGER": "sed s/^/PAGED:/"}) as p:
        p.expect("What went wrong?")
        p.send("\n")
        p.expect("Create the bundle? [Y/n, p to preview]")
        p.send("p\n")
        p.expect("PAGED:visible line")
        p.expect("Create the bundle? [Y/n, p to preview]")
        p.send("y\n")
        p.expect("bundle written: ")
        assert p.wait() == 0
    assert len(list(Path(os.environ["RAGE_HOME"]).rglob("*.tar.zst"))) == 1


def test_unwritable_output_is_a_clear_error(tmp_path: Path) -> None:
    record("demo", ["demo"], 1, output=b"x\n")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    proc = run_rage("report", "--last", "--yes", "--no-collect",
                    "--output", str(blocker / "sub" / "b.tar.zst"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"rage: no such directory: {blocker / 'sub'}")
    assert "Traceback" not in proc.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_capped_regions_redacted_in_workers_match_the_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Head and tail regions streamed by worker processes from their first piece (their
    size is passed down as a hint) give the bytes an in-process redaction of the whole
    file gives, with the same counts."""
    import hashlib

    import zstandard

    import rage.redact.parallel
    from rage.bundle.frames import FrameCompressor, FrameWriter
    from rage.redact import Redactor
    from rage.redact.capped import redact_capped

    monkeypatch.setattr(rage.redact.parallel, "PARALLEL_MIN", 64 * KiB)  # regions > this
    size = 3 * MiB + 12345
    src = tmp_path / "big.log"
    src.write_bytes(_log(size, {
        5_000: f"token {GH_TOKEN} and /home/someone/x\n".encode(),
        HALF - 90: b"password=" + b"Zx9Qw" * 40 + b"\n",  # across the head cut
        HALF + 20 * KiB: b"first seen /home/latecomer/notes\n",  # a name numbered later
        size - HALF - 300: b"api_key=" + b"Qm7Vt" * 80 + b"\n",  # across the tail cut
        size - HALF - 200 * KiB: _key_block(b"KeyTailLine", 150 * KiB),
        size - 9_000: b"back in /home/latecomer and /home/someone\n",
    }))
    whole = Redactor(home="/home/me", user="me", hostname="me-box")
    full = whole.bytes(src.read_bytes())
    r = Redactor(home="/home/me", user="me", hostname="me-box")
    frames = FrameWriter(tmp_path / "out.zst", FrameCompressor(), memory_max=0)  # the file
    note, digest, framed = redact_capped(src, tmp_path / "out.log", 2 * HALF, size, r,
                                         frames=frames)
    # the kept bytes, compressed piece by piece (mostly by the workers) as they went, and
    # never written out as plain text
    assert framed and not (tmp_path / "out.log").exists()
    member = frames.close()
    assert _frames(tmp_path / "out.zst") > 2
    out = zstandard.ZstdDecompressor().stream_reader(
        (tmp_path / "out.zst").read_bytes(), read_across_frames=True).read()
    assert member.size == len(out) and member.read(0, len(out)) == out
    assert digest == (len(out), hashlib.sha256(out).hexdigest())
    head, tail = _cut(out, note["dropped_bytes"])
    assert head == full[:HALF] and tail == full[-HALF:]
    assert b"KeyTailLine" not in out and b"Zx9Qw" not in out and b"Qm7Vt" not in out
    assert b"latecomer" not in out and b"someone" not in out
    # the regions' counts: everything but the middle, which was never read
    assert r.counts["github-token"] == 1 and r.counts["private-key"] == 1
    assert r.counts["secret-field"] == 2 and r.counts["user"] == 4
    assert r.pseudonym_map() == whole.pseudonym_map()


def _frames(path: Path) -> int:
    """How many zstd frames ``path`` holds, as the zstd program lists them."""
    out = subprocess.run(["zstd", "-lv", str(path)], check=True, capture_output=True,
                         text=True).stdout
    m = re.search(r"# Zstandard Frames: (\d+)", out)
    assert m, out
    return int(m.group(1))


def test_frames_held_in_memory_are_bounded_for_the_whole_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each large run file's frames are held in memory while the report is prepared, so the
    bundle writes them once; the members together hold at most MEMORY_MAX, and a member
    past what is left keeps its frames in a 0600 file. Either way the bundle is the same."""
    import rage.report.pipeline
    from rage.bundle.frames import Framed
    from rage.config import load_settings
    from rage.defaults import LEARNED_MAX
    from rage.redact import Redactor
    from rage.report import ReportRequest, prepare, write

    size = LEARNED_MAX + MiB  # redacted and compressed by the workers
    logs = {name: _log(size, {i * MiB + 5: f"token {GH_TOKEN} in {name} {i}\n".encode()
                              for i in range(1, 8)}) for name in ("output.log", "app.log")}
    run = record("demo", ["demo"], 1, output=logs["output.log"],
                 files={"app.log": logs["app.log"]})
    settings = load_settings("demo", overrides={"bundle_max_bytes": 64 * MiB})

    def bundle(memory_max: int, out: Path) -> dict[str, Framed]:
        monkeypatch.setattr(rage.report.pipeline, "MEMORY_MAX", memory_max)
        prepared = prepare(ReportRequest(run=run, settings=settings, collect=False))
        with prepared:
            framed = {m.name: m.data for m in prepared.members if isinstance(m.data, Framed)}
            write(prepared, out)
        return framed

    whole = bundle(64 * MiB, tmp_path / "whole.tar.zst")
    assert set(whole) == {"run/output.log", "run/app.log"}
    assert all(f.frames is None for f in whole.values())  # both held in memory
    first = sum(map(len, whole["run/output.log"].held))
    split = bundle(first + 1000, tmp_path / "split.tar.zst")  # room for one member only
    held = [f for f in split.values() if f.frames is None]
    spilled = [f for f in split.values() if f.frames is not None]
    assert len(held) == 1 and len(spilled) == 1
    assert sum(map(len, held[0].held)) <= first + 1000
    expected = {name: Redactor(literals=(), pseudonymize=True).bytes(data)
                for name, data in logs.items()}
    for out in (tmp_path / "whole.tar.zst", tmp_path / "split.tar.zst"):
        reader = open_bundle(out)
        assert reader.verify() == []
        for name, data in expected.items():
            assert reader.read("run/" + name) == data
    assert GH_TOKEN.encode() not in subprocess.run(
        ["zstd", "-dc", str(tmp_path / "split.tar.zst")], check=True, capture_output=True
    ).stdout


def test_a_large_run_file_is_compressed_where_it_is_redacted(tmp_path: Path) -> None:
    """A run file past FRAMES_MIN is compressed by the redaction workers, piece by piece:
    the bundle is many zstd frames that tar, zstd and rage read as one stream, each member
    byte for byte what redacting the whole file in one go gives."""
    from rage.redact import Redactor
    from rage.redact.parallel import PARALLEL_MIN

    size = PARALLEL_MIN + 4 * MiB
    src = _log(size, {
        **{i * MiB + 77: f"token {GH_TOKEN} at {i}\n".encode() for i in range(1, 12)},
        5 * MiB - 400: b"password=" + b"Zx9Qw" * 40 + b"\n",
        9 * MiB + 4096: _key_block(b"KeyLine", 300 * KiB),
    })
    record("demo", ["demo"], 1, output=src, files={"app.log": b"short log\n"})
    out = tmp_path / "big.tar.zst"
    raw, manifest, reader = _report(out, "64MiB")
    assert _frames(out) >= 5  # the workers' frames between the writer's own
    for leak in (GH_TOKEN, "Zx9Qw", "KeyLine"):
        assert leak.encode() not in raw, leak
    assert manifest["redaction"]["counts"]["github-token"] == 11
    expected = Redactor(literals=(), pseudonymize=True).bytes(src)
    assert reader.read("run/output.log") == expected
    dest = tmp_path / "x"
    dest.mkdir()
    subprocess.run(["tar", "-I", "zstd", "-xf", str(out), "-C", str(dest)], check=True)
    assert (dest / "run" / "output.log").read_bytes() == expected
    assert (dest / "run" / "app.log").read_bytes() == b"short log\n"
    sums = subprocess.run(["sha256sum", *[e["name"] for e in manifest["files"]]], cwd=dest,
                          check=True, capture_output=True, text=True).stdout
    assert {ln.split()[1]: ln.split()[0] for ln in sums.splitlines()} == {
        e["name"]: e["sha256"] for e in manifest["files"]}
    # the summary's last lines and the preview come from the frames (no plain copy)
    last = expected.rstrip(b"\n").rsplit(b"\n", 1)[1].decode()
    assert last in reader.read("summary.md").decode()
    proc = run_rage("report", "--last", "--preview", "--json", "--no-collect")
    assert proc.returncode == 0, proc.stderr
    shown = {m["name"]: m for m in json.loads(proc.stdout)["members"]}["run/output.log"]
    assert shown["size"] == len(expected)
    assert shown["head"].encode() == expected[:len(shown["head"].encode())]
    assert expected.endswith(shown["tail"].encode())


def test_file_names_are_redacted_like_their_contents(tmp_path: Path) -> None:
    """A run file's name is a surface too: an attachment named after the user, or holding a
    token, reached the bundle as its member name, in the manifest's file list and in the
    summary's contents, while meta.json listed it redacted. Names now go through the same
    engine (the same pseudonyms as meta.json), in the tar listing, manifest and summary."""
    user = "zelda.quarrington"
    home = tmp_path / "home" / user
    work = home / "proj"
    work.mkdir(parents=True)
    token = "ghp_" + "Zq8Lr2Vx9Kp4Tn6Wm1Hc3Bd5Fg7Js0Ya2Ue4"
    name = f"{user}-{token}.log"
    env = dict(os.environ, HOME=str(home), USER=user, LOGNAME=user,
               RAGE_HOME=str(tmp_path / "rh"), RAGE_CONFIG=os.devnull)
    proc = run_rage("run", "--attach", "*.log", "--", sys.executable, "-c",
                    f"open({name!r}, 'w').write('made by the run\\n'); raise SystemExit(3)",
                    env=env, cwd=work)
    assert proc.returncode == 3, proc.stderr
    out = tmp_path / "b.tar.zst"
    proc = run_rage("report", "--last", "--yes", "--output", str(out), env=env, cwd=work)
    assert proc.returncode == 0, proc.stderr
    listing = subprocess.run(f"zstd -dc {out} | tar -t", shell=True, check=True,
                             capture_output=True, text=True).stdout
    raw = subprocess.run(["zstd", "-dc", str(out)], check=True, capture_output=True).stdout
    for leak in (user, token):
        assert leak not in listing, listing
        assert leak.encode() not in raw, leak
    attached = [n for n in listing.split() if n.startswith("run/attachments/")]
    assert len(attached) == 1 and "[REDACTED:github-token]" in attached[0]
    manifest = json.loads(subprocess.run(f"zstd -dc {out} | tar -xO manifest.json", shell=True,
                                         check=True, capture_output=True).stdout)
    assert ["run/" + a for a in manifest["run"]["attachments"]] == attached
    assert attached[0] in {f["name"] for f in manifest["files"]}


def test_two_file_names_that_redact_alike_stay_two_members(tmp_path: Path) -> None:
    tokens = ["ghp_" + c * 36 for c in "AB"]
    env = dict(os.environ, RAGE_HOME=str(tmp_path / "rh"), RAGE_CONFIG=os.devnull)
    script = "; ".join(f"open('key-{t}.log', 'w').write('{i}\\n')" for i, t in enumerate(tokens))
    proc = run_rage("run", "--attach", "*.log", "--", sys.executable, "-c",
                    script + "; raise SystemExit(1)", env=env, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    out = tmp_path / "b.tar.zst"
    assert run_rage("report", "--last", "--yes", "--output", str(out), env=env).returncode == 0
    listing = subprocess.run(f"zstd -dc {out} | tar -t", shell=True, check=True,
                             capture_output=True, text=True).stdout.split()
    attached = sorted(n for n in listing if n.startswith("run/attachments/"))
    assert attached == ["run/attachments/key-[REDACTED:github-token]-2.log",
                        "run/attachments/key-[REDACTED:github-token].log"]
    contents = {subprocess.run(f"zstd -dc {out} | tar -xO '{n}'", shell=True, check=True,
                               capture_output=True, text=True).stdout for n in attached}
    assert contents == {"0\n", "1\n"}


def test_what_is_too_big_to_learn_from_here_is_big_enough_for_the_workers() -> None:
    """The report sends a run file past LEARNED_MAX to the workers with no other test: it
    must be past their own threshold too."""
    from rage.defaults import LEARNED_MAX
    from rage.redact.parallel import PARALLEL_MIN

    assert LEARNED_MAX >= PARALLEL_MIN
