"""`curl --trace-ascii`: a record's data 64 bytes a line, each line after its offset.

A long token in a header, or a form body's parameters, run over several lines of the dump:
before, the first line's part of a Bearer token went and the rest stayed, and a parameter
cut by the width was not seen at all. The lines the width cut are joined before matching
(rage.redact.normalize.unwrap_traces), so the bundle holds one line per line of the data.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rage.redact.normalize import normalize, unwrap_traces
from tests.corpus.contexts import curl_trace_ascii
from tests.redact_helpers import member, record_script, served_script

JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9l"
       "IiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
SECRET = "Zq8s3cR3t-0123456789abcdefGHIJ"


def _trace(data: bytes) -> bytes:
    return curl_trace_ascii(data)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text("abcXYZ019 =&%-_.:/", min_size=0, max_size=150), min_size=1,
                max_size=6))
def test_the_lines_the_width_cut_are_joined(lines: list[str]) -> None:
    """Each line of the data comes back as one line after its first offset, whatever its
    length: 64 bytes exactly, 128, empty, or cut anywhere."""
    data = "\r\n".join(lines).encode() + b"\r\n"
    got = unwrap_traces(_trace(data)).split(b"\n")[1:-1]
    assert [g.split(b": ", 1)[1] for g in got] == [s.encode() for s in lines]


def test_a_trace_in_a_pty_recording_keeps_its_line_ends() -> None:
    text = _trace(b"Authorization: Bearer " + JWT.encode() + b"\r\nAccept: */*\r\n")
    crlf = text.replace(b"\n", b"\r\n")
    assert normalize(crlf) == unwrap_traces(text).replace(b"\n", b"\r\n")
    assert b"Bearer " + JWT.encode() + b"\r\n" in normalize(crlf)


def test_other_dumps_are_left_as_they_are() -> None:
    """xxd's lines have offsets too, but no curl record around them; a 64-byte line of a
    trace followed by the data's own line end is not joined to the next."""
    xxd = (b"00000000: 7f45 4c46 0201 0100 0000 0000 0000 0000  .ELF............\n"
           b"00000010: 0300 3e00 0100 0000 6011 0000 0000 0000  ..>.....`.......\n")
    assert normalize(xxd) == xxd
    exact = _trace(b"x" * 64 + b"\r\n" + b"y" * 10 + b"\r\n")
    assert unwrap_traces(exact) == exact


LOGIN = served_script(401, '''
    token, secret = open(sys.argv[1]).read().split()
    form = "client_id=app-7f3a9c&scope=read%20write&client_secret=" + secret + "&x=1"
    subprocess.run(["curl", "-s", "--trace-ascii", "-", "-o", "/dev/null",
                    "-H", "Authorization: Bearer " + token, "-d", form, url + "/token"],
                   check=True)
    sys.exit(2)
''')


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_a_real_curl_trace_in_a_recorded_run(tmp_path: Path) -> None:
    """A real curl --trace-ascii of a request with a long Bearer token and a form body whose
    client_secret the 64-byte width cuts, recorded with `rage run`: the dump the user saw is
    unchanged; the bundle holds no part of either secret."""
    proc, raw, out = record_script(tmp_path, LOGIN, f"{JWT} {SECRET}")
    assert proc.returncode == 2, proc.stderr
    assert JWT[:20] in proc.stdout and JWT[-20:] in proc.stdout  # as curl printed it
    assert "client_secret=" + SECRET not in proc.stdout  # the width cut it: 64 bytes a line
    for part in (JWT[:12], JWT[64:80], JWT[-12:], SECRET[:8], SECRET[-8:]):
        assert part.encode() not in raw, part
    stdout = member(out, "run/stdout.log")
    assert "Authorization: Bearer [REDACTED:" in stdout
    assert "client_id=app-7f3a9c&scope=read%20write&client_secret=[REDACTED:" in stdout


def test_a_stream_never_parts_a_record_where_the_width_cut_a_line() -> None:
    """A stream redacts a block of whole lines at a time: a cut between a line the width cut
    and the line that continues it (or away from its record's `=> Send` line, without which
    nothing is unwrapped) kept the secret's other part. Every cut gives the output of the
    whole text redacted at once (the workers cut as this does: the parent plans the cuts)."""
    from rage.redact import Redactor

    form = f"client_id=app-7f3a9c&scope=read%20write&client_secret={SECRET}&x=1"
    text = (b"2026-12-06 10:00:00 INFO starting the login\n" * 40
            + _trace(form.encode()) + b"2026-12-06 10:00:01 INFO done\n" * 40)
    whole = Redactor().bytes(text)
    assert SECRET[:8].encode() not in whole and SECRET[-8:].encode() not in whole
    ends = [i + 1 for i, c in enumerate(text) if c == 10]
    for cut in ends:
        out = b"".join(Redactor().stream([text[:cut], text[cut:]], block=cut, workers=0))
        assert out == whole, cut


def _real_curl_trace(form: str) -> bytes:
    """What real curl prints with --trace-ascii for a form POST to a local server."""
    import subprocess

    from tests.redact_helpers import http_server

    with http_server(401) as url:
        return subprocess.run(["curl", "-s", "--trace-ascii", "-", "-o", "/dev/null", "-d",
                               form, url + "/token"], check=True, capture_output=True).stdout


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.parametrize("total_mb", [2, 10], ids=["in-process", "workers"])
def test_a_real_trace_at_a_block_boundary(tmp_path: Path, total_mb: int) -> None:
    """A real curl trace recorded after a MiB of log lines, placed so that the report's
    first block (1 MiB) ends inside the line that continues a cut client_secret: the
    bundle holds neither part. Past 8 MiB the report redacts in worker processes."""
    import os

    from tests.conftest import run_rage
    from tests.redact_helpers import reported

    form = f"client_id=app-7f3a9c&scope=read%20write&client_secret={SECRET}&x=1"
    trace = _real_curl_trace(form)
    head = trace.index(b"client_secret=")
    cut_line_end = trace.index(b"\n", head) + 1  # the width cut the value on this line
    assert not trace[:cut_line_end].endswith(SECRET.encode() + b"&x=1\n"), "not cut here"
    line = b"2026-12-06 10:00:00.123 INFO sync.worker batch processed n=42 ok\n"
    fill = (1 << 20) - cut_line_end - 2  # the block ends 2 bytes into the next line
    filler = line * (fill // len(line))
    filler += b"x" * (fill - len(filler) - 1) + b"\n"
    tail = line * (((total_mb << 20) - len(filler) - len(trace)) // len(line))
    log = tmp_path / "app.log"
    log.write_bytes(filler + trace + tail)
    env = dict(os.environ, RAGE_HOME=str(tmp_path / "rh"), RAGE_CONFIG=os.devnull,
               RAGE_OUTPUT_CAP=str(64 << 20))
    proc = run_rage("run", "--", "cat", str(log), env=env)
    assert proc.returncode == 0 and SECRET[-8:] in proc.stdout, proc.stderr[-500:]
    assert len(proc.stdout) > (total_mb - 1) << 20
    raw = reported(None, tmp_path / "b.tar.zst", env)
    assert SECRET[:8].encode() not in raw and SECRET[-8:].encode() not in raw
    assert b"client_id=app-7f3a9c&scope=read%20write&client_secret=[REDACTED:" in raw
