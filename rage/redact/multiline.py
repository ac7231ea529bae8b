"""Values that run across lines, redacted after the line-local rules have run.

- YAML block scalars under a secret key (``password: |``, ``key: >-``): every line more
  indented than the key, blank lines inside included;
- hard-wrapped tokens: lines that are one run of token characters right after a line that
  ends in a redaction (the rest of a ``Authorization: Bearer`` token a terminal or logger
  wrapped);
- name/value pairs on separate lines: Kubernetes ``- name: X_TOKEN`` / ``value: ...`` and
  JSON ``"name": "X_TOKEN",`` / ``"value": "..."``;
- Kubernetes Secret ``data:`` / ``stringData:`` (base64 of secrets under any key name), in a
  YAML document that says ``kind: Secret``;
- PuTTY ``.ppk`` files: the ``Private-Lines: N`` lines and ``Private-MAC``;
- tools' own multi-line forms: CSV/TSV secret columns, JSON Web Keys, ``vault`` and
  ``pulumi`` tables, ``openssl -text`` key dumps, terraform's sensitive outputs, Composer's
  host tokens, SQL as logged (:mod:`rage.redact.sql`), validation errors' inputs
  (:mod:`rage.redact.validation`), OpenVPN's ``<auth-user-pass>``, SMTP's ``AUTH LOGIN``
  password line, redis-cli's ``CONFIG GET`` reply, an expect(1) script's ``send`` after a
  password prompt, PHP's ``var_dump``, OAuth authorization codes (:mod:`rage.redact.oauth`);
- command lines printed in output (an xtrace's ``+ sshpass -p X``), and an argv printed as
  a list (a ``CalledProcessError``'s ``Command '['mysql', '-pX']'``).

Each rule starts from a literal found with ``bytes.find`` (``: |``, ``[REDACTED:``,
``value``, ``kind: Secret``, ``Private-Lines:``), so text without one costs a few finds. A
value is seen whole when its opener is within :data:`SPAN` bytes of the end of a streamed
block: the stream cuts blocks before such an opener (:func:`hold_back`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rage.redact.argv import (
    STDIN_SECRET,
    argv_list_needles,
    command_needles,
    redact_argv_lists,
    redact_command_line,
    redact_fed_lines,
)
from rage.redact.calls import (
    ANNOTATION,
    COMPARE_NEEDLES,
    annotated_values,
    compared_literals,
    positional_passwords,
)
from rage.redact.calls import NEEDLES as CALL_NEEDLES
from rage.redact.hexdump import run_start as dump_run_start
from rage.redact.nearby import (
    BACK_NEEDLES,
    PRINTS_NEEDLES,
    cut_tails,
    escaped_ppk,
    near_secret_words,
    password_options,
    printed_bare,
    shaped_lines,
)
from rage.redact.normalize import trace_record_start
from rage.redact.oauth import NEEDLES as OAUTH_NEEDLES
from rage.redact.oauth import authorization_codes
from rage.redact.regexcache import compiled
from rage.redact.result_tables import (
    COPY,
    DASHED,
    KEY_VALUE,
    RECORD,
    copy_blocks,
    dashed_tables,
    expanded_records,
    key_value_tables,
    pipe_tables,
)
from rage.redact.result_tables import RULES as TABLE_RULES
from rage.redact.scan import find_many, finds
from rage.redact.sql import (
    CREATE_NEEDLES,
    INSERT_NEEDLES,
    KEY_NEEDLE,
    PARAMETER_NEEDLES,
    Tables,
    bound_parameters,
    create_tables,
    insert_rows,
    key_detail,
)
from rage.redact.validation import (
    INPUT_VALUE_NEEDLE,
    LOC_NEEDLES,
    error_inputs,
    input_values,
)
from rage.redact.values import kept
from rage.redact.wraps import CONSOLE_LINE, tail_of_token
from rage.sensitive import looks_harmless_value, looks_secret_name

SPAN = 64 * 1024  # how far a multi-line value may reach past its opener in a stream
_MAX_LINES = 400

_BLOCK_KEY = compiled(rb"([ \t]*)(?:- )?[\"']?([A-Za-z0-9_.\-]{1,128})[\"']?[ \t]*:[ \t]*"
                      rb"(?:!{1,2}[A-Za-z0-9_./:\-]*[ \t]+)?[|>][-+0-9]{0,3}[ \t]*\r?")
_WRAPPED = compiled(rb"[ \t]*[A-Za-z0-9._~+/=\-]{8,}\r?")
# A value under a secret name that its line's end cut: a program that wraps at its console's
# width (Rich folds a word longer than it, `fold` any line) goes on at the next line's
# start. Only then, and only for lines of token bytes as wide as a console (40 or more)
# and of one width, is the next line its rest: then the leading token bytes of the line
# after them too (`p9S19a7D9JzF7de== for the job`)
_CUT = b"[REDACTED:secret-field]"
_CUT_END = compiled(rb"[A-Za-z0-9._~+/=\-]+(?=[ \t\r]|$)")
_NAME_LINE = compiled(rb"[ \t]*(?:- )?[\"']?name[\"']?[ \t]*:[ \t]*[\"']?([A-Za-z0-9_.\-]{1,128})"
                      rb"[\"']?[ \t]*,?[ \t]*\r?")
_VALUE_LINE = compiled(rb"[ \t]*[\"']?value[\"']?[ \t]*:[ \t]*(?:\"((?:[^\"\\\r\n]|\\.)*)\""
                       rb"|'([^'\r\n]*)'|([^\s\"'][^\r\n]*?))[ \t]*,?[ \t]*\r?")
_DATA_LINE = compiled(rb"([ \t]*)(?:data|stringData)[ \t]*:[ \t]*\r?")
_ENTRY = compiled(rb"([ \t]*)[\"']?[^\s:\"']{1,253}[\"']?[ \t]*:[ \t]*([^\s\r][^\r\n]*?)"
                  rb"[ \t]*\r?")
_HEADER_FIELD = compiled(rb"[A-Za-z_][A-Za-z0-9_ .\-]{0,63}")
_PPK = compiled(rb"Private-Lines:[ \t]*(\d{1,4})[ \t]*\r?")
_PPK_MAC = compiled(rb"(Private-MAC:[ \t]*)([0-9a-fA-F]{16,128})")
_SASL_PASSWORD_PROMPTS = (b"UGFzc3dvcmQ6", b"cGFzc3dvcmQ6")  # `Password:`, `password:`
_VAR_DUMP_KEY = b"]=>"
# redis' secret settings, as `CONFIG GET` names them
REDIS_SECRETS = (b"requirepass", b"masterauth", b"tls-key-file-pass", b"tls-client-key-file-pass")
_OPENERS: tuple[bytes, ...] = (b": |", b": >", b": !!binary", b": !vault", b"Private-Lines:",
                               b"name", b"kind: Secret",
                               b"<auth-user-pass>", *_SASL_PASSWORD_PROMPTS,
                               *REDIS_SECRETS, _VAR_DUMP_KEY,
                               b"Bearer", b"bearer", b"eyJ", b"apiVersion:", b"CREATE TABLE ",
                               KEY_VALUE, b"KeyName", *PRINTS_NEEDLES)
# a JWK's `kty`, and the private members printed before it when keys are sorted (`crv`, `d`,
# `dp`, `dq`, `e`, `kty`...; `alg`, `k`, `kid`, `kty`): a block ends before its object
_JWK_OPENERS = tuple(q + n + q for n in (b"kty", b"d", b"k") for q in (b'"', b"'", b'\\"'))
_OPENERS += _JWK_OPENERS
# query results and CSV/TSV, whose header says which cells after it are secret: a block
# cut after the header left the rows it names in clear through a pipe, not in a file
# (`-[ RECORD 1 ]-` then `api_secret | X`); a table's rule line is held from its header
_CSV_HEADERS = (b",password", b"password,", b"\tpassword", b"password\t", b",secret", b",token",
                b",pin", b"\tpin", b",pass", b"\tpass", b",pwd", b"\tpwd")
_OPENERS += (RECORD, COPY, *TABLE_RULES, *_CSV_HEADERS)

Count = Callable[[str], None]


_RULES_BY_NEEDLE = (
    (b": |", "block"), (b": >", "block"), (b": !!binary", "block"), (b": !vault", "block"),
    (b"kind: Secret", "secret"), (b"value:", "pair"),
    (b"value\":", "pair"), (b"value':", "pair"), (b"Private-Lines:", "ppk"),
    (b"Private-Lines:", "escaped-ppk"),
    (b"[REDACTED:auth-header]", "wrapped"), (b"[REDACTED:jwt]", "wrapped"),
    (_CUT, "wrapped"),
    # (a PIN or a numeric password column too: `name,username,pin`, `host\tpass`)
    *((n, "table") for n in _CSV_HEADERS),
    # a JSON Web Key, quoted as JSON, as escaped JSON or as a Python repr
    (b'kty"', "jwk"), (b"kty'", "jwk"), (b'kty\\"', "jwk"),
    # `vault kv get`'s table (`Key  Value` / `---  -----`); `openssl pkey -text`'s dump
    (b" -----", "kv-table"), (b"Private-Key:", "key-dump"), (b"OUTPUT ", "kv-table"),
    # `terraform output -json`: an output marked sensitive, whatever its name
    (b'"sensitive": true', "sensitive"), (b'"sensitive":true', "sensitive"),
    (b'"keyName"', "sensitive"),
    # Composer's auth.json: `"bearer": {"repo.example.com": "token"}` (and gitlab-token...)
    (b'"bearer"', "host-tokens"), (b'-token"', "host-tokens"), (b'-oauth"', "host-tokens"),
    # SQL: `INSERT INTO t (email, password) VALUES ('a@b.c', 'x')`, as databases log it, and
    # a statement's parameters printed after it (SQLAlchemy, PostgreSQL, Django)
    # (a CREATE TABLE first: an INSERT that names no columns takes its table's)
    *((n, "create-table") for n in CREATE_NEEDLES),
    *((n, "insert") for n in INSERT_NEEDLES), *((n, "sql-params") for n in PARAMETER_NEEDLES),
    (KEY_NEEDLE, "sql-key"),
    # query results: psql's and mysql's tables, psql's expanded records, pg_dump's COPY
    *((n, "pipe-table") for n in TABLE_RULES), (RECORD, "records"), (COPY, "copy"),
    (KEY_VALUE, "key-value-table"),  # Vault's `Key    Value` tables
    (DASHED, "dashed-table"),  # columns under dashes: `az storage account keys list -o table`
    # a password passed by position: `server.login("me@x.com", "x")` in a traceback
    *((n, "calls") for n in CALL_NEEDLES),
    # `if ("x" == my_password)`: a literal compared with a secret name, the literal first
    *((n, "compared") for n in COMPARE_NEEDLES),
    # an argv one element a line: `docker compose config`'s `- --db-password` then `- x`,
    # a pretty-printed JSON list (ansible -vvv's `"cmd": [`)
    (b"- --", "option-item"), (b'"--', "option-item"),
    # loguru's and better_exceptions' values under a traceback's source line (`└ 'x'`)
    (ANNOTATION, "annotated"),
    # validation errors: pydantic's `input_value='x'` under a secret field's location line,
    # and errors as data (`"loc": ["body", "password"], ..., "input": "x"`)
    (INPUT_VALUE_NEEDLE, "input-value"), *((n, "error-input") for n in LOC_NEEDLES),
    # OAuth 2.0 authorization codes: `?code=X&state=Y`, `grant_type=authorization_code&code=X`
    *((n, "oauth-code") for n in OAUTH_NEEDLES),
    # OpenVPN's inline credentials (a .ovpn profile): a user name, then its password
    (b"<auth-user-pass>", "ovpn"),
    # SMTP's AUTH LOGIN (smtplib's debug output): after the server's `334 UGFzc3dvcmQ6`
    # (base64 of `Password:`), the client's next line is the password in base64
    (_SASL_PASSWORD_PROMPTS[0], "sasl-login"), (_SASL_PASSWORD_PROMPTS[1], "sasl-login"),
    # redis-cli `CONFIG GET requirepass` (or `*`): the numbered line after the name, or,
    # piped, the line after the name alone
    *((b') "' + n + b'"', "redis-config") for n in REDIS_SECRETS),
    *((n + end, "redis-config") for n in REDIS_SECRETS for end in (b"\n", b"\r\n")),
    # a command line printed in output (`+ sshpass -p X ssh h`): see rage.redact.argv
    *((n, "command") for n in command_needles()),
    # expect(1) scripts: `expect "Password:"`, then `send "x\r"` (same line or the next)
    (b"expect ", "expect"),
    # ...and Tcl's error trace of a `send` that failed (the spawned program had gone):
    # `    while executing` then `"send "x\r""`
    (b"while executing", "expect"),
    # PHP's var_dump: `["password"]=>` then `string(8) "x"` on the next line
    (b"]=>", "var-dump"),
    # an xtrace's pipeline, a command a line: `+ echo X` beside `+ docker login
    # --password-stdin`
    *((s.encode(), "fed") for s in STDIN_SECRET),
    # an argv printed as a list: a CalledProcessError's `Command '['mysql', '-pX']'` (the
    # command rule also redacts the lists on its lines)
    *((n, "command") for n in argv_list_needles()),
    # what no name is bound to (rage.redact.nearby): a command's bare output under the name
    # it printed; the rest of a value an unquoted `)` cut (a Django key)
    *((n, "printed") for n in PRINTS_NEEDLES), (_CUT, "tail"),
    # ...and the token before the secret word in a phrase or a comparison (`# X is the
    # password`): a guess, run with the others of rage.redact.nearby (see below)
    *((n, "near-back") for n in BACK_NEEDLES),
)


# every needle: text without any needs no multi-line pass. A redaction's replacement
# (`[REDACTED:kind]`, a pseudonym, `~`) can bring only the needles it holds itself, the
# REDACTED_NEEDLES: none starts with the `]`, digit or `~` a replacement ends with, so
# none can span its end
NEEDLES = tuple(n for n, _rule in _RULES_BY_NEEDLE)
REDACTED_NEEDLES = tuple(n for n in NEEDLES if n.startswith(b"[REDACTED:"))


_UNIQUE = tuple(dict.fromkeys(NEEDLES))  # a needle of two rules is looked for once


def needed(buf: bytes) -> bool:
    """Cheap test: could any rule apply to ``buf``?"""
    return any(n in buf for n in _UNIQUE)


def redact_multiline(buf: bytes, count: Count,
                     needles: dict[bytes, list[int]] | None = None,
                     tables: Tables | None = None,
                     learn: Callable[[bytes], None] | None = None) -> bytes:
    """Apply every rule to ``buf`` (already redacted line by line). ``needles``: where each
    needle is in ``buf``, ascending, when the caller knows (else they are searched).
    ``tables``: the SQL tables' columns seen so far in the stream, which the CREATE TABLEs
    in ``buf`` add to (see :func:`rage.redact.sql.create_tables`). ``learn``: called with
    each value a rule removed (a line's text that a marker replaced), for the report to
    redact wherever else it appears (an OAuth code the program also prints bare)."""
    schema: Tables = {} if tables is None else tables
    where = _needles(buf) if needles is None else [
        (n, rule, needles[n]) for n, rule in _RULES_BY_NEEDLE if n in needles]
    found = [(rule, at) for needle, rule, positions in where
             if (at := _line_numbers(buf, needle, positions if rule not in _FILTERED else
                                     _FILTERED[rule](buf, needle, positions)))]
    # rules that guess from what is near (rage.redact.nearby), found by shapes, not needles,
    # run last; what they remove is not learned (a report would then remove a wrong guess
    # everywhere else too). Given the needles, the native scan found no shape in the input
    near, options = shaped_lines(buf) if needles is None else ([], [])
    if not found and not near and not options:
        return buf
    lines = buf.split(b"\n")
    rules = {"block": _block_scalars, "secret": _secret_data, "pair": _name_value,
             "ppk": _ppk, "wrapped": _wrapped, "table": _table, "jwk": _jwk,
             "kv-table": _kv_table, "key-dump": _key_dump, "command": _commands,
             "sensitive": _sensitive,
             "create-table": lambda lines, at, _count: create_tables(lines, at, schema),
             "insert": lambda lines, at, count: insert_rows(lines, at, count, schema),
             "sql-params": bound_parameters, "sql-key": key_detail,
             "calls": positional_passwords, "option-item": _option_items,
             "annotated": annotated_values, "compared": compared_literals,
             "pipe-table": pipe_tables, "records": expanded_records, "copy": copy_blocks,
             "key-value-table": key_value_tables, "dashed-table": dashed_tables,
             "input-value": input_values, "error-input": error_inputs, "host-tokens": _host_tokens,
             "ovpn": _ovpn, "sasl-login": _sasl_login, "redis-config": _redis_config,
             "var-dump": _var_dump, "expect": _expect, "fed": _fed,
             "oauth-code": authorization_codes, "printed": printed_bare, "tail": cut_tails,
             "escaped-ppk": escaped_ppk}
    before = list(lines) if learn is not None else None
    hit = False
    back: list[int] = []
    for rule, at in found:
        if rule == "near-back":
            back += at
            continue
        hit |= rules[rule](lines, at, count)
    if hit and before is not None and learn is not None:
        _removed_values(before, lines, learn)
    if near or back:
        hit |= near_secret_words(lines, sorted(set(near + back)), count)
    if options:
        hit |= password_options(lines, options, count)
    return b"\n".join(lines) if hit else buf


_LEARN_LINE_MAX = 64 * 1024


def _removed_values(before: list[bytes], after: list[bytes],
                    learn: Callable[[bytes], None]) -> None:
    """Each value the rules removed: what a marker stands for in a line they changed (not
    learned where a line cannot be aligned with what it was, or the lines were rejoined)."""
    from rage.redact.known import removed

    if len(before) != len(after):
        return
    for old, new in zip(before, after, strict=True):
        # (a line past _LEARN_LINE_MAX is not aligned: the work per changed line is bounded)
        if old is not new and len(old) <= _LEARN_LINE_MAX and old != new:
            for value in removed(old.decode("utf-8", "surrogateescape"),
                                 new.decode("utf-8", "surrogateescape")):
                learn(value.encode("utf-8", "surrogateescape"))


def _needles(buf: bytes) -> list[tuple[bytes, str, list[int] | None]]:
    """The needles in ``buf``, with their positions, all in one pass: Hyperscan's, or
    :func:`rage.redact.scan.find_many`."""
    find = _finder()
    if find is None:
        at = find_many(buf, _UNIQUE)  # one pass, not one `in` a needle
        return [(n, rule, at[n]) for n, rule in _RULES_BY_NEEDLE if n in at]
    pos = find(buf)
    return [(_RULES_BY_NEEDLE[k][0], _RULES_BY_NEEDLE[k][1], v) for k, v in sorted(pos.items())]


def _finder() -> Callable[[bytes], dict[int, list[int]]] | None:
    """The one-pass finder of the needles when Hyperscan is there."""
    from rage.redact.native import finder

    return finder(NEEDLES)


def _line_numbers(buf: bytes, needle: bytes, positions: list[int] | None = None) -> list[int]:
    """Indices of the lines of ``buf`` holding ``needle`` (found with ``find``, or given:
    no loop over lines that hold nothing)."""
    out: list[int] = []
    n = pos = 0
    for i in finds(buf, needle) if positions is None else positions:
        n += buf.count(b"\n", pos, i)
        pos = i
        if not out or out[-1] != n:
            out.append(n)
    return out


def hold_back(buf: bytes, limit: int) -> int:
    """Where to end a streamed block so that no multi-line value is cut: at the start of the
    line of the first opener in the last :data:`SPAN` bytes before ``limit`` (``limit``
    itself if there is none). 0 when that line starts ``buf``: the stream then waits for
    more (at most :data:`SPAN` bytes), as it must to see the lines after an opener (a
    wrapped token after ``Bearer``, a JWT) together with it. A curl trace's record and a
    hex dump's run of lines that end the block are held back whole, within the window
    (:func:`rage.redact.normalize.trace_record_start`, :func:`rage.redact.hexdump.run_start`),
    and so is a last line holding a `|`, which may be a table's header (its names say which
    cells of the rows after it are secret; the rule line below it is an opener)."""
    lo = max(0, limit - SPAN)
    limit = trace_record_start(buf, lo, limit)  # a curl trace's record stays whole
    limit = dump_run_start(buf, lo, limit)  # and a hex dump's run of lines
    find = _openers() if limit - lo >= _NATIVE_WINDOW else None
    if find is None:
        first = min((i for o in _OPENERS if (i := buf.find(o, lo, limit)) >= 0), default=-1)
    else:  # one Hyperscan pass over the window instead of a find per opener
        first = min((lo + v[0] for v in find(buf[lo:limit]).values()), default=-1)
    if first < 0:
        # a table's header line, the block's last: its rule and rows may follow
        nl = buf.rfind(b"\n", lo, limit - 1)
        last = nl + 1 if nl >= 0 or not lo else -1
        return last if last >= 0 and buf.find(b"|", last, limit) >= 0 else limit
    start = buf.rfind(b"\n", 0, first) + 1
    if start and buf.startswith(TABLE_RULES, first):  # from the header above the rule
        return buf.rfind(b"\n", 0, start - 1) + 1
    if buf.startswith(_JWK_OPENERS, first):  # from the line of the `{` of the JWK's object
        back = start
        for _ in range(_JWK_REACH):
            if b"{" in buf[back:buf.find(b"\n", back, first) if back < start else first]:
                return back
            if back == 0:
                break
            back = buf.rfind(b"\n", 0, back - 1) + 1
    return start


_NATIVE_WINDOW = 16 * 1024  # below this the finds cost less than a call to Hyperscan


def _openers() -> Callable[[bytes], dict[int, list[int]]] | None:
    from rage.redact.native import finder

    return finder(_OPENERS)


def _indent(line: bytes) -> int:
    return len(line) - len(line.lstrip(b" \t"))


def _mask(line: bytes, kind: str, count: Count) -> bytes:
    body = line.rstrip(b"\r")
    if not body.strip() or body.strip().startswith(b"[REDACTED"):
        return line
    count(kind)
    ind = _indent(body)
    return body[:ind] + f"[REDACTED:{kind}]".encode() + line[len(body):]


def _block_scalars(lines: list[bytes], at: list[int], count: Count) -> bool:
    hit = False
    for i in at:
        line = lines[i]
        m = _BLOCK_KEY.fullmatch(line)
        if m is None or not looks_secret_name(m[2].decode("ascii", "replace")):
            continue
        ind = len(m[1]) + (2 if line.lstrip().startswith(b"- ") else 0)
        for j in range(i + 1, min(len(lines), i + 1 + _MAX_LINES)):
            nxt = lines[j]
            if nxt.strip() and _indent(nxt) <= ind:
                break
            new = _mask(nxt, "secret-field", count)
            hit |= new is not nxt
            lines[j] = new
    return hit


def _wrapped(lines: list[bytes], at: list[int], count: Count) -> bool:
    hit = False
    for i in at:
        prev = lines[i].rstrip(b"\r")
        if prev.endswith(_CUT):
            hit |= _console_wrapped(lines, i + 1)
            continue
        if not prev.endswith((b"[REDACTED:auth-header]", b"[REDACTED:jwt]")):
            continue
        kind = prev[prev.rindex(b"[REDACTED:") + 10:-1].decode()
        j = i + 1
        while j < len(lines) and _WRAPPED.fullmatch(lines[j]) and _tokenish(lines[j]):
            # the rest of a secret already counted: replaced, not counted again
            lines[j] = _mask(lines[j], kind, _no_count)
            hit = True
            j += 1
    return hit


def _console_wrapped(lines: list[bytes], j: int) -> bool:
    """The rest of a value cut at its line's end, from line ``j`` on (see :data:`_CUT`)."""
    width = 0
    hit = False
    while j < len(lines):
        body = lines[j].rstrip(b"\r")
        # (past the first line the width is known: a piece of base64 may start like a path)
        if CONSOLE_LINE.fullmatch(body) and (len(body) == width if width else _tokenish(body)) and (
                tail_of_token(body)):
            width = len(body)
            lines[j] = _mask(lines[j], "secret-field", _no_count)
            hit = True
            j += 1
            continue
        if width and (m := _CUT_END.match(body)) is not None and m.end() < width and (
                tail_of_token(m[0])):
            lines[j] = _CUT + lines[j][m.end():]  # the wrap's last line: the value's end
        break
    return hit


