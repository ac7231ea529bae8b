"""What a run's environment revealed as secret, kept without keeping the secrets.

A report removes a secret of the run's environment wherever the run's files repeat it
(:mod:`rage.redact.known`): ``echo $AWS_SECRET_ACCESS_KEY``, a log line quoting
``MYTOOL_API_KEY``. The recorder masks those values in ``environ.json``, so a report made
later from another shell, without those variables, could not know them. This module keeps
what that report needs in ``hidden.json`` (0600), never the values themselves:

- **While the run is recorded** (:func:`start`): a random per-run salt and, for each
  secret-named value of at least :data:`MIN_LEN` characters (as ``environ.json`` masks it),
  its length and a 24-bit keyed BLAKE2b digest of each form it can take in a file (as is;
  JSON-escaped, as ``log.jsonl`` writes it).
- **When the run ends** (:func:`settle`, from ``finish_meta``): the recorder, which still
  holds the values, looks for them in the run's own files and replaces the digests with
  *where* each value it found stands: a file, an offset and a length, with its digest to
  check that the bytes there are still the value. Values the files never contain are
  dropped. The history then says nothing about a secret that its own files do not already
  hold in clear, and a report reads the value back from there (:func:`recovered`), at the
  cost of a few small reads.
- **A run that never ended** (its recorder was killed, the machine stopped) keeps the
  digests: the report then tests the files' tokens of each stored length against them
  (:func:`_scan`). 24 bits cannot confirm a guess of a value: about one string in 16
  million of the same length shares a digest, so a value of at least 8 characters keeps
  most of its uncertainty, while a report's tokens rarely collide (a collision redacts one
  innocent token as ``[REDACTED:literal]``).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # every recorded command imports this module: no typing, json or re
    from collections.abc import Iterable
    from typing import Any

FILE = "hidden.json"
SCHEMA = 1
MIN_LEN = 8  # as rage.redact.known.MIN_LEN: shorter values are never learned
DIGEST_BYTES = 3
MAX_VALUES = 64  # an environment with more secret values keeps the longest (learned first)
MAX_LEN = 4096  # a longer value is a document (a key file's text), found by its rules
FILE_MAX = 64 * 1024 * 1024  # a larger run file is not searched at the end: the digests stay
_OWN = frozenset({"meta.json", "environ.json", FILE, "lock", "joined.json"})


def hidden_values(masked: Iterable[str]) -> list[str]:
    """Of the values ``environ.json`` masks (:func:`rage.sensitive.masked_environ`), those a
    report could learn: at least :data:`MIN_LEN` characters, longest first."""
    out = {v for v in masked if MIN_LEN <= len(v.strip()) <= MAX_LEN}
    return sorted(out, key=lambda v: (-len(v), v))[:MAX_VALUES]


def forms(value: str) -> list[bytes]:
    """The bytes ``value`` can be in a run's files: as the program wrote it, and escaped as
    a JSON string, other than ASCII as it is (``log.jsonl``: json's encode_basestring) or
    as ``\\uXXXX`` (``json.dumps``'s default: a tool's JSON output)."""
    from rage.fsutil import _str as ascii_json

    out = [value.encode("utf-8", "surrogateescape")]
    try:
        kept = "".join(ascii_json(c)[1:-1] if c in '"\\' or c < " " else c for c in value)
        out += [kept.encode(), ascii_json(value)[1:-1].encode()]
    except UnicodeEncodeError:  # a lone surrogate (an undecodable byte): not JSON text
        pass
    return list(dict.fromkeys(out))


def _digest(form: bytes, salt: bytes) -> str:
    from _blake2 import blake2b  # hashlib would load OpenSSL first: ~2 ms of start-up

    return blake2b(form, key=salt, digest_size=DIGEST_BYTES).hexdigest()


class Hidden:
    """The hidden values of a run being recorded, in this process only."""

    def __init__(self, values: list[str], salt: bytes) -> None:
        self.values = values
        self.salt = salt


def start(path: str, masked: Iterable[str]) -> Hidden | None:
    """Write the digests of the ``masked`` values (those ``environ.json`` hides) that a
    report could learn to ``path`` (the run's :data:`FILE`); None, and nothing written,
    when there is none."""
    values = hidden_values(masked)
    if not values:
        return None
    from rage.fsutil import FILE_MODE

    salt = os.urandom(16)
    digests = sorted({(len(f), _digest(f, salt)) for v in values for f in forms(v)})
    text = (f'{{"schema": {SCHEMA}, "salt": "{salt.hex()}", "settled": false, "digests": ['
            + ", ".join(f'[{n}, "{d}"]' for n, d in digests) + "]}\n")
    # a new file of a new run (still hidden, see rage.record.store.open_run): created, not
    # renamed into place, at the start of every recorded command
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 FILE_MODE)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    return Hidden(values, salt)


def _run_files(run_dir: str) -> list[tuple[str, str]]:
    """(relative name, path) of the run's regular files a report includes."""
    out = []
    for dirpath, _dirs, names in os.walk(run_dir):
        for n in names:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, run_dir)
            if rel in _OWN or n.startswith(".") or os.path.islink(p) or not os.path.isfile(p):
                continue
            out.append((rel.replace(os.sep, "/"), p))
    return sorted(out)


def settle(run_dir: str, hidden: Hidden | None) -> None:
    """At the run's end: replace the digests in ``run_dir``'s :data:`FILE` by where the
    run's files hold each hidden value (the first place: a report then removes it
    everywhere), or remove the file when they hold none. A file too large to search
    leaves the digests as they are (the report tests its tokens)."""
    if hidden is None:
        return
    from rage.fsutil import read_own, write_json_atomic

    path = os.path.join(run_dir, FILE)
    found: dict[bytes, list[Any]] = {}
    wanted = [f for v in hidden.values for f in forms(v)]
    for rel, p in _run_files(run_dir):
        try:
            if os.path.getsize(p) > FILE_MAX:
                return
        except OSError:
            continue
        data = read_own(p, FILE_MAX)
        if not data:
            continue
        for f in wanted:
            if f not in found:
                at = data.find(f)
                if at >= 0:
                    found[f] = [rel, at, len(f), _digest(f, hidden.salt)]
    if not found:
        import contextlib

        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    write_json_atomic(path, {"schema": SCHEMA, "salt": hidden.salt.hex(), "settled": True,
                             "found": sorted(found.values())})


def read(run_dir: str) -> dict[str, Any] | None:
    """The run's :data:`FILE`, checked; None when there is none. ValueError with the reason
    for one rage would not have written."""
    import json

    from rage.fsutil import read_own

    path = os.path.join(run_dir, FILE)
    raw = read_own(path, 1024 * 1024)
    if raw is None:
        if not os.path.lexists(path):
            return None
        raise ValueError("not a regular file of yours")
    try:
        data = json.loads(raw)
        salt = bytes.fromhex(data["salt"])
        if data.get("schema") != SCHEMA or len(salt) != 16:
            raise ValueError("another schema")
        if data.get("settled"):
            for rel, at, n, d in data["found"]:
                if not (isinstance(rel, str) and isinstance(at, int) and isinstance(n, int)
                        and isinstance(d, str) and at >= 0 and 0 < n <= 8 * MAX_LEN):
                    raise ValueError("a bad place")
        else:
            for n, d in data["digests"]:
                if not (isinstance(n, int) and isinstance(d, str) and 0 < n <= 8 * MAX_LEN):
                    raise ValueError("a bad digest")
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"damaged ({e})") from None
    return dict(data)


