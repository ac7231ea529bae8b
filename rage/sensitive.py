"""What looks secret by its name, and which values are evidence rather than secrets: shared by
redaction, the environment collector and the recorders (which mask such values before they
reach the run store).

Plain string tests, no regular expressions: the shell wrapper calls this on every recorded
command, where importing ``re`` would cost start-up time.
"""

from __future__ import annotations

# Words that make a name (environment variable, config key, JSON field, header) secret
# wherever they occur in it.
LOCAL_PASSWORD_WORDS = ("passwort", "kennwort", "senha", "contrasena", "wachtwoord", "haslo",
                        "losenord", "sifre")
_WORDS = (
    "token", "secret", "password", "passwd", "passphrase", "pwd", "auth", "cookie",
    "credential", "session", "signature", "bearer", "dsn", "salt", "psk",
    # abbreviations (gitleaks' `creds`), a Vault unseal key, MFA recovery and backup codes
    "creds", "pswd", "pword", "unseal", "recoverycode", "backupcode", "sessid", "passcode",
    # "password" in the languages whose speakers name their settings so (ASCII spellings:
    # German, Portuguese, Spanish, Dutch, Polish, Swedish, Turkish; French in _JOINED)
    *LOCAL_PASSWORD_WORDS,
)
# Parts of names whose value is a secret even when it is a short number (a PIN, a password).
PASSWORD_WORDS: tuple[str, ...] = ("pass", "pwd", "secret", "pin", "psk", "otp", "pswd",
                                   "pword", "recovery_code", "backup_code", "recoverycode",
                                   "backupcode", *LOCAL_PASSWORD_WORDS)
# Compound words, matched with '_' and '-' removed (api_key, API-KEY, apikey...).
_JOINED = ("apikey", "accesskey", "privatekey", "secretkey", "masterkey", "accountkey",
           "storepass", "keypass", "requirepass", "motdepasse",
           # what sshpass -e and smbclient read from the environment
           "sshpass", "smbpass",
           # OAuth: PKCE's code_verifier, OAuth 1.0a's oauth_verifier, the device flow's
           # device_code (not its user_code, which the user is shown to type)
           "codeverifier", "oauthverifier", "devicecode")
# Words that make a name secret only as a whole part of it (DB_PASS, GITHUB_PAT, sig, dbPass,
# storageAccountKey), since as substrings they are everywhere ("passed", "pattern", "signal").
_PARTS = frozenset({"key", "pass", "pgpass", "pat", "sig", "pin", "otp", "mfa", "totp", "pw",
                    "cred"})
# A last part that makes the name describe a secret instead of holding one: KEY_VAULT_NAME,
# PUBLIC_KEY_PATH, --token-file, AUTH_METHOD, SESSION_TIMEOUT, password_min_length, token_type.
_META_LAST = frozenset({
    "name", "names", "path", "paths", "file", "files", "dir", "directory", "method", "methods",
    "type", "types", "timeout", "ttl", "length", "len", "size", "count", "min", "max", "mode",
    "enabled", "disabled", "required", "format", "algorithm", "alg", "expiry", "expires",
    "expiration", "lifetime", "age", "url", "uri", "endpoint", "host", "port",
    "provider", "scope", "scopes", "policy", "version", "kind", "prefix", "env",
    "var", "field", "label", "limit", "interval", "retries", "store", "backend", "helper",
    "command", "cmd", "region", "location", "accessor", "user", "username", "login", "email",
    "sock", "socket", "style", "level", "strategy", "flow", "realm", "audience", "issuer", "hint",
    # what went wrong with one (ExpiredSignatureError, token_invalid)
    "error", "errors", "exception", "warning", "failed", "failure", "invalid", "missing",
    "expired", "mismatch", "refresh", "fail", "fails",
    # what a certificate's extensions name (subjectKeyIdentifier=hash, keyUsage = ...), a
    # time (token_obtained_at), a program (gke-gcloud-auth-plugin=528.0.0-0)
    "identifier", "usage", "at", "plugin", "plugins",
    # a file name, as compilers and test runners print it (auth.c:41, test_auth.py::)
    "c", "h", "cc", "cpp", "hpp", "py", "pyc", "go", "rs", "js", "ts", "java", "rb", "php",
    "yml", "yaml", "json", "toml", "cfg", "ini", "conf", "txt", "log", "md", "sh", "o", "so",
})
_COOKIE_ATTRIBUTES = frozenset({"secure", "httponly", "samesite", "partitioned"})
# ...and these, found in logs of web apps, APIs and ORMs (cookie_domain, api_key_header,
# oauth_callback)
_META_LAST |= {"domain", "domains", "header", "headers", "callback", "callbacks", "samesite",
               "secure", "httponly", "engine", "serializer", "alias", "validators",
               "validator", "comment", "mechanism", "partitioned", "source",
               # where a secret is read from, not the secret (`--password-stdin`,
               # `--passphrase-fd 0`), and what is done with one (`password_encryption`)
               "stdin", "fd", "encryption", "mgmt", "database"}