def _wrap_points(buf: bytes, needle: bytes, positions: list[int] | None) -> list[int]:
    """The redactions that end their line with a token-like line after them: the only
    ones :func:`_wrapped` can extend (a log full of redacted headers is not split into
    lines for nothing)."""
    out = []
    n = len(needle)
    for i in finds(buf, needle) if positions is None else positions:
        e = i + n
        if buf[e:e + 1] == b"\r":
            e += 1
        if buf[e:e + 1] == b"\n":
            le = buf.find(b"\n", e + 1)
            line = CONSOLE_LINE if needle == _CUT else _WRAPPED
            if line.fullmatch(buf, e + 1, le if le >= 0 else len(buf)):
                out.append(i)
    return out


def _tail_points(buf: bytes, needle: bytes, positions: list[int] | None) -> list[int]:
    """The redactions a `)` follows: the only ones :func:`rage.redact.nearby.cut_tails`
    can extend."""
    n = len(needle)
    return [i for i in (finds(buf, needle) if positions is None else positions)
            if buf[i + n:i + n + 1] == b")"]


_FILTERED = {"wrapped": _wrap_points, "tail": _tail_points}


def _no_count(kind: str) -> None:
    pass


def _tokenish(line: bytes) -> bool:
    """A wrapped piece of a token has digits or mixed case: not a word or a path."""
    s = line.strip()
    if looks_harmless_value(s.decode("ascii", "replace")):
        return False
    has_digit = any(48 <= c <= 57 for c in s)
    return has_digit or (s.lower() != s and s.upper() != s)