def recovered(run_dir: str) -> list[str]:
    """The hidden values of the run in ``run_dir`` that its files hold, read back from
    them (the places :func:`settle` kept, each checked against its digest) or, for a run
    that never ended, found among their tokens by digest (:func:`_scan`). ValueError for
    a damaged :data:`FILE`."""
    data = read(run_dir)
    if data is None:
        return []
    salt = bytes.fromhex(data["salt"])
    files = dict(_run_files(run_dir))
    out: list[bytes] = []
    if data["settled"]:
        from rage.fsutil import read_own

        for rel, at, n, d in data["found"]:
            p = files.get(rel)
            got = read_own(p, at + n) if p else None
            value = got[at:at + n] if got else b""
            if len(value) == n and _digest(value, salt) == d:
                out.append(value)
    else:
        want: dict[int, set[str]] = {}
        for n, d in data["digests"]:
            want.setdefault(n, set()).add(d)
        out = _scan(files.values(), want, salt)
    return [v.decode("utf-8", "surrogateescape") for v in dict.fromkeys(out)]


# Where a token of a run's output starts and ends: blanks and quotes, and the separators
# of assignments, lists, URLs and paths (`KEY=X`, `user:X@host`, `(X)`, `X,`, `X.`). A
# value may hold them too (`n3cl0;RO4h=;tz0RE%`, an AWS key's `/`): a candidate may start
# after any of them and end before any of them, not only at a token's ends.
_EDGE = rb"\s\"'`=:,;()\[\]{}<>|/@.\\"
_TOKEN_CHARS = rb"[^\s\"'`]"


def _scan(paths: Iterable[str], want: dict[int, set[str]], salt: bytes) -> list[bytes]:
    """The strings of ``paths``' contents, of a length in ``want``, between two token edges,
    whose digest is one of that length's. The slow path: it tests every such string (about
    0.1-0.2 s a length for 8 MiB), taken only for a run that never ended."""
    import re

    from rage.fsutil import read_own

    finders = {n: re.compile(rb"(?:^|(?<=[%s]))(?=(%s{%d})(?:[%s]|\Z))"
                             % (_EDGE, _TOKEN_CHARS, n, _EDGE)) for n in want}
    found: list[bytes] = []
    for p in paths:
        data = read_own(p, FILE_MAX)
        if not data:
            continue
        for n, rx in finders.items():
            for cand in set(rx.findall(data)):
                if _digest(cand, salt) in want[n]:
                    found.append(cand)
    return found
