"""Is it a value? The checks the key/value handler asks before replacing what a shape
matched: a sentence's ``word: value``, a name or code instead of a value, a .netrc context.

Kept apart from the engine's matching loop: these are the judgement calls, each answering
a case from the benign corpus (tests/corpus/benign.txt) or the issue's must-survive list.
"""

from __future__ import annotations

import re

from rage.redact.regexcache import compiled
from rage.sensitive import looks_harmless_value, looks_secret_name, name_parts

LINE_NO = compiled(rb"\d+:(?:\d+:)? ")  # `auth.c:41:24: error`: a file and a line number
ESCAPED_EOL = compiled(rb"\[\\r\]\[\\n\]|\\r\\n|\\n")  # `[\r][\n]`: Apache HttpClient's wire log
NEXT_VALUE = compiled(rb"[\"']?[ \t]*,?[ \t]*[\"']?(?i:value|val)[\"']?[ \t]*[=:]")
_NETRC_PREV = compiled(rb"(?:^|\s)(?:login|machine|account)\s")
_NETRC = compiled(rb"(?:^|[ \t])(?:login|account)[ \t]+\S+[ \t]+\Z")

# what a mid-line `word: value` follows when it is a field of a map, not a sentence
_FIELD_BEFORE = frozenset(b"{,([;|&")
_WEAK_KEYS = frozenset({b"key", b"keys", b"session", b"auth", b"signature", b"token", b"salt",
                        b"tokens", b"sessions", b"credentials", b"secrets", b"cookies",
                        b"credential"})
# `token = self._store.get(...)`, `os.environ["X"]`: code reading a secret, not the secret
_EXPRESSION = compiled(rb"[A-Za-z_][A-Za-z0-9_]*+(?:\.[A-Za-z_][A-Za-z0-9_]*+)*+[(\[]")
# kubectl describe secret: `password:  16 bytes`; openssl -text: `Private-Key: (256 bit)`
_SIZE = compiled(rb"\d+ bytes|\(\d+ bit(?:, \d+ primes)?\)")
_WORD = compiled(rb"[A-Za-z][A-Za-z_\-]{0,40}")
# terraform plan/apply: `+ password = (sensitive value)`, `x.secret: Creation complete`; what
# other tools print where a value is hidden or wrong
_TOOL_PHRASES = (b"(sensitive value)", b"(sensitive)", b"(known after apply)", b"(sensitive",
                 b"Creation complete", b"Creating...", b"Refreshing state", b"Destroying...",
                 b"Destruction complete", b"Modifying...", b"Modifications complete",
                 b"Still creating", b"Still destroying", b"Still modifying", b"Reading...",
                 b"Read complete", b"Importing", b"Import complete",
                 # npm config list, kubectl describe pod, compose's validation errors
                 b"(protected", b"(redacted", b"<set to the key ", b"must be a ", b"must be an ",
                 b"is required", b"is not allowed", b"is not set")


def kept(value: bytes, name: str = "") -> bool:
    """Does ``value``, found where ``name``'s value goes, stay? Empty, redacted already, or
    evidence (:func:`rage.sensitive.looks_harmless_value`: a number under no password's name,
    a boolean, a placeholder, a path...)."""
    return not value or value.startswith(b"[REDACTED") or looks_harmless_value(
        value.decode("utf-8", "replace"), name)


# a credential given where a user name goes (`curl -u TOKEN:`): a name is short, or a word
_TOKEN_CHARS = compiled(r"[^\s@:'\"]{12,}")
# what providers' docs put after a token given as the user name, where no password is
DUMMY_PASSWORDS = frozenset({"", "x", "X", "x-oauth-basic", "api_token"})


def token_shaped(user: str) -> bool:
    """Is ``user``, given where a user name goes, a token (`curl -u TOKEN:`, as Stripe's,
    Freshdesk's, Toggl's and GitHub's docs have it) rather than a name? No `@` or blank, and
    20+ characters with letters and digits, or 12+ with upper and lower case and digits
    (`alice`, `deploy-bot`, `svc.backup2` stay)."""
    if _TOKEN_CHARS.fullmatch(user) is None or looks_harmless_value(user):
        return False
    digits = any(c.isdigit() for c in user)
    if len(user) >= 20:
        return digits and any(c.isalpha() for c in user)
    return digits and any(c.isupper() for c in user) and any(c.islower() for c in user)