def _name_value(lines: list[bytes], at: list[int], count: Count) -> bool:
    hit = False
    for i in at:
        line = lines[i]
        m = _VALUE_LINE.fullmatch(line)
        if m is None:
            continue
        # the name is on one of the previous two lines (`- name: X` / `  value: y`)
        name = None
        for k in (i - 1, i - 2):
            if k >= 0:
                n = _NAME_LINE.fullmatch(lines[k])
                if n is not None:
                    name = n[1]
                    break
        if name is None or not looks_secret_name(name.decode("ascii", "replace")):
            continue
        g = next(g for g in (1, 2, 3) if m.group(g) is not None)
        s, e = m.span(g)
        value = line[s:e]
        if not value or value.startswith(b"[REDACTED") or looks_harmless_value(
                value.decode("utf-8", "replace"), name.decode("ascii", "replace")):
            continue
        count("secret-field")
        lines[i] = line[:s] + b"[REDACTED:secret-field]" + line[e:]
        hit = True
    return hit


def _secret_data(lines: list[bytes], at: list[int], count: Count) -> bool:
    hit = False
    for i in at:
        lo, hi = i, i
        while lo > 0 and i - lo < _MAX_LINES and not lines[lo - 1].startswith(b"---"):
            lo -= 1
        while hi + 1 < len(lines) and hi - i < _MAX_LINES and not lines[hi + 1].startswith(b"---"):
            hi += 1
        j = lo
        while j <= hi:
            d = _DATA_LINE.fullmatch(lines[j])
            j += 1
            if d is None:
                continue
            ind = len(d[1])
            while j <= hi and (not lines[j].strip() or _indent(lines[j]) > ind):
                e = _ENTRY.fullmatch(lines[j])
                if e is not None and not e[2].startswith(b"[REDACTED") and e[2] not in (
                        b"|", b">", b"|-", b">-"):
                    s, t = e.span(2)
                    count("secret-field")
                    lines[j] = lines[j][:s] + b"[REDACTED:secret-field]" + lines[j][t:]
                    hit = True
                elif e is None and lines[j].strip():
                    lines[j] = _mask(lines[j], "secret-field", count)  # a block scalar's line
                    hit = True
                j += 1
    return hit


