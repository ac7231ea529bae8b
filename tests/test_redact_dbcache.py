"""The Hyperscan database kept on disk between processes (rage.redact.dbcache)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rage.redact.native import available

pytestmark = pytest.mark.skipif(not available(), reason="hyperscan (the fast extra) is absent")

REDACT = """
import sys, time
from rage.redact import Redactor, register_literal
if len(sys.argv) > 1:
    register_literal(sys.argv[1])
t0 = time.perf_counter()
r = Redactor(home="/home/alice", user="alice", hostname="alice-laptop")
r.build()
built = time.perf_counter() - t0
assert r._scan.native is not None, "the native scan is in use"
print(r.text("token=abcdef123456 ghp_" + "a" * 36 + " /home/alice/x"))
print(built, file=sys.stderr)
"""


def _redact(*args: str) -> tuple[str, str]:
    proc = subprocess.run([sys.executable, "-c", REDACT, *args], capture_output=True,
                          text=True, check=True, env=os.environ.copy())
    return proc.stdout.strip(), proc.stderr.strip()


def _stored() -> list[Path]:
    return sorted((Path(os.environ["RAGE_HOME"]) / ".cache").glob("hyperscan-*.db"))


WANT = "token=[REDACTED:secret-field] [REDACTED:github-token] ~/x"


def test_a_second_process_loads_the_database_the_first_stored() -> None:
    out, _ = _redact()
    assert out == WANT
    [db] = _stored()
    assert db.stat().st_mode & 0o777 == 0o600 and db.parent.stat().st_mode & 0o777 == 0o700
    before = (db.stat().st_mtime_ns, db.read_bytes())
    out, err = _redact()
    assert out == WANT and "warning" not in err
    assert (db.stat().st_mtime_ns, db.read_bytes()) == before, "loaded, not written again"


def test_a_damaged_or_planted_database_is_compiled_again_and_replaced() -> None:
    _redact()
    [db] = _stored()
    good = db.read_bytes()
    db.write_bytes(b"\x00" * 64 + good[64:])  # damaged: Hyperscan's checksum refuses it
    out, err = _redact()
    assert out == WANT and "warning" not in err
    assert db.read_bytes() == good
    target = db.parent / "elsewhere"
    target.write_bytes(good)
    db.unlink()
    db.symlink_to(target)  # planted: never read through, replaced by a file of ours
    out, err = _redact()
    assert out == WANT and "warning" not in err
    assert not db.is_symlink() and db.read_bytes() == good and target.read_bytes() == good
    db.chmod(0o666)  # writable by others: not loaded (and replaced, 0600)
    _redact()
    assert db.stat().st_mode & 0o777 == 0o600


def test_registered_literals_never_reach_the_disk() -> None:
    """Literals are found apart from the stored database: with one, the same database is
    stored as without, and it holds no trace of it."""
    secret = "zq-literal-8f3a1c9e77d2"
    out, _ = _redact(secret)
    assert out == WANT
    [db] = _stored()
    assert secret.encode() not in db.read_bytes()
    with_literal = db.read_bytes()
    db.unlink()
    _redact()
    assert [p.read_bytes() for p in _stored()] == [with_literal]


def test_at_most_eight_databases_are_kept() -> None:
    from rage.redact import dbcache

    _redact()
    [db] = _stored()
    for i in range(12):
        (db.parent / f"hyperscan-old{i:02d}.db").write_bytes(b"x")
        os.utime(db.parent / f"hyperscan-old{i:02d}.db", ns=(i, i))
    db.unlink()
    _redact()
    kept = _stored()
    assert len(kept) == dbcache.KEEP and db in kept


STREAM = """
import sys
from rage.redact import Redactor, register_literal
register_literal(sys.argv[1])
r = Redactor(home="/home/alice", user="alice", hostname="alice-laptop")
line = b"INFO request finished for the user in 12 ms " + sys.argv[1].encode() + b"\\n"
out = b"".join(r.stream([line * 20000], workers=1))
assert sys.argv[1].encode() not in out and b"[REDACTED:literal]" in out, out[:200]
print(len(out))
"""


def test_the_engines_own_finders_are_stored_and_loaded_again_but_not_a_literals() -> None:
    """A stream's block holds back a multi-line value: the finder of its openers (20-28 ms
    to compile) is stored like the main database and loaded by the next process; the
    finder of a registered literal is not stored."""
    secret = "zq-literal-5b7e0d2c91aa"

    def stream() -> None:
        subprocess.run([sys.executable, "-c", STREAM, secret], check=True,
                       capture_output=True, env=os.environ.copy())

    stream()
    stored = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in _stored()}
    assert len(stored) >= 2, "the main database and the openers' finder"
    assert all(secret.encode() not in data for _, data in stored.values())
    stream()
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in _stored()} == stored, (
        "loaded, not compiled and written again")
