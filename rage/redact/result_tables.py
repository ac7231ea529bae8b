"""Query results as database clients print them: the cells of a secret column.

- pipe tables: psql's aligned output (a header, then ``----+----``), mysql's boxes
  (``+----+``, ``| id | api_key |``), Markdown tables (``|---|---|``);
- psql's expanded records (``\\x``): ``-[ RECORD 1 ]--`` then ``api_key | X`` lines;
- pg_dump's ``COPY t (id, api_key) FROM stdin;`` and its tab-separated rows up to ``\\.``;
- Vault's tables of name and value (``vault kv get``, ``vault read database/creds/x``):
  ``Key    Value`` over ``---    -----``, then a ``name    value`` line a field, to a blank
  line.

A column is secret by its header's name (:func:`rage.sensitive.looks_secret_name`); what
is evidence in it (a number under no password's name, NULL, an empty cell) stays. A row
whose cells do not match the header's is left alone, and ends the table.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rage.redact.regexcache import compiled
from rage.redact.values import kept
from rage.sensitive import looks_secret_name

Count = Callable[[str], None]
REDACTED = b"[REDACTED:secret-field]"
_MAX_ROWS = 100_000

# the rule lines' literals: psql's `----+----`, mysql's borders `+----+----+`, Markdown's
# `|----|----|` or `| --- | :-- |`
RULES = (b"-+-", b"+--", b"|--", b"| --", b"|:-")
RECORD = b"-[ RECORD "  # psql's expanded display
COPY = b") FROM stdin;"
KEY_VALUE = b"Key    "  # Vault's header: `Key`, padded to the widest name and four blanks

_RULE = compiled(rb"[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:[+|][ \t]*:?-{2,}:?[ \t]*)+\|?[ \t]*\r?"
                 rb"|[ \t]*\+-{2,}(?:\+-{2,})*\+[ \t]*\r?")
_EXPANDED = compiled(rb"([ \t]*)([^|\r\n]*?)[ \t]*\|[ \t]?(.*?)(\r?)")
_KV_HEAD = compiled(rb"[ \t]*Key[ \t]{4,}Value[ \t]*\r?")
_KV_RULE = compiled(rb"[ \t]*---[ \t]{4,}-----[ \t]*\r?")
_KV_ROW = compiled(rb"[ \t]*(\S+)[ \t]{2,}(\S(?:.*\S)?)[ \t]*\r?")
_COPY = compiled(rb"COPY [^\s(]{1,256} \(([^()\r\n]{1,4096})\) FROM stdin;\r?")


def _cells(line: bytes) -> list[tuple[int, int]] | None:
    """The spans of a table line's cells, trimmed (without the outer ``|`` of a box or a
    Markdown row)."""
    body = line.rstrip(b"\r")
    a, b = 0, len(body)
    lead = body[:b - len(body.lstrip())]
    if body.lstrip().startswith(b"|"):
        a = len(lead) + 1
        stripped = body.rstrip()
        if stripped.endswith(b"|"):
            b = len(stripped) - 1
    if b"|" not in body[a:b] and a == 0:
        return None
    spans = []
    pos = a
    for part in body[a:b].split(b"|"):
        s, e = pos, pos + len(part)
        while s < e and body[s] in b" \t":
            s += 1
        while e > s and body[e - 1] in b" \t":
            e -= 1
        spans.append((s, e))
        pos += len(part) + 1
    return spans


def _hide(lines: list[bytes], j: int, spans: list[tuple[int, int]], names: list[str],
          secret: list[bool], *, count: Count) -> bool:
    """Row ``lines[j]`` with the cells of its secret columns redacted; True if any was."""
    line = lines[j]
    for k in reversed(range(len(spans))):
        a, b = spans[k]
        value = line[a:b]
        if not secret[k] or value in (b"NULL", b"\\N") or kept(value, names[k]):
            continue
        line = line[:a] + REDACTED + line[b:]
        count("secret-field")
    changed = line != lines[j]
    lines[j] = line
    return changed


def _hide_named(lines: list[bytes], j: int, m: re.Match[bytes], name: int, value: int, *,
                count: Count) -> bool:
    """A ``name  value`` row (psql's records, Vault's tables) matched as ``m``: its value
    group redacted in ``lines[j]`` if the name group is secret; True if it was."""
    key = m[name].decode("utf-8", "replace").strip()
    if not looks_secret_name(key) or kept(m[value], key):
        return False
    lines[j] = lines[j][:m.start(value)] + REDACTED + lines[j][m.end(value):]
    count("secret-field")
    return True


def pipe_tables(lines: list[bytes], at: list[int], count: Count) -> bool:
    """A table whose rule line is one of ``at``: the cells of its secret columns."""
    hit = False
    done: set[int] = set()
    for i in dict.fromkeys(at):
        if i in done or _RULE.fullmatch(lines[i]) is None:
            continue
        box = lines[i].lstrip().startswith(b"+")
        head = i - 1
        if head < 0 or _RULE.fullmatch(lines[head]) is not None:
            continue
        header = _cells(lines[head])
        if header is None or len(header) < 2:
            continue
        names = [lines[head][a:b].decode("utf-8", "replace") for a, b in header]
        secret = [looks_secret_name(n) for n in names]
        done.add(i)
        if not any(secret):
            continue
        piped = lines[head].lstrip().startswith(b"|")  # rows are written as the header is
        j = i + 1
        while j < len(lines) and j - i <= _MAX_ROWS:
            if _RULE.fullmatch(lines[j]) is not None:
                done.add(j)
                if not box:
                    break
                j += 1
                continue
            spans = _cells(lines[j])
            if spans is None or len(spans) != len(header) or (
                    lines[j].lstrip().startswith(b"|") != piped):
                break
            hit |= _hide(lines, j, spans, names, secret, count=count)
            j += 1
    return hit


def expanded_records(lines: list[bytes], at: list[int], count: Count) -> bool:
    """psql's ``\\x`` display: after each ``-[ RECORD n ]-`` line, a ``name | value`` line a
    column."""
    hit = False
    for i in dict.fromkeys(at):
        j = i + 1
        while j < len(lines) and not lines[j].lstrip().startswith(RECORD):
            m = _EXPANDED.fullmatch(lines[j])
            if m is None or not m[2]:
                break
            hit = _hide_named(lines, j, m, 2, 3, count=count) or hit
            j += 1
    return hit


def key_value_tables(lines: list[bytes], at: list[int], count: Count) -> bool:
    """Vault's output: under ``Key    Value`` and ``---    -----``, each row's value whose
    name is secret (``password``, ``secret_key``, ``passcode``); the table ends at a line
    that is not a row."""
    hit = False
    for i in dict.fromkeys(at):
        if i + 1 >= len(lines) or _KV_HEAD.fullmatch(lines[i]) is None or (
                _KV_RULE.fullmatch(lines[i + 1]) is None):
            continue
        for j in range(i + 2, min(len(lines), i + 2 + _MAX_ROWS)):
            m = _KV_ROW.fullmatch(lines[j])
            if m is None:
                break
            hit = _hide_named(lines, j, m, 1, 2, count=count) or hit
    return hit


def copy_blocks(lines: list[bytes], at: list[int], count: Count) -> bool:
    """pg_dump's ``COPY t (cols) FROM stdin;``: the tab-separated rows up to ``\\.``."""
    hit = False
    for i in dict.fromkeys(at):
        m = _COPY.fullmatch(lines[i])
        if m is None:
            continue
        names = [c.strip(b" \t\"").decode("utf-8", "replace") for c in m[1].split(b",")]
        secret = [looks_secret_name(n) for n in names]
        if not any(secret):
            continue
        j = i + 1
        while j < len(lines) and j - i <= _MAX_ROWS and lines[j].rstrip(b"\r") != b"\\.":
            cells = lines[j].rstrip(b"\r").split(b"\t")
            if len(cells) != len(names):
                break
            spans, pos = [], 0
            for c in cells:
                spans.append((pos, pos + len(c)))
                pos += len(c) + 1
            hit |= _hide(lines, j, spans, names, secret, count=count)
            j += 1
    return hit