def _table(lines: list[bytes], at: list[int], count: Count) -> bool:
    """CSV and TSV: a header row naming a secret column (``name,username,password``); that
    column of every row after it with as many fields, up to the first that has not."""
    hit = False
    done = -1
    for i in at:
        if i <= done:
            continue
        header = lines[i].rstrip(b"\r")
        sep = b"\t" if header.count(b"\t") >= header.count(b",") else b","
        fields = [f.strip().strip(b"\"'") for f in header.split(sep)]
        if len(fields) < 2 or not all(_HEADER_FIELD.fullmatch(f) for f in fields):
            continue
        cols = [k for k, f in enumerate(fields) if looks_secret_name(f.decode("ascii"))]
        if not cols:
            continue
        j = i + 1
        while j < len(lines) and len(row := lines[j].rstrip(b"\r").split(sep)) == len(fields):
            for k in cols:
                cell = row[k].strip().strip(b"\"'")
                if cell and not cell.startswith(b"[REDACTED") and not looks_harmless_value(
                        cell.decode("utf-8", "replace"), fields[k].decode("ascii")):
                    count("secret-field")
                    row[k] = row[k].replace(cell, b"[REDACTED:secret-field]", 1)
                    hit = True
            lines[j] = sep.join(row) + lines[j][len(lines[j].rstrip(b"\r")):]
            j += 1
        done = j
    return hit