# A key of data, not of a lock, when its name says which (primary_key, sort_key, cache_key,
# idempotency_key, S3's object_key): the last part is `key` and the one before is one of these.
_DATA_KEYS = frozenset({
    "primary", "foreign", "sort", "partition", "cache", "unique", "composite", "idempotency",
    "lookup", "routing", "shard", "object", "row", "dedup", "dedupe", "cursor", "index",
    "group", "grouping", "join", "natural", "surrogate", "candidate", "range",
})
# Words that hold a secret word but name no secret: the `token` of an ML tokenizer, the
# `auth` of an author or a DNS authority, the `cookie` of cookiecutter
_BENIGN_PARTS = frozenset({
    "tokenizer", "tokenizers", "tokenize", "tokenized", "tokenization", "author", "authors",
    "authored", "authoring", "authority", "authorities", "authoritative", "cookiecutter",
    "secretary", "secretaries",
    # MongoDB's connection options: the database and mechanism that authenticate
    "authsource", "authmechanism", "authmechanismproperties", "authenticationdatabase",
    # OpenSSH's debug output: its monitor's service request (`mm_answer_authserv:`)
    "authserv",
    # what happened, not what was used: PostgreSQL's `connection authorized: user=x`,
    # 802.11's deauthentication (macOS: `DeauthInd:sts:0_rsn:7`)
    "authorized", "unauthorized", "authorised", "unauthorised", "authenticated",
    "unauthenticated", "deauth", "deauthenticated", "deauthentication",
})
# First parts with the same effect: MAX_TOKENS, NUM_KEYS, min_password_length.
_META_FIRST = frozenset({"max", "min", "num", "n", "no", "use", "enable", "disable", "is",
                         "has", "public", "allow", "require", "show", "skip"})
# Names that contain a secret word but are known to hold harmless values.
_HARMLESS_NAMES = frozenset({
    "SSH_AUTH_SOCK", "XDG_SESSION_TYPE", "XDG_SESSION_ID", "XDG_SESSION_CLASS",
    "XDG_SESSION_DESKTOP", "DESKTOP_SESSION", "SESSION_MANAGER", "GPG_AGENT_INFO",
    "KEYTIMEOUT", "PYTHONHASHSEED", "TOKENIZERS_PARALLELISM", "AUTHOR", "AUTHORS",
    "PUBLIC_KEY", "AUTHORITY", "AUTHORIZATION_ENDPOINT", "KEYS", "KEYWORDS",
    "KEYWORD", "WWW-AUTHENTICATE", "PROXY-AUTHENTICATE", "PASS-THROUGH", "PASS_THROUGH",
    "PASSTHROUGH", "PASSTHRU",
})
# the shell's working directories: a path there is evidence, spaces and all (`Pwd=` of an
# ODBC connection string is a password)
_WORKING_DIRS = frozenset({"PWD", "OLDPWD"})
HIDDEN = "[set, {} chars, hidden]"


def name_parts(name: str) -> list[str]:
    """``storageAccountKey`` -> storage, account, key; ``DB_PASS`` -> db, pass (lower-case)."""
    parts: list[str] = []
    cur = ""
    prev = ""
    for ch in name:
        if not ch.isalnum():
            if cur:
                parts.append(cur)
            cur = prev = ""
            continue
        if cur and ch.isupper() and (prev.islower() or prev.isdigit()):
            parts.append(cur)
            cur = ""
        cur += ch
        prev = ch
    if cur:
        parts.append(cur)
    return [p.lower() for p in parts]