# tables of columns under a rule of dashes, two blanks apart (az's `-o table`, many CLIs):
# `KeyName    Permissions    Value` / `---------  -------------  -----`
DASHED = b"-  --"
_DASHES = compiled(rb"[ \t]*-{3,}(?:[ \t]{2,}-{3,})+[ \t]*\r?")
_DASH_RUN = compiled(rb"-{3,}")


def dashed_tables(lines: list[bytes], at: list[int], count: Count) -> bool:
    """Under a header and its rule of dashes, the cells of a column whose header names a
    secret strongly (`PrimaryMasterKey`, `Password`; not `Key`, `Session`), and the `Value`
    column beside a `KeyName` one (`az storage account keys list -o table`); to the first
    row that does not fill the columns."""
    from rage.redact.nearby import secret_word

    hit = False
    for i in at:
        if not i or _DASHES.fullmatch(lines[i]) is None:
            continue
        rule = lines[i]
        cols = [(m.start(), m.end()) for m in _DASH_RUN.finditer(rule)]
        head = lines[i - 1]
        names = [head[s:e if k + 1 < len(cols) else len(head)].strip() for k, (s, e) in
                 enumerate(cols)]
        if not all(names) or any(head[s - 1:s].strip() for s, _e in cols if s):
            continue  # not a header aligned on the rule
        secret = {k for k, n in enumerate(names) if secret_word(n) or (
            n == b"Value" and b"KeyName" in names)}
        if not secret:
            continue
        j = i + 1
        while j < len(lines) and len(lines[j]) <= 65536:
            row = lines[j]
            spans = _row_cells(row, cols)
            if spans is None:
                break
            for k in sorted(secret, reverse=True):
                s, e = spans[k]
                if not kept(row[s:e], names[k].decode("ascii", "replace")):
                    count("secret-field")
                    row = row[:s] + REDACTED + row[e:]
                    hit = True
            lines[j] = row
            j += 1
    return hit


def _row_cells(row: bytes, cols: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """The cells of ``row`` at the rule's columns: each a word starting where its column
    does (the last to the line's end), or None when the row does not fill them so."""
    body = row.rstrip(b"\r\n \t")
    out: list[tuple[int, int]] = []
    for k, (s, _e) in enumerate(cols):
        if len(body) <= s or body[s:s + 1].isspace() or (s and not body[s - 1:s].isspace()):
            return None
        end = len(body) if k + 1 == len(cols) else body.find(b" ", s)
        out.append((s, len(body) if end < 0 else end))
    return out