# a JWK's private members (RFC 7518 section 6: RSA d p q dp dq qi, EC and OKP d, oct k),
# each a base64url string value, quoted as JSON, escaped JSON or a Python repr
_JWK_PRIVATE = compiled(rb"(\\?[\"'](?:d|p|q|dp|dq|qi|k)\\?[\"'][ \t]*:[ \t]*\\?[\"'])"
                        rb"[A-Za-z0-9_\-]{16,8192}(?=\\?[\"'])")
_JWK_REACH = 64  # lines from the `kty` line to the braces of its object, at most


def _jwk(lines: list[bytes], at: list[int], count: Count) -> bool:
    """JSON Web Keys: in the object holding a ``"kty"`` member, from the line that opens
    it to the one that closes it (one line when the JSON is), the private members' values.
    The public ones (``n``, ``e``, ``x``, ``y``, ``kid``) are evidence and stay."""
    hit = False
    done = -1
    for i in at:
        lo = i
        while lo > 0 and i - lo < _JWK_REACH and b"{" not in lines[lo]:
            lo -= 1
        hi = i
        while hi + 1 < len(lines) and hi - i < _JWK_REACH and b"}" not in lines[hi]:
            hi += 1
        for k in range(max(lo, done + 1), hi + 1):
            new, n = _JWK_PRIVATE.subn(rb"\1[REDACTED:private-key]", lines[k])
            if n:
                for _ in range(n):
                    count("private-key")
                lines[k] = new
                hit = True
        done = max(done, hi)
    return hit