def prose(buf: bytes, ks: int, raw_key: bytes, raw_value: bytes) -> bool:
    """``auth: token refreshed``: an unquoted ``word: value`` inside a sentence. A field of a
    map follows ``{`` ``,`` ``(`` (flow YAML, dict reprs) or starts the line; quotes make it
    a field anywhere. Also a segment of an ARN-like ``a:b:c`` path."""
    if raw_key[:1] in (b'"', b"'") or raw_value[:1] in (b'"', b"'"):
        return False
    sep = buf[ks + len(raw_key):ks + len(raw_key) + 8].lstrip(b"] \t")
    if sep[:1] == b":" and sep[1:2] != b" " and buf[ks - 1:ks] == b":":
        return True  # a segment of a colon path: `arn:aws:secretsmanager:eu-west-1:...`
    if not sep.startswith(b":") or sep[1:2] not in (b" ", b"\t"):
        return False
    ls = buf.rfind(b"\n", 0, ks) + 1
    before = buf[ls:ks].rstrip(b" \t")
    if not before.lstrip(b" \t-><+*#"):
        return False  # the line's own `key: value` (log prefixes aside)
    if before[-1] in _FIELD_BEFORE:
        return False
    # in a sentence: a lone generic word (`cache key: v2-deps-...`, `session: 7f3a`) or a
    # plain word after it (`failed: password expired`) is prose; `password: hunter2x` is not
    return raw_key.lower() in _WEAK_KEYS or (raw_value.isalpha() and (
        raw_value.islower() or raw_value.istitle()))


_METAVAR = compiled(rb"[A-Z][A-Z_\-]{0,31}(?:=[A-Z][A-Z_\-]{0,31})?")
_STOP_WORDS = frozenset({b"a", b"an", b"and", b"are", b"as", b"be", b"by", b"can", b"for",
                         b"if", b"in", b"is", b"may", b"must", b"not", b"of", b"on", b"or",
                         b"should", b"the", b"to", b"was", b"were", b"will", b"with",
                         # docker's `WARNING! Using --password via the CLI is insecure.`
                         b"via", b"from", b"at", b"into", b"over", b"through", b"without",
                         b"instead", b"when", b"since", b"because", b"than", b"then",
                         # prose about the option: `the -token flag is deprecated`
                         b"flag", b"option", b"argument", b"parameter", b"switch"})


# the types Go's flag and pflag (cobra: kubectl, gh, helm, docker) print after a flag in its
# help: `--token string   API token`, `-password string` then the description on the next line
_GO_FLAG_TYPES = frozenset({
    b"string", b"strings", b"stringArray", b"stringSlice", b"stringToString", b"int", b"int8",
    b"int16", b"int32", b"int64", b"ints", b"intSlice", b"uint", b"uint8", b"uint16",
    b"uint32", b"uint64", b"uints", b"float", b"float32", b"float64", b"bool", b"bools",
    b"duration", b"durations", b"value", b"bytesHex", b"bytesBase64", b"ip", b"ipNet",
    b"ipMask", b"count"})
_AFTER_GO_TYPE = compiled(rb"(?:[ \t]{2,}|[ \t]*\r?$)", re.M)


