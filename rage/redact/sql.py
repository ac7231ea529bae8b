"""SQL as databases and ORMs log it: the values that belong to a secret column.

- rows written out: ``INSERT INTO t (email, password) VALUES ('a@b.c', 'x'), (...)``;
- a prepared statement's parameters, printed apart from it: SQLAlchemy's echo
  (``[generated in 0.0002s] ('bob', 'x')``, ``[cached since 3s ago] {...}``), its errors'
  ``[SQL: ...]`` / ``[parameters: (...)]``, PostgreSQL's ``DETAIL:  parameters: $1 = 'bob',
  $2 = 'x'``, Django's ``...; args=(...)``. A parameter is a secret's when the statement binds
  its placeholder to a secret column: ``INSERT INTO t (name, password) VALUES (?, ?)``, ``SET
  password = ?``, ``WHERE api_token = %(tok)s``, ``SET password = crypt($2, ...)``. It is
  found by position (``?``, ``%s``), number (``$2``) or name (``%(tok)s``, ``:tok``).

The statement is looked for in the lines before its parameters (at most :data:`_REACH`, and
not past another statement's parameters), from its verb. When the placeholders cannot be
matched to the parameters (a statement logged with its values already in it, as Django's
is), every string parameter of a statement that names a secret column goes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from rage.redact.regexcache import compiled
from rage.redact.reprs import CLOSE, STRING, Box, parse
from rage.redact.values import kept
from rage.sensitive import looks_secret_name

Count = Callable[[str], None]
REDACTED = b"[REDACTED:secret-field]"
_REACH = 40  # lines a statement may span before its parameters

# a parameter list's opener, and what it follows
PARAMETER_NEEDLES = (b"[generated in ", b"[cached since ", b"[no key ", b"[raw sql]",
                     b"[insertmanyvalues ", b"does not support caching", b"parameters: ",
                     b"; args=")
INSERT_NEEDLES = (b"INSERT ", b"insert ")
KEY_NEEDLE = b"Key ("  # PostgreSQL's `DETAIL:  Key (api_token)=(x) already exists.`

_INSERT = compiled(rb"(?i:insert[ \t]+(?:ignore[ \t]+)?into)[ \t]+[^\s(]{1,256}[ \t]*"
                   rb"\(([^()\r\n]{1,4096})\)[ \t]*(?i:values)[ \t]*")
_SQL_VALUE = compiled(rb"[ \t]*('(?:[^'\r\n]|'')*'|\"(?:[^\"\r\n]|\"\")*\"|[^,()'\"\r\n]*?)"
                      rb"[ \t]*([,)])")
_VERB = compiled(rb"\[SQL: |(?i:\b(?:select|insert|update|delete|replace|upsert|merge|with|"
                 rb"call)\b)")
# a string literal (skipped) or a placeholder: ?, %s, %(name)s, $1, :name (not a ::cast)
_PLACEHOLDER = compiled(rb"'(?:[^'\n]|'')*'|\?|%s|%\(([A-Za-z_]\w{0,63})\)s|\$(\d{1,4})\b"
                        rb"|(?<![:\w]):([A-Za-z_]\w{0,63})")
# what binds a placeholder to a column: `password = `, `"u"."password" LIKE `, `pw = crypt(`
_BOUND_TO = compiled(rb"([\w.`\"\[\]]{1,200})[ \t\n]*(?:=|!=|<>|(?i:like))[ \t\n]*"
                     rb"(?:[A-Za-z_][\w.]{0,63}[ \t]*\([ \t]*)?\Z")
_PG_PARAMETER = compiled(rb"\$(\d{1,4}) = ('(?:[^'\n]|'')*'|[^,\s]+)")


def _column(name: bytes) -> str:
    """``"users"."password"`` -> ``password``."""
    return name.rsplit(b".", 1)[-1].strip(b"`\"[] ").decode("utf-8", "replace")


Tables = dict[str, tuple[str, ...]]  # a table's name (its last part, lower case) -> columns

CREATE_NEEDLES = (b"CREATE TABLE ", b"create table ")
_CREATE = compiled(rb"(?i:create[ \t]+(?:(?:global[ \t]+|local[ \t]+)?(?:temporary|temp|"
                   rb"unlogged)[ \t]+)?table)[ \t]+(?i:if[ \t]+not[ \t]+exists[ \t]+)?"
                   rb"([^\s(]{1,256})[ \t]*\(")
# what a table's body lists besides its columns
_NOT_COLUMNS = frozenset({"primary", "key", "unique", "constraint", "foreign", "check", "index",
                          "fulltext", "spatial", "exclude", "like", "period"})
_CREATE_LINES = 1000  # lines a CREATE TABLE may span (mysqldump's and pg_dump's: one a column)
_INSERT_BARE = compiled(rb"(?i:insert[ \t]+(?:ignore[ \t]+)?into)[ \t]+([^\s(]{1,256})[ \t]+"
                        rb"(?i:values)[ \t]*")


def _table(name: bytes) -> str:
    """``public.users``, `` `users` ``, ``"Users"`` -> ``users``: as the schema is keyed."""
    return _column(name).lower()


def create_tables(lines: list[bytes], at: list[int], tables: Tables) -> bool:
    """``CREATE TABLE t (id int, api_key text, ...)``, on one line or a column a line (as
    pg_dump and mysqldump print it): its columns, in order, go into ``tables``, for the
    INSERTs that name no columns (``pg_dump --inserts``, mysqldump's extended inserts).
    Returns False: it reads, and changes nothing."""
    for i in dict.fromkeys(at):
        m = _CREATE.search(lines[i])
        if m is None:
            continue
        body = lines[i][m.end():]
        j = i
        while (box := parse(b"(" + body, 0)) is None and j + 1 < min(len(lines),
                                                                     i + _CREATE_LINES):
            j += 1
            body += b" " + lines[j]  # parsed as one line: only the names are read
        if box is None:
            continue
        columns = []
        for a, _colon, b in box[0]:
            first = (b"(" + body)[a:b].split(None, 1)
            word = _column(first[0]) if first else ""
            if word and word.lower() not in _NOT_COLUMNS:
                columns.append(word)
        if columns:
            tables[_table(m[1])] = tuple(columns)
    return False


def insert_rows(lines: list[bytes], at: list[int], count: Count,
                tables: Tables | None = None) -> bool:
    """``INSERT INTO t (email, password) VALUES ('a@b.c', 'x'), (...)``: in each row, the
    values of the columns whose names look secret (the placeholders of a prepared
    statement, ``?`` ``$1`` ``%s``, and a number under no password's name stay). An INSERT
    that names no columns takes those of its table's CREATE TABLE seen before (``tables``)."""
    hit = False
    for i in dict.fromkeys(at):
        line = lines[i]
        m = _INSERT.search(line)
        if m is not None:
            names = [_column(c) for c in m[1].split(b",")]
        elif tables and (m := _INSERT_BARE.search(line)) is not None and (
                known := tables.get(_table(m[1]))) is not None:
            names = list(known)
        else:
            continue
        secret = {k for k, n in enumerate(names) if looks_secret_name(n)}
        if not secret:
            continue
        out = [line[:m.end()]]
        pos = m.end()
        while pos < len(line) and line[pos:pos + 1] == b"(":  # a row: `(v, v, ...)`
            pos += 1
            out.append(b"(")
            k = 0
            while (v := _SQL_VALUE.match(line, pos)) is not None:
                value = v[1]
                quoted = value[:1] in (b"'", b'"')
                plain = value[1:-1] if quoted else value
                if k in secret and not kept(plain, names[k]):
                    value = value[:1] + REDACTED + value[-1:] if quoted else REDACTED
                    count("secret-field")
                    hit = True
                out.append(line[pos:v.start(1)] + value + line[v.end(1):v.end()])
                pos = v.end()
                k += 1
                if v[2] == b")":
                    break
            sep = re.match(rb"[ \t]*,[ \t]*", line[pos:])
            if sep is None:
                break
            out.append(sep[0])
            pos += sep.end()
        out.append(line[pos:])
        lines[i] = b"".join(out)
    return hit


_KEY_DETAIL = compiled(rb"\bKey \(([^()\r\n]{1,1024})\)=\(([^\r\n]*?)\)"
                       rb"(?= already exists| is not present| is still referenced| conflicts)")


def key_detail(lines: list[bytes], at: list[int], count: Count) -> bool:
    """PostgreSQL's constraint errors quote the key: ``Key (api_token)=(x) already exists.``
    (a unique or exclusion violation; ``is not present in table``, a foreign key). The
    values of secret columns go; all of them when the values cannot be told apart (one
    holds the ``, `` that separates them)."""
    hit = False
    for i in dict.fromkeys(at):
        line = lines[i]
        for m in reversed(list(_KEY_DETAIL.finditer(line))):
            names = [_column(c) for c in m[1].split(b",")]
            if not any(looks_secret_name(n) for n in names):
                continue
            values = m[2].split(b", ")
            secret = [looks_secret_name(n) for n in names]
            if len(values) != len(names):
                values, names, secret = [m[2]], [""], [True]
            out = [REDACTED if hide and not kept(v, n) else v
                   for n, v, hide in zip(names, values, secret, strict=True)]
            if out != values:
                count("secret-field")
                hit = True
                line = line[:m.start(2)] + b", ".join(out) + line[m.end(2):]
        lines[i] = line
    return hit


# -- a statement's placeholders -------------------------------------------------------------

def _placeholders(stmt: bytes) -> list[tuple[int, bytes | None, str | None]]:
    """Each placeholder of ``stmt`` in order: (its position, its name or number if it has
    one, the column it is bound to if any)."""
    columns = _insert_columns(stmt)
    out: list[tuple[int, bytes | None, str | None]] = []
    for m in _PLACEHOLDER.finditer(stmt):
        if m[0].startswith(b"'"):
            continue
        p = m.start()
        col = next((c for a, b, c in columns if a <= p < b), None)
        if col is None and (bound := _BOUND_TO.search(stmt, max(0, p - 200), p)) is not None:
            col = _column(bound[1])
        out.append((p, m[1] or m[2] or m[3], col))
    return out


def _insert_columns(stmt: bytes) -> list[tuple[int, int, str]]:
    """The value expressions of an INSERT's rows: (start, end, column)."""
    m = _INSERT.search(stmt)
    if m is None:
        return []
    names = [_column(c) for c in m[1].split(b",")]
    out: list[tuple[int, int, str]] = []
    pos = m.end()
    while (box := parse(stmt, pos)) is not None and stmt[pos] == ord("("):
        out += [(a, b, names[k]) for k, (a, _c, b) in enumerate(box[0]) if k < len(names)]
        sep = re.compile(rb"[ \t\n]*,[ \t\n]*").match(stmt, box[2])
        if sep is None:
            break
        pos = sep.end()
    return out


def _secret_statement(stmt: bytes) -> bool:
    """Does ``stmt`` name a secret column where a value goes (an INSERT's column, the left
    side of ``=``)?"""
    m = _INSERT.search(stmt)
    if m is not None and any(looks_secret_name(_column(c)) for c in m[1].split(b",")):
        return True
    return any(looks_secret_name(_column(b[1])) for b in re.finditer(
        rb"([\w.`\"\[\]]{1,200})[ \t\n]*(?:=|!=|<>|(?i:like))[ \t\n]*[^=]", stmt))


# -- parameter lists: Python reprs ----------------------------------------------------------

def _rows(s: bytes, box: Box) -> list[Box]:
    """A parameter list's rows: itself, or each of its containers when it holds rows
    (executemany's ``[(...), (...)]``, also around SQLAlchemy's ``... displaying 10 of 1000
    total bound parameter sets ...``)."""
    elements, children, _end = box
    if elements and children and s[elements[0][0]] in CLOSE:
        return [r for a, _b in children if (r := parse(s, a)) is not None]
    return [box]


def _hide(s: bytes, a: int, b: int, column: str) -> bytes | None:
    """The element ``s[a:b]`` with its secret replaced, or None if it is evidence."""
    value = s[a:b]
    m = STRING.match(value)
    if m is not None:
        return None if kept(m[2], column) else m[1] + REDACTED + m[3]
    if value.replace(b".", b"", 1).lstrip(b"-").isdigit() and not kept(value, column):
        return REDACTED  # a number under a password's name
    return None


# -- the rule -------------------------------------------------------------------------------

def bound_parameters(lines: list[bytes], at: list[int], count: Count) -> bool:
    """The parameters of a secret column, in the parameter lists on lines ``at``."""
    hit = False
    for i in dict.fromkeys(at):
        line = lines[i]
        for start, pg in _lists(line):
            stmt = _statement(lines, i, start)
            new = (_pg_parameters(line, start, stmt) if pg
                   else _repr_parameters(line, start, stmt))
            if new is not None:
                hits, line = new
                for _ in range(hits):
                    count("secret-field")
                hit = hit or bool(hits)
        lines[i] = line
    return hit


def _lists(line: bytes) -> Iterator[tuple[int, bool]]:
    """Where each parameter list on ``line`` starts, and whether it is PostgreSQL's."""
    for needle in PARAMETER_NEEDLES:
        pos = line.find(needle)
        if pos < 0:
            continue
        end = pos + len(needle)
        if needle == b"parameters: ":  # PostgreSQL's `$1 = 'x'`, SQLAlchemy's `[parameters: (`
            if line.startswith(b"$", end):
                yield end, True
            elif line[pos - 1:pos] == b"[":
                yield end, False
        elif needle == b"; args=":
            yield end, False
        else:  # SQLAlchemy's `[generated in 0.0001s] (...)`: after the bracket's close
            close = line.find(b"]", pos)
            if close >= 0:
                yield _skip(line, close + 1, len(line)), False


def _statement(lines: list[bytes], i: int, start: int) -> bytes:
    """The text before a parameter list at ``lines[i][start]``: this line's, and up to
    :data:`_REACH` lines before it, not reaching back to another list's line."""
    first = i
    while first > 0 and i - first < _REACH and not any(
            n in lines[first - 1] for n in PARAMETER_NEEDLES):
        first -= 1
    return b"\n".join([*lines[first:i], lines[i][:start]])


def _from_verbs(stmt: bytes) -> list[bytes]:
    """The statement's candidate texts, each from one of its verbs, longest first."""
    out = []
    for m in _VERB.finditer(stmt):
        out.append(stmt[m.end() if m[0] == b"[SQL: " else m.start():])
    return out


def _repr_parameters(line: bytes, start: int, stmt: bytes) -> tuple[int, bytes] | None:
    box = parse(line, start)
    if box is None:
        return None
    rows = _rows(line, box)
    texts = _from_verbs(stmt)
    if not rows or not texts:
        return None
    spans: list[tuple[int, int, str]] = []
    for row in rows:
        elements = row[0]
        by_name = line[start] == ord("{") or all(c >= 0 for _a, c, _b in elements)
        plan = None
        for text in texts:
            marks = _placeholders(text)
            if by_name or len(marks) == len(elements):
                plan = marks
                break
        if plan is None:  # no placeholders to match: every string of a secret statement
            if _secret_statement(texts[0]):
                spans += [(a, b, "") for a, _c, b in elements]
            continue
        if by_name:
            names = {n.decode(): col for _p, n, col in plan if n and col}
            for a, c, b in elements:
                key = line[a:c].strip().strip(b"'\"").decode("utf-8", "replace")
                col = names.get(key)
                if c >= 0 and col is not None and looks_secret_name(col):
                    spans.append((_skip(line, c + 1, b), b, col))
            continue
        for k, (_p, n, col) in enumerate(plan):
            j = int(n) - 1 if n and n.isdigit() else k
            if col is not None and looks_secret_name(col) and 0 <= j < len(elements):
                spans.append((elements[j][0], elements[j][2], col))
    return _apply(line, spans)


def _pg_parameters(line: bytes, start: int, stmt: bytes) -> tuple[int, bytes] | None:
    texts = _from_verbs(stmt)
    if not texts:
        return None
    marks = _placeholders(texts[0])
    secret = {n for _p, n, col in marks if n and col is not None and looks_secret_name(col)}
    whole = not any(n for _p, n, _c in marks) and _secret_statement(texts[0])
    spans = [(m.start(2), m.end(2), "" if whole else "password")
             for m in _PG_PARAMETER.finditer(line, start) if whole or m[1] in secret]
    return _apply(line, spans)


def _skip(s: bytes, a: int, b: int) -> int:
    while a < b and s[a] in b" \t":
        a += 1
    return a


def _apply(line: bytes, spans: list[tuple[int, int, str]]) -> tuple[int, bytes]:
    hits = 0
    for a, b, col in sorted(set(spans), reverse=True):
        new = _hide(line, a, b, col)
        if new is not None:
            line = line[:a] + new + line[b:]
            hits += 1
    return hits, line