# what marks an object's `"value"` secret: terraform's `"sensitive": true`; the `keyName` of
# an Azure storage account key (`az storage account keys list`)
_SENSITIVE = compiled(rb'"sensitive"[ \t]*:[ \t]*true|"keyName"[ \t]*:[ \t]*"[^"\r\n]{1,64}"')
_SIBLING = compiled(rb'"sensitive"|"keyName"')
_SENSITIVE_VALUE = compiled(rb'"value"[ \t]*:[ \t]*(?:"((?:[^"\\\r\n]|\\.)*)"'
                            rb'|(-?[0-9][0-9.eE+\-]*))')
_SENSITIVE_REACH = 24  # lines from `"sensitive": true` to its `"value"` (a long type list)


def _sensitive(lines: list[bytes], at: list[int], count: Count) -> bool:
    """``terraform output -json``: each output is ``{"sensitive": b, "type": t, "value": v}``
    in that order; where ``sensitive`` is true the value that follows (a string or a
    number) is a secret, whatever the output is called. Likewise the ``value`` after an
    Azure storage key's ``keyName``."""
    hit = False
    for i in dict.fromkeys(at):
        start = 0
        # searched again in the line as it now is: a value replaced before moves what follows
        while (s := _SENSITIVE.search(lines[i], start)) is not None:
            pos = start = s.end()
            for j in range(i, min(i + _SENSITIVE_REACH, len(lines))):
                line = lines[j]
                m = _SENSITIVE_VALUE.search(line, pos)
                o = _SIBLING.search(line, pos)
                other = o.start() if o is not None else -1
                if other >= 0 and (m is None or other < m.start()):
                    break  # the next output's: this one's value is no scalar
                if m is not None:
                    g = 1 if m.start(1) >= 0 else 2
                    if m[g] and not m[g].startswith(b"[REDACTED"):
                        lines[j] = line[:m.start(g)] + b"[REDACTED:secret-field]" + line[m.end(g):]
                        count("secret-field")
                        hit = True
                    break
                pos = 0
    return hit


_HOST_OBJECT = compiled(rb'"([A-Za-z0-9_.\-]{1,64})"[ \t]*:[ \t]*\{')
_HOST_MEMBER = compiled(rb'"[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63})+(?::\d{1,5})?"'
                        rb'[ \t]*:[ \t]*"((?:[^"\\\r\n]|\\.){1,4096})"')
_HOST_REACH = 64  # lines of one such object, at most


def _host_tokens(lines: list[bytes], at: list[int], count: Count) -> bool:
    """Composer's ``auth.json`` (and ``COMPOSER_AUTH``): under a secret-named key
    (``bearer``, ``gitlab-token``, ``github-oauth``), an object of host names, each with its
    token: ``"repo.example.com": "token"``. Up to the object's ``}``; an object nested in it
    (``http-basic``'s ``{"username", "password"}``) is the key/value rules' own."""
    hit = False
    for i in dict.fromkeys(at):
        start = 0
        while (o := _HOST_OBJECT.search(lines[i], start)) is not None:
            start = o.end()
            if not looks_secret_name(o[1].decode("ascii")):
                continue
            pos = o.end()
            for j in range(i, min(i + _HOST_REACH, len(lines))):
                line = lines[j]
                close = line.find(b"}", pos)
                nested = line.find(b"{", pos)
                end = len(line) if close < 0 else close
                if 0 <= nested < end:
                    break  # `{"host": {...}}`: not a token per host
                spans = [m.span(1) for m in _HOST_MEMBER.finditer(line, pos, end)
                         if not m[1].startswith(b"[REDACTED")
                         and not looks_harmless_value(m[1].decode("utf-8", "replace"))]
                for a, b in reversed(spans):
                    line = line[:a] + b"[REDACTED:secret-field]" + line[b:]
                    count("secret-field")
                if spans:
                    lines[j] = line
                    hit = True
                if close >= 0:
                    break
                pos = 0
    return hit


_KV_HEADER = compiled(rb"Key[ \t]{2,}Value[ \t]*\r?")
_KV_RULE = compiled(rb"---[ \t]{2,}-----[ \t]*\r?")
_KV_ROW = compiled(rb"[ \t]*(\S{1,128})[ \t]{2,}(\S[^\r\n]*?)[ \t]*\r?")
# `pulumi stack output --show-secrets`: `OUTPUT  VALUE`, indented, no rule under it
_OUTPUTS_HEADER = compiled(rb"[ \t]+OUTPUT[ \t]{2,}VALUE[ \t]*\r?")


def _kv_table(lines: list[bytes], at: list[int], count: Count) -> bool:
    """``vault kv get``/``vault read``: under a ``Key  Value`` header and its ``---  -----``
    rule, each row whose key looks secret (``api_token   x``); pulumi's outputs under an
    ``OUTPUT  VALUE`` header."""
    hit = False
    for i in at:
        if not ((i and _KV_RULE.fullmatch(lines[i]) and _KV_HEADER.fullmatch(lines[i - 1]))
                or _OUTPUTS_HEADER.fullmatch(lines[i])):
            continue
        j = i + 1
        while j < len(lines) and (m := _KV_ROW.fullmatch(lines[j])) is not None:
            name, value = m[1].decode("utf-8", "replace"), m[2]
            if looks_secret_name(name) and not value.startswith(b"[REDACTED") and not (
                    looks_harmless_value(value.decode("utf-8", "replace"), name)):
                count("secret-field")
                lines[j] = lines[j][:m.start(2)] + b"[REDACTED:secret-field]" + lines[j][m.end(2):]
                hit = True
            j += 1
    return hit


