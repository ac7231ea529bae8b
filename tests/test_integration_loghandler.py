"""RunLogHandler on its own: real files, exact JSON lines, the cap, write failures."""

from __future__ import annotations

import json
import logging
import stat
import sys
from pathlib import Path

from rage.integration.loghandler import RunLogHandler


def make_record(msg: str, *args: object, level: int = logging.INFO,
                exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise OSError("disk on fire")
        except OSError:
            exc_info = sys.exc_info()
    return logging.LogRecord("pkg.mod", level, __file__, 1, msg, args, exc_info)


def test_lines_are_exact_json(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    h = RunLogHandler(path, 1 << 20, scrub=lambda s: s.replace("hunter2", "[SECRET]"))
    tricky = 'quote " backslash \\ newline \n tab \t unicode é ☃ nul \x00 lone \udcff'
    h.handle(make_record("%s|%d", tricky, 7))
    h.handle(make_record("password hunter2", level=logging.ERROR, exc=True))
    h.handle(make_record("bad format %d", "not a number"))
    t = h.finish()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = path.read_bytes().splitlines()
    recs = [json.loads(line) for line in lines]
    assert recs[0]["msg"] == tricky + "|7"  # even the lone surrogate round-trips
    assert recs[0]["level"] == "INFO" and recs[0]["logger"] == "pkg.mod"
    assert recs[1]["msg"] == "password [SECRET]" and "OSError: disk on fire" in recs[1]["exc"]
    assert "formatting failed" in recs[2]["msg"]
    assert t.total_bytes == path.stat().st_size and t.dropped_bytes == 0


def test_error_records_are_flushed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    h = RunLogHandler(path, 1 << 20)
    h.handle(make_record("buffered", level=logging.DEBUG))
    assert path.read_bytes() == b""  # batched: nothing written yet
    h.handle(make_record("failure", level=logging.ERROR))
    assert [json.loads(x)["msg"] for x in path.read_bytes().splitlines()] == [
        "buffered", "failure"]
    h.close()


def test_cap_keeps_whole_records(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    h = RunLogHandler(path, 4000)
    for i in range(500):
        h.handle(make_record("record %03d", i))
    t = h.finish()
    recs = [json.loads(x) for x in path.read_bytes().splitlines()]
    assert recs[0]["msg"] == "record 000" and recs[-1]["msg"] == "record 499"
    assert [r["level"] for r in recs].count("RAGE") == 1
    assert path.stat().st_size <= 4000 + 200
    assert t.dropped_bytes > 0 and t.total_bytes > 20000


def test_write_failure_reports_once_and_then_drops(tmp_path: Path) -> None:
    errors: list[OSError] = []
    h = RunLogHandler(Path("/dev/full"), 1 << 20, on_error=errors.append)
    for _ in range(3):
        h.handle(make_record("x", level=logging.ERROR))
    h.close()
    assert len(errors) == 1 and errors[0].errno is not None
