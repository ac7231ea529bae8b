"""Secrets no name is bound to, told by what is near them: a random-looking token within a
few words of a secret word (`using api key X for requests`, `# X is the password`, a source
line `if (db_pass !== "X")`, a row `twilio_auth_token,X,`), after a password-like option
whatever the program (`-p X`), and the line a command printed bare under its name
(`+ printenv AWS_SECRET_ACCESS_KEY` then the value).

Multi-line rules (:mod:`rage.redact.multiline`): they run over a block the line rules have
redacted. A plain word is never taken here: only a token that could not be prose
(:func:`random_token`), so a sentence about passwords stays. The guesses (a token near a
word, after an option) are found by shapes, not needles: a secret word, then a token on its
line (:data:`WORD_SHAPE`), in the native scan's one pass, which asks :func:`may_change` of
each (a log full of `password` holds a token in few of those lines), or by a search of the
token runs without Hyperscan; each line is then decided by itself, so both scans agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rage.redact.regexcache import compiled
from rage.redact.values import kept
from rage.sensitive import looks_harmless_value, looks_secret_name, name_parts

Count = Callable[[str], None]
REDACTED = b"[REDACTED:secret-field]"
_REACH = 3  # words between a secret word and its value, at most (`X is the password`)
_LINE_MAX = 4096  # longer lines are data, not sentences: not read word by word
# the bytes of a token: base64, base64url, hex, and the punctuation generated passwords use
_TOKEN = compiled(rb"[A-Za-z0-9+/=_\-.~!#$%^&*]{12,512}")
# a word of a line: what lies between blanks, quotes, brackets and field separators
_WORD = compiled(rb"[^\s\"'`()\[\]{}<>,;|]+")
_EDGE = b".:!?=@#*&$%^~+/"  # punctuation that ends or opens a word, not a token's own
_ENGLISH = compiled(rb"[A-Z]?[a-z]{4,}")  # a word inside a name: `ZooKeeperServer325`
_HEX = compiled(rb"(?:0x)?[0-9a-fA-F]+")
_PARTS = compiled(rb"[\-_.]")
_HEX_GROUPS = compiled(rb"[0-9a-fA-F]+(?:[\-_:.][0-9a-fA-F]+)+")
# the words that say a secret follows or precedes (as a whole word or a part of a name)
_STRONG = frozenset({"password", "passwd", "passphrase", "passcode", "pwd", "secret", "secrets",
                     "token", "apikey", "credential", "credentials", "pswd", "passwort",
                     "kennwort", "senha", "contrasena", "wachtwoord", "haslo"})
# `key` says so only after one of these (`api key`, `ACCESS_KEY`, `master.key`)
# (not `private`: crypto libraries' class names, `Ed25519PrivateKey, X448PrivateKey`)
_KEY_OWNERS = frozenset({"api", "access", "secret", "master"})
_KEYS = frozenset({"key", "keys"})


def random_token(tok: bytes) -> bool:
    """Could ``tok`` be no word, name, number, version, path or hash a log holds? 12 to 512
    token bytes, digits and letters of both cases; hex only from 32 digits (a key; shorter
    ones are ids and short hashes); no dictionary-like word for half its length
    (`ZooKeeperServer325`); not a name with a suffix (`pod-name-7f9b8c6d5e`); no evidence
    (:func:`rage.sensitive.looks_harmless_value`: UUIDs, paths, versions...)."""
    if _TOKEN.fullmatch(tok) is None:
        return False
    if not any(48 <= c <= 57 for c in tok) or not tok.lower().islower():
        return False
    if _HEX.fullmatch(tok) is not None:
        return len(tok) >= 32
    if _HEX_GROUPS.fullmatch(tok) is not None:
        return False  # a UUID, a request id: hex in groups
    if tok.upper() == tok or tok.lower() == tok:
        return False  # (one case: a path, a version, an id; a generated token mixes them)
    if 2 * sum(m.end() - m.start() for m in _ENGLISH.finditer(tok)) >= len(tok):
        return False
    parts = _PARTS.split(tok)
    if len(parts) > 1 and any(len(p) >= 4 and p.isalpha() and (p.islower() or p.istitle())
                              for p in parts):
        return False
    if len(set(tok)) * 4 < min(len(tok), 24) * 3:
        return False  # `aaaaaaaaaaaa1`, `121212121212ab`
    return not looks_harmless_value(tok.decode("ascii"))


def secret_word(word: bytes, before: bytes = b"") -> bool:
    """Is ``word`` (``before`` it, the word before) a secret word: `password`, `db_pass`,
    `my_super_password`, `AWS_SECRET_ACCESS_KEY`, `api key`? Not `key`, `session` or `auth`
    alone, nor `sort_key`, `tokenizer`, `MAX_TOKENS` (no part says so)."""
    if b"=" in word or b":" in word:
        return False  # `password=X`: a name bound to its value (the key/value rules' own)
    w = word.strip(_EDGE)
    if not w or len(w) > 128 or not w.isascii():
        return False
    parts = name_parts(w.decode("ascii"))
    if not parts:
        return False
    for k, p in enumerate(parts):
        if p in _STRONG or (p == "pass" and k and k == len(parts) - 1):
            # (`db_pass`; not `tests pass`, nor a name's verb: `PassCollisions`)
            return p not in ("token", "secret") or len(parts) == 1 or looks_secret_name(
                w.decode("ascii"))  # `max_tokens`? a plural; `token_count`: no
        if p in _KEYS and ((k and parts[k - 1] in _KEY_OWNERS) or (
                not k and before.strip(_EDGE).lower().decode("ascii", "replace") in _KEY_OWNERS)):
            return True
    return False


# what every secret word holds, in any case: the shapes below are found from these
_WORDS = (rb"(?i:pass|pwd|pswd|secret|token|credential|api.?key|access.?key|master.?key"
          rb"|kennwort|senha|contrase|wachtwoord|haslo)")


# what every token random_token takes holds: 32 hex digits, or a digit and both cases
# within one run of token bytes; then the rest of the run and the byte after it, so that
# Hyperscan reports a token once (at one end), not at each of its bytes. A line with one
# and a secret word is a line these rules may change
_U = rb"[A-Za-z0-9+/_\-.~!#$%^&*]"
_RUN = (rb"(?:[0-9a-fA-F]{32}|" + b"|".join(
    a + _U + b"*" + b + _U + b"*" + c for a, b, c in (
        (b"[A-Z]", b"[a-z]", b"[0-9]"), (b"[A-Z]", b"[0-9]", b"[a-z]"),
        (b"[a-z]", b"[A-Z]", b"[0-9]"), (b"[a-z]", b"[0-9]", b"[A-Z]"),
        (b"[0-9]", b"[A-Z]", b"[a-z]"), (b"[0-9]", b"[a-z]", b"[A-Z]"))) + rb")")
# a secret word not bound to a value by `=` or `:`, then a token's shape later on its line
# (the rest of the token and the byte after it: Hyperscan then reports a token once, at
# its end, not at each of its bytes)
WORD_SHAPE = _WORDS + rb"[^=:\n][^\n]*" + _RUN + _U + rb"*(?:[^A-Za-z0-9+/_\-.~!#$%^&*]|$)"
# `-p X`: a password-like option, then a token's first bytes
OPTION_SHAPE = rb"-(?:p|-?pass|-?passwd|-?pwd|-?pw)[ \t]+['\"]?" + _U + rb"{12}"
# the token before the secret word: only in these phrases and comparisons (`# X is the
# password`, `if ("X" == my_password)`): a token before any secret word is a shape Hyperscan
# cannot find from the word, and running its NFA over every byte cost a third of a scan
# (no needle starts with a blank: the pure-Python scan's find_many tests each place where
# a needle's first three bytes are, and ` is` is in every sentence)
BACK_NEEDLES = (b"is the password", b"is the secret", b"is the token", b"is my password",
                b"is your password", b"is the api key", b"is the API key", b'" == ',
                b'" != ', b'" === ', b'" !== ', b"' == ", b"' != ", b'"==', b'"!=')
_WORD_RX = compiled(_WORDS)
# a token that is a secret name's value (`"password": "X"`, `token=X`): the key/value rules
# judged it, taken or kept; not these rules' to guess again
_QUOTES = (b'"', b"'")
_NAME_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_LONG = compiled(rb"[A-Za-z0-9+/_\-.~!#$%^&*]{12,}")
_DIGIT = compiled(rb"[0-9]")
_HEX32 = compiled(rb"[0-9a-fA-F]{32}")
_RUN_RX = compiled(_RUN)
_OPTION_RX = compiled(OPTION_SHAPE)
_UNBOUND = frozenset(b"=:\n")


def _line_of(region: bytes, to: int) -> bytes:
    """The line of ``region`` that holds the byte before ``to``."""
    ls = region.rfind(b"\n", 0, to - 1) + 1
    le = region.find(b"\n", to - 1)
    return region[ls:le if le >= 0 else len(region)]


def may_change(region: bytes, to: int) -> bool:
    """Could :func:`near_secret_words` change the line of a :data:`WORD_SHAPE` match that
    ends at ``to``, once the line rules have redacted it: what a secret word holds, then a
    random token (at any distance: a redaction may leave fewer words between)? The native
    scan asks it of each match (a token is rare in a line full of secret words), and runs
    the multi-line pass only when one could."""
    line = _line_of(region, to)
    if len(line) > _LINE_MAX:
        return False
    last = max((m.start() for m in _CANDIDATE.finditer(line) if random_token(
        m[0].rstrip(b".")) and not _given(line, m.start())), default=-1)
    # (what a secret word holds before it, not the word: the line rules may yet cut a long
    # word into shorter ones, `...eyJ...Password for X`)
    return last >= 0 and _WORD_RX.search(line, 0, last) is not None


def option_may_change(region: bytes, to: int) -> bool:
    """Could :func:`password_options` change the line of an :data:`OPTION_SHAPE` match?"""
    lines = [_line_of(region, to)]
    return password_options(lines, [0], _no_count)


def _no_count(kind: str) -> None:
    pass


# an HTTP scheme's credential (`Bearer X`) is the bearer and basic forms' own
_AUTH_SCHEME = compiled(rb"(?i:bearer|basic)[ \t]+\Z")


# each shape with its test (the native scan's, see rage.redact.native)
SHAPES = ((WORD_SHAPE, may_change), (OPTION_SHAPE, option_may_change))


def _given(line: bytes, ts: int) -> bool:
    """Is the token at ``ts`` another rule's: an HTTP scheme's credential (`Bearer X`, the
    bearer and basic forms'), or a secret name's value (the key/value rules')?"""
    if _AUTH_SCHEME.search(line, max(0, ts - 16), ts) is not None:
        return True
    # read back from the token (a regex searched for a name ending there was tried at each
    # of the bytes before it: most of what the native scan's test of a line cost)
    h = line[max(0, ts - 160):ts]
    h = (h[:-1] if h[-1:] in _QUOTES else h).rstrip(b" \t")
    if h.endswith((b"=>", b":=")):
        h = h[:-2]
    elif h.endswith((b"=", b":")):
        h = h[:-1]
    else:
        return False
    h = h.rstrip(b" \t")
    h = h[:-1] if h[-1:] in _QUOTES else h
    i = len(h)
    while i > 0 and len(h) - i < 128 and h[i - 1] in _NAME_BYTES:
        i -= 1
    return i < len(h) and looks_secret_name(h[i:].decode("ascii"))


def shaped_lines(buf: bytes) -> tuple[list[int], list[int]]:
    """The numbers of the lines of ``buf`` that hold :data:`WORD_SHAPE`, and of those that
    hold :data:`OPTION_SHAPE`: the same lines with and without Hyperscan, found at a cost
    that differs."""
    from rage.redact.native import line_finder

    words = line_finder((WORD_SHAPE,))
    options = line_finder((OPTION_SHAPE,))
    if words is not None and options is not None:
        return _numbers(buf, words(buf)), _numbers(buf, options(buf))
    near: list[int] = []
    done = -1  # the end of the last line found
    for m in _LONG.finditer(buf):  # a token's run: rare, where secret words are not
        t = m[0]
        if m.start() <= done or not ((t.lower() != t and t.upper() != t and (
                _DIGIT.search(t) is not None)) or (len(t) >= 32 and _HEX32.search(t))):
            continue
        ls = buf.rfind(b"\n", 0, m.start()) + 1
        le = buf.find(b"\n", m.end())
        le = len(buf) if le < 0 else le
        if _WORD_RX.search(buf, ls, m.start()) is not None:
            near.append(m.start())
            done = le
    return _numbers(buf, near), _numbers(buf, [m.end() for m in _OPTION_RX.finditer(buf)])


def _numbers(buf: bytes, offsets: list[int]) -> list[int]:
    out: list[int] = []
    n = pos = 0
    for i in offsets:
        n += buf.count(b"\n", pos, i)
        pos = i
        if not out or out[-1] != n:
            out.append(n)
    return out


# a secret word whose value a key/value rule took (`password=[REDACTED:...]`, `"api_key":
# "[REDACTED:...]"`, `--token [REDACTED:...]`): it names that value, not the words around it
_BOUND = compiled(rb"[\"'\]]?(?:[ \t]*(?:=>|:=|[=:])[ \t]*|[ \t]+)"
                  rb"(?:\[REDACTED:[a-z\-]+\](?![^\s,;)}\]])|([\"'])\[REDACTED:[a-z\-]+\]\1)")


# a token standing as a word of its own (its value, not a `key=value` word): the first,
# C-speed pass over a line; a line full of secret words and ids holds none
_CANDIDATE = compiled(rb"(?<![^\s\"'`(\[{<,;|])[A-Za-z0-9+/_\-.~!#$%^&*]{12,512}={0,2}"
                      rb"(?=[\s\"'`)\]}>,;|]|[.:!?](?:\s|$)|$)")


def near_secret_words(lines: list[bytes], at: list[int], count: Count) -> bool:
    """Each random token within :data:`_REACH` words of a secret word, on its line."""
    hit = False
    for i in at:
        line = lines[i]
        if len(line) > _LINE_MAX:
            continue
        toks = [(m.start(), m.start() + len(t)) for m in _CANDIDATE.finditer(line)
                if random_token(t := m[0].rstrip(b"."))]
        if not toks:
            continue  # the common case: a sentence about passwords, ids that are no token
        words = [(m.start(), m.end()) for m in _WORD.finditer(line)]
        secret = [k for k, (s, e) in enumerate(words) if secret_word(
            line[s:e], line[words[k - 1][0]:words[k - 1][1]] if k and (
                words[k - 1][1] + 1 == s) else b"") and _BOUND.match(line, e) is None]
        if not secret:
            continue
        # a token after its secret word; before it only in a phrase or a comparison that
        # says so (BACK_NEEDLES): each line decided by itself, whichever scan found it
        back = any(n in line for n in BACK_NEEDLES)
        spans: list[tuple[int, int]] = []
        for ts, te in toks:
            k = next((k for k, (s, e) in enumerate(words) if s <= ts < e), -1)
            reach, near = min(((abs(k - j), j) for j in secret if j < k or (back and j > k)),
                              default=(0, -1))
            hexed = _HEX.fullmatch(line, ts, te) is not None
            if k < 0 or not 0 < reach <= _REACH or secret_word(line[ts:te]) or (hexed and (
                    reach > 1 or b"_" in line[words[near][0]:words[near][1]])) or (
                    _given(line, ts)):
                # hex only beside a word of prose: not `<commit sha> fix token refresh`, nor
                # a key log's label (`SERVER_HANDSHAKE_TRAFFIC_SECRET <client random> X`,
                # whose secret its format takes)
                continue
            spans.append((ts, te))
        if spans:
            lines[i] = _replace(line, spans, count)
            hit = True
    return hit


def _replace(line: bytes, spans: list[tuple[int, int]], count: Count) -> bytes:
    out: list[bytes] = []
    last = 0
    for s, e in spans:
        out += [line[last:s], REDACTED]
        last = e
        count("secret-field")
    out.append(line[last:])
    return b"".join(out)


# a password-like option and its value, whatever the program: `-p X` (mysql, sshpass, many
# scripts' own), `--pass X`; quoted or not. `-p 8080`, `mkdir -p dir`, `-p profile-name` stay
_OPTION = compiled(rb"(?<!\S)(?:-p|--?pass|--?passwd|--?pwd|--?pw)[ \t]+(?:'([^'\s]+)'"
                   rb"|\"([^\"\s]+)\"|([^\s'\"]+))(?=\s|$)")


def password_options(lines: list[bytes], at: list[int], count: Count) -> bool:
    """The random token after ``-p``, ``--pass``-like options, on any command line."""
    hit = False
    for i in at:
        line = lines[i]
        if len(line) > _LINE_MAX:
            continue
        spans = [(m.start(g), m.end(g)) for m in _OPTION.finditer(line)
                 for g in (1, 2, 3) if m.start(g) >= 0 and b"=" not in m[g][:12] and (
                     random_token(m[g]))]
        if spans:
            lines[i] = _replace(line, spans, count)
            hit = True
    return hit


def option_value(option: str, value: str) -> bool:
    """Is ``value``, after ``option`` in an argv whose program rage has no table for, a
    password: a random token after ``-p``, a ``--pass``-like option or the word
    ``password``?"""
    o = option.lower()
    return (o in ("-p", "password", "passwd", "passphrase") or (
        o.startswith("-") and o.lstrip("-") in ("pass", "passwd", "pwd", "pw"))) and (
        value.isascii() and random_token(value.encode("ascii")))


# a command that prints a secret bare on the next line: an xtrace's or a prompt's
# `printenv NAME`, `cat PATH` of a key file
_PRINTS = compiled(rb"[ \t]*(?:\++|\$|#|>)[ \t]+(?:(printenv)[ \t]+([A-Za-z_][A-Za-z0-9_]{0,127})"
                   rb"|(cat)[ \t]+([^\s;|&<>]{1,512}))[ \t]*\r?")
PRINTS_NEEDLES = (b"printenv ", b"+ cat ", b"$ cat ", b"# cat ")
# what a file holding one secret is called: Rails' `master.key`, `*.key`, `token`, `secret`
_KEY_FILE = compiled(rb"(?:[^/]*[._\-])?(?:key|secret|token|password|passwd|credentials?|pat)"
                     rb"(?:\.(?:txt|key))?", re.I)
_VALUE_LINE = compiled(rb"[ \t]*(\S{4,4096})[ \t]*\r?")


def printed_bare(lines: list[bytes], at: list[int], count: Count) -> bool:
    """``+ printenv AWS_SECRET_ACCESS_KEY`` then the value on a line of its own (unless it is
    evidence), ``+ cat config/master.key`` then a random token or a hex key."""
    hit = False
    for i in at:
        if i + 1 >= len(lines):
            continue
        m = _PRINTS.fullmatch(lines[i])
        v = _VALUE_LINE.fullmatch(lines[i + 1]) if m is not None else None
        if m is None or v is None or v[1].startswith(b"[REDACTED") or v[1][:1] in b"+$#>":
            continue
        value = v[1]
        if m[1]:
            name = m[2].decode("ascii")
            if not looks_secret_name(name) or kept(value, name):
                continue
        else:
            base = m[4].rstrip(b"'\"").rsplit(b"/", 1)[-1]
            if _KEY_FILE.fullmatch(base) is None or not (random_token(value) or (
                    len(value) >= 16 and _HEX.fullmatch(value) is not None)):
                continue
        count("secret-field")
        lines[i + 1] = lines[i + 1][:v.start(1)] + REDACTED + lines[i + 1][v.end(1):]
        hit = True
    return hit



# the rest of a Django secret key, whose alphabet has `(` and `)` (get_random_secret_key):
# an unquoted value ends at `)`, and what follows it to the blank is still the key
_TAIL = compiled(rb"\[REDACTED:secret-field\](\)[a-z0-9!@#$%^&*(\-_=+)]{7,})(?=[\s'\"]|$)")
_TAIL_SYMBOLS = frozenset(b"!@#$%^&*(-_=+")


def cut_tails(lines: list[bytes], at: list[int], count: Count) -> bool:
    """``SECRET_KEY=[REDACTED:secret-field])2l=m@p8q$z!w3v``: the key's rest after the
    ``)`` that ended the value, when it has digits and Django's symbols (not a call's
    closing bracket and the words after it)."""
    hit = False
    for i in at:
        line = lines[i]
        if b"])" not in line:
            continue
        out = _TAIL.sub(lambda m: REDACTED if (
            any(48 <= c <= 57 for c in m[1])
            and sum(c in _TAIL_SYMBOLS for c in m[1]) >= 3) else m[0], line)
        if out != line:
            lines[i] = out
            hit = True
    return hit


# a PuTTY .ppk file inside an escaped string (JSON, a repr, a log of a config): its lines
# joined by `\n` written out
_PPK_ESCAPED = compiled(rb"Private-Lines:[ \t]*(\d{1,4})((?:\\r)?\\n)")
_PPK_LINE = compiled(rb"[A-Za-z0-9+/=]{1,256}")
_PPK_MAC = compiled(rb"(?:\\r)?\\nPrivate-MAC:[ \t]*([0-9a-fA-F]{16,128})")


def escaped_ppk(lines: list[bytes], at: list[int], count: Count) -> bool:
    """``...\\nPrivate-Lines: 1\\nAAAA...\\nPrivate-MAC: 0a1b...``: the private lines and the
    MAC of a .ppk written on one line, as the line-by-line rule masks them."""
    hit = False
    for i in at:
        line = lines[i]
        out: list[bytes] = []
        last = 0
        for m in _PPK_ESCAPED.finditer(line):
            if m.start() < last:
                continue
            pos, eol = m.end(), m[2]
            for _ in range(int(m[1])):
                v = _PPK_LINE.match(line, pos)
                if v is None:
                    break
                out += [line[last:v.start()], b"[REDACTED:private-key]"]
                last = v.end()
                count("private-key")
                pos = v.end() + len(eol) if line.startswith(eol, v.end()) else len(line)
            mac = _PPK_MAC.match(line, last)
            if mac is not None:
                out += [line[last:mac.start(1)], b"[REDACTED:private-key]"]
                last = mac.end(1)
                count("private-key")
        if out:
            out.append(line[last:])
            lines[i] = b"".join(out)
            hit = True
    return hit