# `openssl pkey|rsa|ec -text`: a field's name alone on its line, its value in hex lines after
_DUMP_FIELD = compiled(rb"([A-Za-z][A-Za-z0-9 \-]{0,40}):[^\r\n]*\r?")
_DUMP_HEX = compiled(rb"([ \t]+)[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2})*:?[ \t]*\r?")
_DUMP_PRIVATE = frozenset({b"priv", b"privateExponent", b"prime1", b"prime2", b"exponent1",
                           b"exponent2", b"coefficient"})


def _key_dump(lines: list[bytes], at: list[int], count: Count) -> bool:
    """A private key printed as text by openssl: the hex lines of its private fields
    (``priv:``, ``privateExponent:``, ``prime1:``...); the first becomes the marker, the
    others their indentation. The public ones (``pub:``, ``modulus:``) stay."""
    hit = False
    for i in at:
        private = first = False
        for j in range(i + 1, len(lines)):
            line = lines[j]
            field = _DUMP_FIELD.fullmatch(line)
            if field is not None:
                private, first = field[1] in _DUMP_PRIVATE, True
            elif (h := _DUMP_HEX.fullmatch(line)) is not None:
                if private:
                    lines[j] = h[1] + b"[REDACTED:private-key]" if first else h[1]
                    if first:
                        count("private-key")
                    first = False
                    hit = True
            else:
                break
    return hit


def _commands(lines: list[bytes], at: list[int], count: Count) -> bool:
    """Each line that prints a command of a program with rules of its own (an xtrace, a
    CI log, ``ps``), redacted by those rules (:func:`rage.redact.argv.redact_command_line`),
    and the argv it prints as a list (:func:`rage.redact.argv.redact_argv_lists`)."""
    hit = False
    for i in dict.fromkeys(at):
        line = lines[i]
        cr = line.endswith(b"\r")
        text = (line[:-1] if cr else line).decode("utf-8", "surrogateescape")
        new = redact_command_line(text, count)
        listed = redact_argv_lists(text if new is None else new, count)  # `['nmcli', ...]`
        new = listed if listed is not None else new
        if new is not None:
            lines[i] = new.encode("utf-8", "surrogateescape") + (b"\r" if cr else b"")
            hit = True
    return hit


_OPTION_ITEM = compiled(rb"([ \t]*)(- |\")(--[A-Za-z][A-Za-z0-9_.\-]{0,64})\"?,?[ \t]*\r?")
_ITEM = {b"- ": compiled(rb"[ \t]*- (?:\"((?:[^\"\\\r\n]|\\.)*)\"|'([^'\r\n]*)'"
                          rb"|([^\s\"'][^\r\n]*?))[ \t]*\r?"),
         b'"': compiled(rb'[ \t]*"((?:[^"\\\r\n]|\\.)*)",?[ \t]*\r?')}


def _option_items(lines: list[bytes], at: list[int], count: Count) -> bool:
    """An argv written one element a line (a YAML list, pretty-printed JSON): an option
    with a secret name alone on its line (`- --db-password`, `"--password",`), then its
    value on the next."""
    hit = False
    for i in dict.fromkeys(at):
        m = _OPTION_ITEM.fullmatch(lines[i])
        if m is None or i + 1 >= len(lines) or not looks_secret_name(
                m[3].decode("ascii").lstrip("-")):
            continue
        v = _ITEM[m[2]].fullmatch(lines[i + 1])
        if v is None or not lines[i + 1].startswith(m[1]):
            continue
        g = v.lastindex or 1  # the alternative that matched: double, single or no quotes
        value = v[g]
        if value.startswith(b"-") or kept(value, m[3].decode("ascii").lstrip("-")):
            continue
        lines[i + 1] = lines[i + 1][:v.start(g)] + b"[REDACTED:secret-field]" + (
            lines[i + 1][v.end(g):])
        count("secret-field")
        hit = True
    return hit


def _fed(lines: list[bytes], at: list[int], count: Count) -> bool:
    """What an xtrace's ``+ echo X`` feeds a ``+ docker login --password-stdin`` on the
    line beside it (:func:`rage.redact.argv.redact_fed_lines`)."""
    hit = False
    for i in dict.fromkeys(at):
        lo = max(0, i - 1)
        near = [x.decode("utf-8", "surrogateescape") for x in lines[lo:i + 2]]
        for j in redact_fed_lines(near, i - lo, count):
            lines[lo + j] = near[j].encode("utf-8", "surrogateescape")
            hit = True
    return hit


_VAR_DUMP_NAME = compiled(rb'[ \t]*\["([^"\r\n]{1,128})"(?::"[^"\r\n]{0,128}")?'
                          rb'(?::(?:private|protected))?\]=>[ \t]*\r?')
_VAR_DUMP_VALUE = compiled(rb'([ \t]*string\(\d{1,9}\) ")(.*)("[ \t]*\r?)|([ \t]*int\()(\d{1,19})'
                           rb'(\)[ \t]*\r?)')


def _var_dump(lines: list[bytes], at: list[int], count: Count) -> bool:
    """PHP's var_dump of an array or object: a secret name's line (`["password"]=>`,
    `["apiKey":"Config":private]=>`), then its value on the next (`string(8) "x"`,
    `int(1234)`)."""
    hit = False
    for i in dict.fromkeys(at):
        m = _VAR_DUMP_NAME.fullmatch(lines[i])
        if m is None or i + 1 >= len(lines):
            continue
        key = m[1].decode("utf-8", "replace")
        if not looks_secret_name(key):
            continue
        v = _VAR_DUMP_VALUE.fullmatch(lines[i + 1])
        if v is None:
            continue
        head, value, tail = (v[1], v[2], v[3]) if v[1] is not None else (v[4], v[5], v[6])
        if not value or value.startswith(b"[REDACTED") or looks_harmless_value(
                value.decode("utf-8", "replace"), key):
            continue
        count("secret-field")
        lines[i + 1] = head + b"[REDACTED:secret-field]" + tail
        hit = True
    return hit