def help_text(buf: bytes, key_end: int, value_start: int, value: bytes) -> bool:
    """``--password PASS``, ``--ask-password   Prompt for passwords``, ``--edit-key and``:
    an option in a tool's help or manual, not given a value. The value is a metavar (upper
    case letters, ``KEY=VALUE``), comes after the two or more blanks of a help column, is a
    capitalised word that starts a description, or a word of the sentence the option is
    in."""
    if buf[key_end:value_start].count(b" ") + buf[key_end:value_start].count(b"\t") >= 2:
        return True
    if value.isalpha() and value.istitle():  # `--junk-session-cookies Ignore session ...`
        after = buf[value_start + len(value):value_start + len(value) + 2]
        if after[:1] == b" " and after[1:].islower():
            return True
    if value in _GO_FLAG_TYPES and _AFTER_GO_TYPE.match(buf, value_start + len(value)):
        return True
    if _HELP_COLUMN.match(buf, value_start + len(value)) and value.isalpha() and (
            len(value) <= 12):
        return True  # OpenSSL's `-key val              Key for signing`: a metavar
    return _METAVAR.fullmatch(value) is not None or value in _STOP_WORDS


# the blanks of a help column, then its description
_HELP_COLUMN = compiled(rb"[ \t]{2,}[A-Z]")
# the method an option names (initdb's `--auth-local peer`, `--auth-host scram-sha-256`)
_METHOD = compiled(rb"[a-z]{2,12}(?:-[a-z0-9]{1,8}){0,3}")


def auth_method(key: str, value: bytes) -> bool:
    """``--auth-local peer``: an option whose only secret word is ``auth``, with a word of
    its own after it (`local`, `host`), names a method; its value is a lower-case word.
    ``--auth X`` alone gives the credential itself."""
    parts = name_parts(key)
    rest = [p for p in parts if p != "auth"]
    return len(rest) == len(parts) - 1 and bool(rest) and not looks_secret_name(
        "_".join(rest)) and _METHOD.fullmatch(value) is not None


_MODULE = compiled(rb"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+")


def log_message(key: bytes, value: bytes) -> bool:
    """``botocore.credentials: Found credentials in environment variables.``: a logger's
    name (a lower-case dotted module path) and a sentence (a capital, four words or more,
    a full stop), as Python's logging prints them; not a value under a secret name."""
    return (value[:1].isupper() and value.endswith(b".") and value.count(b" ") >= 3
            and _MODULE.fullmatch(key) is not None)


def a_state_word(lkey: bytes, value: bytes) -> bool:
    """``session=new``, ``auth=ok``, ``"token": "refreshed"``: a generic secret word as the
    whole name, and a short lower-case word as its value, says what happened to one. No
    token is a dictionary word; a password can be, so names of passwords are not asked
    (nor is an option or a `setenv`, which give the value itself: `--token xyz`)."""
    return lkey in _WEAK_KEYS and len(value) <= 12 and value.isalpha() and value.islower()


# a variable's name: lower case, no digits (a secret mostly has digits or capitals)
_IDENTIFIER = compiled(rb"[a-z_][a-z_]{0,31}")
_ASSIGN_NEXT = compiled(rb"[ \t]*=(?!=)")


def chained(buf: bytes, vs: int, ve: int) -> bool:
    """``userid = passwd = acct = ''``: the value is the next name of a chained assignment in
    code (a traceback's source line), not a value."""
    return _IDENTIFIER.fullmatch(buf, vs, ve) is not None and \
        _ASSIGN_NEXT.match(buf, ve) is not None


# a YAML tag before a block scalar's indicator: PyYAML writes bytes as `!!binary |`,
# Ansible a vaulted value as `!vault |`
_TAGGED_BLOCK = compiled(rb"!{1,2}[A-Za-z0-9_./:\-]*[ \t]+[|>][-+0-9]{0,3}[ \t]*")


def not_a_value(value: bytes) -> bool:
    """A value that names or computes a secret instead of being one: another secret name
    (``key: password``, ``auth: token``), a code expression, a tool's placeholder phrase."""
    if value.startswith(_TOOL_PHRASES) or _EXPRESSION.match(value) or _SIZE.fullmatch(value):
        return True
    if value.startswith(b":"):
        return True  # `auth::tests::rejects_expired_token`: a path, `::` is no separator
    if _TAGGED_BLOCK.fullmatch(value):
        return True  # YAML's `token: !!binary |`: the value is the block below (multiline)
    if value.lower() in _CMDLETS:
        return True  # `$password = ConvertTo-SecureString "x"`: the cmdlet's own rule takes x
    if (attr := _ATTRIBUTE.fullmatch(value)) is not None and looks_secret_name(
            attr[1].decode("ascii")):
        return True  # `password = user.password`, `pw = settings.DB_PW`: code reading one
    if _ABOUT.fullmatch(value) is not None:  # `passwd: password updated successfully`
        value = value.split(None, 1)[0]
    return _WORD.fullmatch(value) is not None and value.lower() == value and looks_secret_name(
        value.decode("ascii"))


