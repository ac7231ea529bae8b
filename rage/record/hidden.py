"""What a run's environment revealed as secret, kept without keeping the secrets.

A report removes a secret of the run's environment wherever the run's files repeat it
(:mod:`rage.redact.known`): ``echo $AWS_SECRET_ACCESS_KEY``, a log line quoting
``MYTOOL_API_KEY``. The recorder masks those values in ``environ.json``, so a report made
later from another shell, without those variables, could not know them. This module keeps
what that report needs in ``hidden.json`` (0600), never the values themselves:

- **While the run is recorded** (:func:`rage.record.context.start_hidden`): a random
  per-run salt and, for each secret-named value of at least 8 characters (as
  ``environ.json`` masks it), its length and a 24-bit keyed BLAKE2b digest of each form it
  can take in a file (as is; JSON-escaped, as ``log.jsonl`` writes it).
- **When the run ends** (:func:`rage.record.context.settle_hidden`, from ``finish_meta``):
  the recorder, which still holds the values, looks for them in the run's own files and
  replaces the digests with *where* each value it found stands: a file, an offset and a
  length, with its digest to check that the bytes there are still the value. Values the
  files never contain are dropped. The history then says nothing about a secret that its
  own files do not already hold in clear, and a report reads the value back from there
  (:func:`recovered`), at the cost of a few small reads.
- **A run that never ended** (its recorder was killed, the machine stopped) keeps the
  digests: the report then tests the files' tokens of each stored length against them
  (:func:`_scan`). 24 bits cannot confirm a guess of a value: about one string in 16
  million of the same length shares a digest, so a value of at least 8 characters keeps
  most of its uncertainty, while a report's tokens rarely collide (a collision redacts one
  innocent token as ``[REDACTED:literal]``).
"""

from __future__ import annotations

import os

from rage.record.context import FILE_MAX, HIDDEN_FILE, HIDDEN_SCHEMA, MAX_LEN, digest, run_files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

FILE = HIDDEN_FILE
SCHEMA = HIDDEN_SCHEMA


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
    files = dict(run_files(run_dir))
    out: list[bytes] = []
    if data["settled"]:
        from rage.fsutil import read_own

        for rel, at, n, d in data["found"]:
            p = files.get(rel)
            got = read_own(p, at + n) if p else None
            value = got[at:at + n] if got else b""
            if len(value) == n and digest(value, salt) == d:
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
                if digest(cand, salt) in want[n]:
                    found.append(cand)
    return found