def looks_secret_name(name: str) -> bool:
    """True when a variable or key called ``name`` probably holds a secret."""
    if name.upper().strip("-") in _HARMLESS_NAMES:
        return False
    parts = [p for p in name_parts(name) if p not in _BENIGN_PARTS]
    if not parts:
        return False
    low = "".join(parts)
    joined = any(w in low for w in _JOINED)
    secret = joined or any(w in low for w in _WORDS) or any(p in _PARTS for p in parts)
    if not secret:
        return False
    if len(parts) > 1 and parts[-1] in ("key", "keys") and parts[-2] in _DATA_KEYS:
        return False  # sort_key=created_at
    if len(parts) > 1 and parts[-2:] == ["key", "id"] and not joined:
        return False  # kms_key_id: which key, not the key (aws_access_key_id stays)
    # a name that describes a secret (its length, file, type) does not hold one; a cookie's
    # attributes describe a cookie, not a password (`password_super_secure = "x"`)
    meta_last = parts[-1] in _META_LAST and not (parts[-1] in _COOKIE_ATTRIBUTES
                                                 and password_name(name))
    return not (len(parts) > 1 and (meta_last or parts[0] in _META_FIRST))


_HEX = frozenset("0123456789abcdefABCDEF")
_BOOLS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "none", "nil",
                    "enabled", "disabled", "undefined", "",
                    # YAML's null, empty maps and lists, "unset"; SQL's parameters
                    "~", "{}", "[]", "-", "?", "%s"})


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _plain_parameter(inner: str) -> bool:
    """``${inner}`` names a variable and carries no literal of its own: ``${NAME}``,
    ``${NAME:?message}``, or a default that is empty or another variable (``${A:-$B}``).
    ``${DB_PASSWORD:-hunter2}`` is not a placeholder: its default is the secret."""
    n = 0
    while n < len(inner) and inner[n] in _NAME_CHARS:
        n += 1
    if not n or inner[0].isdigit():
        return False
    rest = inner[n:]
    if not rest:
        return True  # ${NAME}
    rest = rest.removeprefix(":")
    if rest[:1] == "?":
        return True  # ${NAME:?message}: the message is said when NAME is unset
    if rest[:1] not in ("-", "="):
        return False  # ${NAME:+alt}, ${NAME#x}, ${NAME/x/y}: text of their own
    default = rest[1:]
    if not default:
        return True
    if default.startswith("${") and default.endswith("}"):
        return _plain_parameter(default[2:-1])
    return default.startswith("$") and _plain_parameter(default[1:])


def password_name(key: str) -> bool:
    """A name whose value is a secret even when it is a short number: a PIN, a numeric
    password (``SIM_PIN``, ``--password``, ``db.pass``, ``DB_PW``: ``pw`` as a part)."""
    k = key.lower()
    return any(w in k for w in PASSWORD_WORDS) or "pw" in name_parts(key)


def working_dir(name: str, value: str) -> bool:
    """``PWD=/Users/alice/My Projects``: the shell's working directory, not a password."""
    return name.upper() in _WORKING_DIRS and value.startswith(("/", "~"))


# SASL's and the mail protocols' authentication mechanisms, and IMAP's states (imaplib's
# command table: `'AUTHENTICATE': ('NONAUTH',)`): names, not credentials
_AUTH_WORDS = frozenset({
    "PLAIN", "LOGIN", "CRAM-MD5", "DIGEST-MD5", "XOAUTH2", "OAUTHBEARER", "GSSAPI", "NTLM",
    "EXTERNAL", "ANONYMOUS", "SCRAM-SHA-1", "SCRAM-SHA-256", "TLS", "SSL", "NONAUTH", "AUTH",
    "SELECTED", "LOGOUT"})
_FILE_EXTENSIONS = frozenset({
    "pem", "key", "crt", "cer", "der", "csr", "p12", "pfx", "jks", "keystore", "gpg", "asc",
    "kdbx", "txt", "ini", "conf", "cfg", "json", "yaml", "yml", "toml", "env", "properties",
    "xml", "pub", "ppk", "ovpn"})