# PowerShell's cmdlets a script gets a secret from, as the value of `$password = ...`
_CMDLETS = frozenset({b"convertto-securestring", b"read-host", b"get-credential",
                      b"get-secret", b"get-azkeyvaultsecret", b"get-content"})
# an attribute of an object (`user.password`): the last name is what it reads
_ATTRIBUTE = compiled(rb"[A-Za-z_][A-Za-z0-9_]*+(?:\.[A-Za-z_][A-Za-z0-9_]*+)*\.([A-Za-z_]"
                      rb"[A-Za-z0-9_]*+)")


# a secret's name, then what happened to it, in lower-case words: a tool's message about a
# value (passwd: `password updated successfully`, `password expiry information changed.`)
_ABOUT = compiled(rb"[a-z][a-z_\-]{0,40}(?: [a-z]{2,20}){1,6}\.?")


def prompt_prose(lead: bytes, value: bytes) -> bool:
    """``INFO reset password for bob: done``: a log's words before what looks like a
    password prompt, and one plain word after it, as in a sentence. Before a prompt come
    only its own words (``Enter``, ``[sudo]``, ``Verifying - Enter PEM``)."""
    if all(w.strip(b"[]") in _PROMPT_WORDS for w in lead.lower().split()):
        return False
    return value.isalpha() and (value.islower() or value.istitle())


_PROMPT_WORDS = frozenset({b"enter", b"re-enter", b"reenter", b"retype", b"repeat", b"confirm",
                           b"verify", b"verifying", b"-", b"sudo", b"new", b"current", b"old",
                           b"your", b"the", b"host", b"proxy", b"pem", b"key", b"vault",
                           b"please", b"unix", b"private", b"ssh", b"gpg", b"bad"})


def netrc_context(buf: bytes, s: int, e: int) -> bool:
    """``password X`` is a .netrc entry after ``login u`` or alone on its line."""
    ls = buf.rfind(b"\n", 0, s) + 1
    if _NETRC.search(buf, ls, s):
        return True
    le = buf.find(b"\n", e)
    le = len(buf) if le < 0 else le
    if buf[ls:s].strip() or buf[e:le].strip():
        return False
    # one keyword per line: the entry's `login` or `machine` is on the line before
    prev = buf[buf.rfind(b"\n", 0, max(ls - 1, 0)) + 1:ls]
    return _NETRC_PREV.search(prev) is not None


# What programs print as an identifier where a secret-ish name stands before it: evidence,
# not a secret, whatever the name (unless it names a password: `password=Summer@2024`).
# Each comes from a real system's log (tests/corpus/real_logs/).
_EVIDENCE = compiled(
    # a number in hex, as code prints a session id or a pointer (`sessionid: 0x14ede63a5a70002`)
    rb"0x[0-9a-fA-F]{1,16}"
    # a version or a status code: dpkg's, apt's (`528.0.0-0`, `1.14.10-1~deb12u1`), SMTP's
    # delivery status (`dsn=4.0.0`), an IPv4 address
    rb"|\d{1,9}(?::\d{1,4})?(?:\.\d{1,9})+(?:[-+~][0-9A-Za-z.+~]{1,24}(?:-[0-9A-Za-z.+~]{1,24})?)?"
    # a date or an ISO 8601 time (`token_obtained_at = 2026-03-01T10:00:00Z`)
    rb"|\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?(?:Z|[+-]\d\d:?\d\d)?)?"
    # a Java class at a line or an object at its hash code (`ZooKeeperServer@325`,
    # `com.example.Pool@1b6d3586`): a dotted or CamelCase name, two capitals at least
    rb"|(?=[\w$.]*\.|(?:[\w$.]*[A-Z]){2})[A-Za-z_$][\w$.]{1,80}@[0-9a-fA-F]{1,16}"
    # an object as Android and Java's toString print it (`AppWindowToken{9f4ef63 ...`)
    rb"|[A-Z][\w$.]{0,80}\{[0-9a-f]{4,16}\}?"
    # a placeholder with a path: a config file's variable (`$dir/private/cakey.pem`,
    # OpenSSL's `$insta::newkey`, `${HOME}/.ssh/id_rsa`)
    rb"|\$(?:\{[A-Za-z_]\w{0,63}\}|[A-Za-z_]\w{0,63})(?:::\w{1,64}(?:/\S*)?|/\S*)"
)
# a URL with no password, query or fragment (`NSErrorFailingURLStringKey=https://..`); a
# login name before its host is a name unless it is shaped like a token
_PLAIN_URL = compiled(rb"[A-Za-z][A-Za-z0-9+.\-]{1,20}://(?:([^\s:/?#@\[\]]{1,128})@)?"
                      rb"[A-Za-z0-9.\-\[\]:]+(?:/[^\s?#@]*)?")