# anywhere in its line, not only at its start: a script given with `expect -c '...; expect
# "assword:"; send "x\r"'` (in argv, or as an xtrace prints it: `+ expect -c ...`)
_EXPECT = compiled(rb"(?<![A-Za-z0-9_\-])(?:-re[ \t]+)?expect\b[^\r\n]*(?i:assword|"
                   rb"assphrase|pass phrase|\bpin\b|passcode)")
_SEND = compiled(rb"(?<![A-Za-z0-9_])send[ \t]+(?:--[ \t]+)?\"((?:[^\"\\\r\n]|\\.)+?)"
                 rb"(?:\\r|\\n)*\"")


def _send(lines: list[bytes], j: int, s: re.Match[bytes], count: Count) -> bool:
    """Redact what the `send` ``s`` of line ``j`` types (not a placeholder, not a variable)."""
    if s[1].startswith((b"[REDACTED", b"$")):
        return False
    count("secret-field")
    lines[j] = lines[j][:s.start(1)] + b"[REDACTED:secret-field]" + lines[j][s.end(1):]
    return True


def _expect(lines: list[bytes], at: list[int], count: Count) -> bool:
    """An expect(1) script's answer to a password prompt: the `send "x\\r"` after an
    `expect` of one, on its line or the next two. And Tcl's trace of a failed `send`
    (``    while executing`` then ``"send "x\\r""``): what a script types into a program, a
    password as often as not, and the script (a file) is not in the output to tell which."""
    hit = False
    for i in dict.fromkeys(at):
        if lines[i].strip() == b"while executing":
            j = i + 1
            if j < len(lines) and lines[j].lstrip().startswith(b'"send ') and (
                    s := _SEND.search(lines[j])) is not None:
                hit = _send(lines, j, s, count) or hit
            continue
        m = _EXPECT.search(lines[i])
        if m is None:
            continue
        for j in range(i, min(len(lines), i + 3)):
            s = _SEND.search(lines[j], m.end() if j == i else 0)
            if s is not None:
                hit = _send(lines, j, s, count) or hit
                break
    return hit


def _ovpn(lines: list[bytes], at: list[int], count: Count) -> bool:
    """``<auth-user-pass>``, a user name, its password, ``</auth-user-pass>``: the line
    after the name (the name stays, as in ``user:password`` elsewhere)."""
    hit = False
    for i in at:
        if lines[i].strip() != b"<auth-user-pass>":
            continue
        body = []
        for j in range(i + 1, min(len(lines), i + 4)):
            if lines[j].strip() == b"</auth-user-pass>":
                break
            if lines[j].strip():
                body.append(j)
        for j in body[1:2]:
            masked = _mask(lines[j], "secret-field", count)
            hit |= masked is not lines[j]
            lines[j] = masked
    return hit


_SASL_SEND = compiled(rb"([ \t]*(?:send: b?'|C: |> )?)([A-Za-z0-9+/]{4,8192}={0,2})"
                      rb"((?:\\r\\n)?'?[ \t]*\r?)")
_SERVER_LINE = (b"reply:", b"S: ", b"< ")


def _sasl_login(lines: list[bytes], at: list[int], count: Count) -> bool:
    """The client's line after the server asked for the password in base64 (the server's
    own lines, `reply: ...`, `S: ...`, in between are skipped): its base64 goes."""
    hit = False
    for i in at:
        for j in range(i + 1, min(len(lines), i + 4)):
            if lines[j].lstrip().startswith(_SERVER_LINE):
                continue
            m = _SASL_SEND.fullmatch(lines[j])
            if m is not None:
                count("secret-field")
                lines[j] = m[1] + b"[REDACTED:secret-field]" + m[3]
                hit = True
            break
    return hit


_REDIS_NAME = compiled(rb'[ \t]*\d{1,6}\) "(?:' + b"|".join(REDIS_SECRETS) + rb')"\r?')
_REDIS_VALUE = compiled(rb'([ \t]*\d{1,6}\) ")((?:[^"\\\r\n]|\\.)+)("\r?)')
_REDIS_RAW_NAME = compiled(rb"(?:" + b"|".join(REDIS_SECRETS) + rb")\r?")


def _redis_config(lines: list[bytes], at: list[int], count: Count) -> bool:
    """redis-cli's reply to `CONFIG GET`: `1) "requirepass"` then `2) "X"` on a terminal;
    piped (no terminal: no numbers, no quotes), the name alone on its line, then the value
    alone on the next (an empty one, a password never set, stays)."""
    hit = False
    for i in at:
        if i + 1 >= len(lines):
            continue
        if _REDIS_RAW_NAME.fullmatch(lines[i]) is not None:
            value = lines[i + 1]
            cr = value[-1:] if value.endswith(b"\r") else b""
            if kept(value[:len(value) - len(cr)]):
                continue
            count("secret-field")
            lines[i + 1] = b"[REDACTED:secret-field]" + cr
            hit = True
            continue
        if _REDIS_NAME.fullmatch(lines[i]) is None:
            continue
        m = _REDIS_VALUE.fullmatch(lines[i + 1])
        if m is not None and not m[2].startswith(b"[REDACTED"):
            count("secret-field")
            lines[i + 1] = m[1] + b"[REDACTED:secret-field]" + m[3]
            hit = True
    return hit


def _ppk(lines: list[bytes], at: list[int], count: Count) -> bool:
    hit = False
    for i in at:
        m = _PPK.fullmatch(lines[i])
        if m is None:
            continue
        n = int(m[1])
        for j in range(i + 1, min(len(lines), i + 1 + n)):
            lines[j] = _mask(lines[j], "private-key", count)
            hit = True
        for j in range(i + 1 + n, min(len(lines), i + 3 + n)):
            mac = _PPK_MAC.match(lines[j])
            if mac is not None:
                count("private-key")
                lines[j] = lines[j][:mac.end(1)] + b"[REDACTED:private-key]" + lines[j][
                    mac.end(2):]
    return hit