def _file_name(v: str) -> bool:
    """A file's name with an extension that keys, certificates and settings are kept in."""
    stem, dot, ext = v.rpartition(".")
    return bool(dot and stem) and ext.lower() in _FILE_EXTENSIONS and len(v) <= 128 and all(
        c.isalnum() or c in "._-" for c in stem)


def _pyformat(v: str) -> bool:
    """A statement's placeholder: ``%(pw)s``, or ``%(pw`` where a value stopped at the
    parenthesis."""
    name = v[2:].partition(")")[0]
    return v.startswith("%(") and name.isidentifier() and v[2 + len(name):] in (
        "", ")", ")s", ")d", ")r")


def looks_harmless_value(value: str, key: str = "") -> bool:
    """Values that are evidence, not secrets, even under a secret-looking name: numbers,
    booleans, paths and placeholders (``${X}``, ``$X``, ``%X%``, ``<X>``, ``***``), and what
    another tool already hid (Rails' ``[FILTERED]``). A number is evidence only if ``key``,
    the name it is the value of, is not a password's (:func:`password_name`): 4096 under
    MAX_TOKENS is a limit, 482913 under SIM_PIN the PIN."""
    v = value.strip().strip("\"'")
    if v.lower() in _BOOLS:
        return True
    if v.replace(".", "", 1).lstrip("-+").isdigit() and len(v) <= 12:
        return not password_name(key)
    if working_dir(key, v):
        return True
    if _pyformat(v):
        return True  # a statement's placeholder: `password = %(pw)s`
    if v.upper() in _AUTH_WORDS and "auth" in key.lower() and not password_name(key):
        return True  # `preferred_auths = ['CRAM-MD5', 'PLAIN']`, `auth: ["LOGIN"]`
    if _file_name(v):
        return True  # `-key k.pem`, `--auth-user-pass creds.txt`: where a secret is kept
    if v.startswith(("...", "\u2026")) or not v.strip("=-_~#*"):
        return True  # an elision (`{'Authorization': ...}`), a ruler (`session] =====`), a
        # mask (`password: **`, a dump's characters rage.redact.hexdump masked)
    if v.startswith("${") and not v.startswith("${{"):
        return v.endswith("}") and _plain_parameter(v[2:-1])
    if v.startswith(("${{", "$(", "{{", "%", "<", "[REDACTED", "[FILTERED", "[MASKED", "[HIDDEN",
                     "***")) and v.endswith(
            ("}", ")", "%", ">", "]", "*")):
        return True
    if v.startswith("$") and len(v) > 1 and v[1:].replace("_", "").isalnum() and (
            v[1:].upper() == v[1:] or (v[1].isalpha() and looks_secret_name(v[1:]))):
        # $DB_PASSWORD; `-p$password`, `-storepass $storepass`: a shell variable named for
        # the secret, as a script or a make recipe is echoed before it runs (a password of
        # `$` and letters alone would rarely also be a secret's name)
        return True
    return v.startswith(("/", "~/", "./", "../")) and " " not in v and "@" not in v


def looks_id_value(value: str) -> bool:
    """Hashes (7 to 128 hex digits of one case, as git and digests print them) and UUIDs:
    evidence under an ordinary name (GIT_COMMIT, BUILD_ID). Under a secret name they are
    still secrets (many API keys are hex or UUIDs)."""
    v = value.strip()
    if 7 <= len(v) <= 128 and all(c in _HEX for c in v) and (v.lower() == v or v.upper() == v):
        return True
    return is_uuid(v)


def is_uuid(v: str) -> bool:
    parts = v.split("-")
    return [len(p) for p in parts] == [8, 4, 4, 4, 12] and all(
        c in _HEX for p in parts for c in p)


def masked_environ(environ: dict[str, str]) -> dict[str, str]:
    """A copy of ``environ`` whose secret-named values are replaced by a length marker
    (numbers, booleans, paths, placeholders, hashes and UUIDs are kept: they are evidence)."""
    return {k: (HIDDEN.format(len(v)) if looks_secret_name(k) and not looks_harmless_value(v, k)
                else v)
            for k, v in environ.items()}