# a name in CamelCase, its words of three letters or more, acronyms around them
# (`tagKey=KSChannelID`, `brandKey=KSBrandID`): not random letters
_CAMEL_NAME = compiled(rb"(?=(?:[a-z]*[A-Z]){2})(?:[A-Z]{1,4}[a-z]{3,12}){1,6}[A-Z]{0,4}")
# a record of fields joined by `|` (Android's notification key `0|com.example|121|null|10111`)
_RECORD_FIELD = compiled(rb"\d{1,12}|null|[A-Za-z_][\w\-]{0,31}(?:\.[A-Za-z_][\w\-]{0,31})*")


def evidence(value: bytes, password: bool) -> bool:
    """Is ``value`` an identifier a program printed (a hex number, a version, a time, a class
    at a line, an object's toString, a variable's path, a URL with no credentials in it, a
    record of such fields) rather than a secret? Only placeholders under the name of a
    password (``password``, ``pin``: :func:`rage.sensitive.password_name`), whose value is
    secret whatever its shape: ``Summer@2024``, ``2024.12.25``."""
    if value.startswith(b"$"):
        return _EVIDENCE.fullmatch(value) is not None
    if password:
        return False
    if _EVIDENCE.fullmatch(value) is not None or _CAMEL_NAME.fullmatch(value) is not None:
        return True
    if (url := _PLAIN_URL.fullmatch(value)) is not None:
        from urllib.parse import unquote

        return url[1] is None or not token_shaped(unquote(url[1].decode("utf-8", "replace")))
    fields = value.split(b"|")
    return len(fields) >= 3 and all(_RECORD_FIELD.fullmatch(f) for f in fields)


# a value that is a pair of its own (`connection authorized: user=postgres`): the pair's
# name decides, which the scan reads next
_PAIR = compiled(rb"[a-z_][a-z_]{1,31}=[^=\s]")
# a constant's name: no token is one word of capitals (a password can be: names of
# passwords are not asked)
_CONSTANT = compiled(rb"[A-Z][A-Z_]{1,15}")


def a_word(key: bytes, value: bytes, password: bool) -> bool:
    """Not a value: a constant's name under a generic secret word (Hadoop's
    ``(auth:SIMPLE)``), or a pair of another name (PostgreSQL's ``connection authorized:
    user=postgres``), under a name that is not a password's."""
    if password:
        return False
    return _PAIR.match(value) is not None or (
        key.lower() in _WEAK_KEYS and _CONSTANT.fullmatch(value) is not None)


# the words of a sentence, not a value: an article before more words (openssl.cnf's
# `challengePassword = A challenge password`)
_ARTICLE = compiled(rb"(?:a|an|the|A|An|The)[ \t]+[A-Za-z]")


def sentence_after(buf: bytes, vs: int) -> bool:
    """Does a sentence start at ``vs``, where a value would?"""
    return _ARTICLE.match(buf, vs) is not None
