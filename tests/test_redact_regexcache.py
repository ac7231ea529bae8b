"""The engine's compiled regular expressions kept on disk between processes
(rage.redact.regexcache)."""

from __future__ import annotations

import marshal
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

from rage.redact import regexcache

BENIGN = [line for line in (Path(__file__).parent / "corpus" / "benign.txt").read_text(
    ).splitlines() if line and not line.startswith("#")]

REDACT = """
import sys
import zlib
from rage.redact import Redactor, register_literal
from rage.redact import regexcache
if len(sys.argv) > 1:
    register_literal(sys.argv[1])
r = Redactor(home="/home/alice", user="alice", hostname="alice-laptop",
             patterns=[r"zq-custom-[0-9]{6}"])
r.build()
built = (len(regexcache._used), regexcache.parsed)  # what a process pays before its work
print(r.text("token=abcdef123456 ghp_" + "a" * 36 + " /home/alice/x zq-custom-123456"
             + (" " + sys.argv[1] if len(sys.argv) > 1 else "")))
print(*built, file=sys.stderr)
"""

WANT = ("token=[REDACTED:secret-field] [REDACTED:github-token] ~/x [REDACTED:custom]")


def _redact(*args: str) -> tuple[str, int, bool]:
    """The redacted text, how many patterns the imports and the build used, and whether
    any of them was compiled from its text (not loaded)."""
    proc = subprocess.run([sys.executable, "-c", REDACT, *args], capture_output=True,
                          text=True, check=True, env=os.environ.copy())
    used, parsed = proc.stderr.split()
    return proc.stdout.strip(), int(used), int(parsed) > 0


def _stored() -> list[Path]:
    return sorted((Path(os.environ["RAGE_HOME"]) / ".cache").glob("regex-*.bin"))


def _entries(path: Path) -> dict[tuple[str | bytes, int], tuple[object, ...]]:
    fmt, digest, body = marshal.loads(path.read_bytes())
    assert fmt == 4 and zlib.crc32(body) == digest
    table: dict[tuple[str | bytes, int], tuple[object, ...]] = marshal.loads(body)[0]
    return table


def test_a_second_process_compiles_nothing_and_redacts_the_same() -> None:
    out, used, dirty = _redact()
    assert out == WANT and dirty and used > 100
    [path] = _stored()
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    facts = marshal.loads(marshal.loads(path.read_bytes())[2])[1]
    assert sum(name == "_at_start" for name, _, _ in facts) > 100, "the catalogue's formats"
    before = (path.stat().st_mtime_ns, path.read_bytes())
    out, used_again, dirty = _redact()
    assert out == WANT and used_again == used
    assert not dirty, "every pattern of the imports and the build came from the file"
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before, "loaded, not written again"


def test_what_comes_from_the_file_is_what_python_compiles() -> None:
    """Every stored pattern, made from its stored code, equals ``re.compile``'s: the same
    flags and groups, and the same matches over the benign corpus and secrets."""
    _redact()
    [path] = _stored()
    table = _entries(path)
    import _sre  # type: ignore[import-not-found]

    texts = [*BENIGN, "token=abcdef123456 ghp_" + "a" * 36, "password: hunter2hunter2",
             "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
             "/home/alice/x alice@alice-laptop"]
    for (pattern, flags), entry in table.items():
        ours, python = _sre.compile(pattern, *entry), re.compile(pattern, flags)
        assert (ours.pattern, ours.flags, ours.groups, dict(ours.groupindex)) == (
            python.pattern, python.flags, python.groups, dict(python.groupindex))
        for text in texts:
            t: str | bytes = text if isinstance(pattern, str) else text.encode()
            assert [m.span() for m in ours.finditer(t)] == [
                m.span() for m in python.finditer(t)]  # type: ignore[arg-type]


def test_a_damaged_or_planted_file_is_not_loaded_and_is_replaced() -> None:
    _redact()
    [path] = _stored()
    good = path.read_bytes()
    path.write_bytes(good[:-200] + bytes(200))  # damaged: its checksum no longer holds
    out, _, dirty = _redact()
    assert out == WANT and dirty
    assert path.read_bytes() == good
    target = path.parent / "elsewhere"
    target.write_bytes(good)
    path.unlink()
    path.symlink_to(target)  # planted: never read through, replaced by a file of ours
    out, _, dirty = _redact()
    assert out == WANT and dirty
    assert not path.is_symlink() and path.read_bytes() == good and target.read_bytes() == good
    path.chmod(0o666)  # writable by others: not loaded, and replaced (0600)
    out, _, dirty = _redact()
    assert out == WANT and dirty and path.stat().st_mode & 0o777 == 0o600


def test_code_the_regex_engine_refuses_is_compiled_anew() -> None:
    """A file whose checksum holds but whose code is not valid for the regex engine (another
    build wrote it under this name, or it was written so): each refused pattern is compiled
    as Python compiles it, and the file is saved right."""
    _redact()
    [path] = _stored()
    table = _entries(path)
    facts = marshal.loads(marshal.loads(path.read_bytes())[2])[1]
    bad = {key: (entry[0], [1, 2, 3], *entry[2:]) for key, entry in table.items()}
    body = marshal.dumps((bad, facts))
    path.write_bytes(marshal.dumps((4, zlib.crc32(body), body)))
    out, _, dirty = _redact()
    assert out == WANT and dirty
    assert _entries(path) == table


def test_literals_and_custom_patterns_never_reach_the_disk() -> None:
    secret = "zq-literal-8f3a1c9e77d2"
    out, _, _ = _redact(secret)
    assert out == WANT + " [REDACTED:literal]"
    [path] = _stored()
    data = path.read_bytes()
    assert secret.encode() not in data
    assert b"zq-custom" not in data, "a user's pattern is compiled by re, not stored"


def test_within_a_process_a_pattern_is_compiled_once() -> None:
    a = regexcache.compiled(rb"zq-(?P<x>[0-9]+)-once")
    assert regexcache.compiled(rb"zq-(?P<x>[0-9]+)-once") is a
    assert a.match(b"zq-42-once") is not None and a.groupindex["x"] == 1


FACTS = """
from rage.redact import Redactor, regexcache
from rage.redact.catalogue import SKIPPED, compiled_catalogue
Redactor(home="/home/alice", user="alice", hostname="alice-laptop").build()
starts = [c.at_start for c in compiled_catalogue()]
kinds = {k[0] for k in regexcache._facts_used}
print(regexcache.parsed, "_at_start" in kinds, sum(starts), len(starts), len(SKIPPED))
"""


def test_a_catalogue_formats_start_is_a_fact_kept_on_disk() -> None:
    """Whether each catalogue format's matches start at its prefixes (~7M instructions to
    work out at every report's start) comes from the file in a second process, the same."""
    def facts() -> list[str]:
        return subprocess.run([sys.executable, "-c", FACTS], capture_output=True, text=True,
                              check=True, env=os.environ.copy()).stdout.split()

    first = facts()
    assert int(first[0]) > 0 and first[1] == "True"
    second = facts()
    assert second == ["0", *first[1:]] and 0 < int(second[2]) < int(second[3])
