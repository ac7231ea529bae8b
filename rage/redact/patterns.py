"""What the redaction engine looks for: known secret formats and key/value shapes.

Every pattern here is a bytes regex that never crosses a newline (private key blocks are the
one multi-line shape and have their own pattern). Each alternative names the literal
*triggers* one of which every match must contain: the engine only runs the combined regex
over lines where a trigger occurs, which is what keeps it fast (see rage/redact.py).

Generic "high entropy" detection is deliberately absent: git SHAs, UUIDs, digests and
base64 blobs are everywhere in logs and are not secrets. Secrets are found by a precise
provider format or by the name they are stored under (``password=...``).
"""

from __future__ import annotations

import re

from rage.errors import ConfigError

# Provider token formats are data, in rage/redact/formats.py (compiled by
# rage/redact/catalogue.py); this module holds the key/value, header, URL and key-block rules.

# Words that make a name look secret; a superset prefilter for
# rage.sensitive.looks_secret_name, which has the final say on every candidate key.
SECRET_WORDS: tuple[bytes, ...] = (
    b"token", b"secret", b"passw", b"pwd", b"key", b"auth", b"cookie", b"credential",
    b"session", b"signature", b"bearer", b"dsn", b"salt", b"pass", b"psk",
    # short words only where they are a whole part of the name (GITHUB_PAT, &sig=, DB_PIN):
    # as plain substrings they are in every path and signal
    b"_pat", b"-pat", b"pat=", b"pat\"", b"sig=", b"sig\"", b"_sig", b"_pin", b"-pin", b"pin_",
    b"pin=",
    # abbreviations and codes (rage.sensitive._WORDS); `pw` only as a whole part, as `pin`
    b"creds", b"pswd", b"pword", b"unseal", b"recovery_code", b"backup_code", b"recoverycode",
    b"backupcode", b"_pw", b"-pw", b"pw_", b"pw=", b"pw:", b"pw\"", b"pw'",
    # "password" in other languages (rage.sensitive.LOCAL_PASSWORD_WORDS; `Passwort` and
    # `mot_de_passe` hold `pass`)
    b"kennwort", b"senha", b"contrase", b"wachtwoord", b"haslo", b"losenord", b"sifre",
    # ...and as a YAML or quoted key (`pin: 1234`, `'sig': ...`, `"pin":`); not `sig:`,
    # which logs write before a signal (`sig: SIGTERM`)
    b"pat:", b"pin:", b"pin\"", b"pat'", b"pin'", b"sig'",
    # one-time codes and their seeds (`otp=`, `MFA_CODE`, `TOTP_SEED`), PHP's session cookie
    # (`PHPSESSID`), a credential's short name (`DB_CRED`)
    b"otp=", b"otp:", b"otp\"", b"otp'", b"_otp", b"otp_", b"totp", b"mfa_", b"_mfa", b"mfa=",
    b"sessid", b"_cred", b"cred_", b"cred=",
    # OAuth's code_verifier, oauth_verifier and device_code (rage.sensitive._JOINED)
    b"verifier", b"device_code", b"devicecode", b"device-code",
)

_KEY = (rb"[A-Za-z0-9_.\-]{0,64}?(?i:" + b"|".join(dict.fromkeys(
    w.strip(b"=\"_-") for w in SECRET_WORDS)) + rb")[A-Za-z0-9_.\-]{0,64}")
_QUOTED = rb"\"(?:[^\"\\\r\n]++|\\.){0,4096}\"|'[^'\r\n]*+'"
# a Python literal with its prefix, as a dict's repr prints it: `'password': b'x'` (botocore's
# debug log prints every header so, `'X-Amz-Security-Token': b'...'`), `r'x'`, `rb"x"`
# (and a string literal of Objective-C, `@"x"`, and C++'s wide and UTF-8 ones, `L"x"`)
_PY_QUOTED = rb"(?:[bB][rR]?|[rR][bB]?|[uU]8?|L|@)(?:" + _QUOTED + rb")"
# a quoted value whose line was cropped before its closing quote: a rich panel (a traceback's
# source lines and locals, typer's default) fills the line up to its border, or ends the value
# with an ellipsis (`password = 'Zq8s3c… │`); any other cut (`cut -c`) leaves a long run of
# token characters at the line's end. Not a quote that closes a string around the key
# (`prompt='Password: ', stream=None):`), which neither crop nor run ends
_CROP = (rb"(?=(?:\xe2\x80\xa6)? ?\xe2\x94[\x82\x83][^\r\n]{0,64}\r?(?:\n|\Z)"
         rb"|\xe2\x80\xa6[ \t]*\r?(?:\n|\Z))")
_CROPPED = (rb"\"(?:[^\"\\\r\n]|\\.){0,4095}?[^\s\"\\]" + _CROP + rb"|'[^'\r\n]{0,4095}?[^\s']"
            + _CROP + rb"|[\"'][^\s\"'\\]{16,4096}(?=\r?(?:\n|\Z))")
# a placeholder is one piece of an unquoted value, spaces and closing brackets included
# (tried only at a `$` or `{`: tried first, it was tried at every byte of every value):
# `${DB_PASSWORD}`, `${{ secrets.PW }}`, `{{ .Values.token }}`, `$(cat /run/secrets/t)`
# (rage.sensitive.looks_harmless_value then keeps it, unless it holds a default of its own)
_PLACEHOLDER = (rb"\$\{\{[^}\r\n]{0,256}\}\}|\{\{[^}\r\n]{0,256}\}\}|\$\{[^{}\r\n]{0,256}\}"
                rb"|\$\([^()\r\n]{0,256}\)")
# an unquoted value stops at whitespace, quotes and brackets; at `,` `;` `&` only when what
# follows starts another field (`&page=2`, `, user`, `,"mfa":` of a JSON line) or ends it,
# so `p=a;b&c` goes whole, and `p=n3cl0;RO4h=;tz0RE%` (a field has a value: `RO4h=` then `;`
# is the password's)
# (Azure SAS `&sig=...`); never starts at an existing placeholder, so redacting twice changes
# nothing
_BARE = (rb"(?!\[REDACTED)(?:[^\s,;&\"'<>)\]}\\${]++|" + _PLACEHOLDER + rb"|[${]"
         rb"|[,;&](?![A-Za-z0-9_.\-]{1,64}(?:=(?![\s,;&]|\Z)|:)"
         rb"|[\"'][A-Za-z0-9_.\-]{1,64}[\"'][ \t]*[=:]"
         rb"|[\s,;&]|\Z)){1,4096}")
_REST = rb"(?!\[REDACTED)[^\s\"'][^\r\n]{0,8190}"
# A password prompt and what was typed after it, echoed (a prompt that does not turn echo off,
# `read` in a script, a pasted transcript): git's `Password for 'https://u@host': `, sudo's
# `[sudo] password for u: `, ssh's `Enter passphrase for key '/p': `, psql's `Password for
# user u: `, curl's `Enter host password for user 'u': `, openssl's `Enter PEM pass phrase: `,
# Django's `Password (again): `. At a line's start, after at most four words (`Enter host`,
# `Verifying - Enter PEM`), so a log's prose (`... reset the password for bob: done`) is none
PROMPT_LEAD = rb"(?m:^)[ \t]*(?:[^\s:=\"']{1,32}[ \t]+){0,4}"
# what it is for: one to three words, quoted or not (`for key '/p'`, `for user u`)
_PROMPT_FOR = (rb"(?: (?:for|of)(?: (?:'[^'\r\n]{1,256}'|\"[^\"\r\n]{1,256}\"|[^\s'\"]{1,256}))"
               rb"{1,3})")
PROMPT_KEY = (rb"(?i:pass(?:word|phrase|code)(?:" + _PROMPT_FOR + rb"| \(again\))|pass phrase"
              + _PROMPT_FOR + rb"?)")
# its literals, one of which every prompt holds (the line is then a start, mode LINE)
PROMPT_TRIGGERS: tuple[bytes, ...] = (
    *(w + s for w in (b"password", b"passphrase", b"passcode")
      for s in (b" for ", b" of ", b" (again)")), b"pass phrase")

# a key starts after a non-name byte, or after an escape written out in a dump (`\r\nToken:`);
# not after `${`, where a name is a shell parameter's (`${TOKEN:?set TOKEN}`)
_LB = rb"(?:(?<![A-Za-z0-9_.\-\\])(?<!\$\{)|(?<=\\[rnt]))"
# `=`, `:`, the assignments of code: `=>`, `.=`, `?=`, `:=`, `+=`, and its comparisons with
# a literal (`if (db_pass !== "x")`): `==`, `===`, `!=`, `!==`
_SEP = rb"[ \t]*(?:===?|!==?|=>|[.?:+]=|[:=])[ \t]*"

# a mechanism named after AUTH (FTP's `AUTH TLS`, SMTP's `AUTH LOGIN`), which is no password
_MECHANISM = (rb"\"?(?i:tls|ssl|login|plain|cram-md5|digest-md5|xoauth2|oauthbearer|gssapi|"
              rb"ntlm|external|anonymous|scram-sha-[0-9]{1,3}(?:-plus)?)\"?(?:[ \t\r]|\Z|$)")

# (name, regex): `k` is the key group, `v` the value group; the engine renames them per
# alternative. Order matters: at one position the first alternative that matches wins.
# Alternatives named "forced-*" redact their value whatever the key (the shape says secret).
KEY_VALUE_FORMS: tuple[tuple[str, bytes], ...] = (
    # wget -d: `Setting --password (password) to VALUE`, each option it was given
    ("wget-setting", rb"(?<=Setting )--(?P<k>" + _KEY + rb") \([A-Za-z0-9_]{1,64}\) to "
     rb"(?P<v>" + _REST + rb"|(?=\r?(?:\n|\Z)))"),  # an empty one: nothing to take
    # `--token VALUE`, `--password=VALUE` on command lines; and a long option spelled with
    # one dash (`-storepass X` of keytool and jarsigner, influx's `-password X`, x11vnc's
    # `-passwd X`), as argv's rules take it
    ("cli-arg", rb"(?<![A-Za-z0-9_\-])--?(?P<k>" + _KEY + rb")(?:=|[ \t]+)(?P<v>(?!-)(?:"
     + _QUOTED + rb"|" + _BARE + rb"))"),
    # `<add key="ClearTextPassword" value="..."/>`, `{"name": "X_TOKEN", "value": "..."}`
    # and `("API_TOKEN", "value")`: the name is in one field, the value in the next
    ("pair", rb"(?:(?<=[=:])|(?<=[=:][ \t]))(?P<k>[\"']" + _KEY + rb"[\"'])[ \t]*,?[ \t]*"
     rb"[\"']?(?i:value|val|secret)[\"']?[ \t]*[=:][ \t]*(?P<v>" + _QUOTED + rb"|" + _BARE
     + rb")"),
    ("call", rb"(?:(?<=\()|(?<=\( ))(?P<k>[\"']" + _KEY + rb"[\"'])[ \t]*,[ \t]*(?P<v>"
     + _QUOTED + rb")"),
    # XML: `<password>...</password>`, `<Password type="x">...<`
    ("xml", rb"<(?P<k>" + _KEY + rb")(?:[ \t][^<>\r\n]{0,512})?>(?P<v>[^<\r\n]+)</"),
    # escaped JSON inside a JSON string: `\"password\": \"value\"`
    # (and JSON escaped twice or more: `\\\"password\\\": \\\"x\\\"`, a log inside a log)
    ("escaped-json", rb"(?<=\\\")(?P<k>" + _KEY + rb")(?:\\\\)*\\\"[ \t]*:[ \t]*"
     rb"(?P<v>(?:\\\\)*\\\"(?:[^\"\\\r\n]|\\[^\"\r\n])*?(?:\\\\)*\\\"|[^\s,}\\\"]+)"),
    # LDIF: `userPassword:: <base64>`
    ("ldif", rb"(?m:^)(?P<k>" + _KEY + rb")::[ \t]*(?P<v>[A-Za-z0-9+/]{4,}={0,2})"),
    # a line that is only `key: value` (YAML, HTTP headers): the value is the rest of the
    # line, spaces included (`KEY=a b` is not a shell or .env assignment of "a b")
    ("line", rb"(?m:^)[ \t]*(?:- )?(?P<k>[\"']?" + _KEY + rb"[\"']?)[ \t]*:[ \t]*"
     rb"(?P<v>" + _QUOTED + rb"|" + _PY_QUOTED + rb"|" + _CROPPED + rb"|" + _REST + rb")"),
    # csh `setenv NAME value`, `set -x NAME value` (fish)
    ("setenv", rb"(?:(?<=setenv )|(?<=setenv\t)|(?<=set -x )|(?<=set -gx ))(?P<k>" + _KEY
     + rb")[ \t]+(?P<v>" + _QUOTED + rb"|" + _BARE + rb")"),
    # a string constructed from a literal: C++'s `std::string secret("x");`, `QString`
    ("ctor", rb"(?<=[sS]tring[ \t])(?P<k>" + _KEY + rb")\((?P<v>" + _QUOTED + rb")\)"),
    # `key=value`, `"key": "value"`, `$key .= 'v'` anywhere in a line
    ("inline", _LB + rb"(?P<k>[\"']?" + _KEY + rb"[\"']?)\]?" + _SEP
     + rb"(?P<v>" + _QUOTED + rb"|" + _PY_QUOTED + rb"|" + _CROPPED + rb"|" + _BARE + rb")"),
    # .netrc: `machine h login u password p` (one line or one keyword per line)
    ("forced-netrc", rb"(?<![A-Za-z0-9_\-])(?P<k>password|passwd)[ \t]+"
     rb"(?P<v>(?!\[REDACTED)[^\s\"']\S*|" + _QUOTED + rb")"),
    # SQL: `PASSWORD 'x'`, `IDENTIFIED BY 'x'`, `PASSWORD = 'x'`
    # (MySQL: `SET PASSWORD FOR 'u'@'h' = 'x'`, `IDENTIFIED WITH plugin BY 'x'`)
    ("forced-sql", rb"(?<![A-Za-z0-9_\-])(?P<k>(?i:set[ \t]+password[ \t]+for[ \t]+[^\s=]{1,256}"
     rb"|password|identified(?:[ \t]+with[ \t]+[A-Za-z0-9_]{1,64})?[ \t]+by))"
     rb"(?:[ \t]*=[ \t]*|[ \t]+)"
     rb"(?P<v>'(?:[^'\r\n]|'')*'|\"[^\"\r\n]*\")"),
    # a server's configuration word and its password (redis.conf, `CONFIG SET`, HAProxy's
    # userlist); not the commented example of redis.conf (`# requirepass foobared`)
    ("forced-config-word", rb"(?<![A-Za-z0-9_\-])(?<!# )(?P<k>(?i:requirepass|masterauth"
     rb"|insecure-password))[ \t]+(?P<v>(?!\[REDACTED)[^\s\"']+|" + _QUOTED + rb")"),
    # .pgpass: `host:port:database:user:password`, the whole line
    ("forced-pgpass", rb"(?m:^)(?P<k>[A-Za-z0-9_.\-*\[\]]{1,253}:(?:\d{1,5}|\*):[^:\s]{1,256}:"
     rb"[^:\s]{1,256}:)(?P<v>\S+)\r?(?=\n|\Z)"),
    # GitHub Actions: `::add-mask::VALUE` registers VALUE as a secret (a script's xtrace, or
    # a local runner, prints it before the runner can mask it)
    ("forced-add-mask", rb"(?P<k>::add-mask::)(?P<v>(?!\[REDACTED)[^\s\"']+)"),
    # Redis: `AUTH [user] password` at a redis-cli prompt, `"AUTH" ["user"] "password"` in
    # MONITOR's log
    ("forced-redis-auth", rb"(?P<k>(?:> |\] )\"?(?i:auth)\"?(?:[ \t]+\"?[A-Za-z0-9_.@\-]{1,64}"
     rb"\"?(?=[ \t]+\S))?)[ \t]+(?P<v>(?!" + _MECHANISM + rb")\"(?:[^\"\\\r\n]++|\\.)+\""
     rb"|(?!" + _MECHANISM + rb")[^\s\"']+)"),
    # Oracle: `CONNECT user/password@db` in SQL*Plus, `sqlplus [-S] user/password@db`
    ("forced-oracle", rb"(?P<k>(?:(?:(?<![^\n])|(?<=SQL> ))(?i:conn(?:ect)?)"
     rb"|(?i:sqlplus)(?:[ \t]+-[A-Za-z]+)*)[ \t]+\"?[A-Za-z][A-Za-z0-9_$#.]{0,127}\"?/)"
     rb"(?P<v>(?!\[REDACTED)[^\s@/\"']+)"),
    # PowerShell: `ConvertTo-SecureString "x" -AsPlainText`, the password in plain text
    ("forced-securestring", rb"(?P<k>(?i:convertto-securestring)[ \t]+(?:-String[ \t]+)?)"
     rb"(?P<v>\"[^\"\r\n]+\"|'[^'\r\n]+')"),
    # curl -v: `* Server auth using Basic with user 'TOKEN'`, the user a token given as one
    # (`curl -u TOKEN:`); the handler keeps a name (values.token_shaped)
    ("forced-curl-user", rb"(?P<k>\* Server auth using [A-Za-z0-9\-]{1,32} with user ')"
     rb"(?P<v>(?!\[REDACTED)[^'\r\n]+)(?=')"),
    # `password%3Dvalue`: a query string inside another one (a redirect, an OAuth callback),
    # the value up to the next encoded field (`%26`); last, tried only where no other form
    # matched (before "inline" it cost 3% of a log full of secret words)
    ("url-encoded", _LB + rb"(?P<k>" + _KEY + rb")%3[Dd](?P<v>(?!\[REDACTED)"
     rb"(?:[^\s&\"'<>%]++|%(?!26|3[Dd])[0-9A-Fa-f]{2})+)"),
    # Bundler: `BUNDLE_<HOST>=user:password`, a gem server's credentials (its host, dots as
    # `__`, in the name): the password
    ("forced-bundler", rb"(?<![A-Za-z0-9_])(?P<k>(?i:bundle_)[A-Za-z0-9_]{0,128}__"
     rb"[A-Za-z0-9_]{1,128}=[\"']?[^\s:\"']{1,256}:)(?P<v>(?!\[REDACTED)[^\s\"']+)"),
    # mail protocols as their clients' debug output shows them (smtplib, poplib, imaplib):
    # SASL's `AUTH PLAIN <base64 of user and password>` (and XOAUTH2, OAUTHBEARER: a token),
    # `PASS x` (POP3, FTP) after the client's own mark, IMAP's `TAG LOGIN user "x"`
    ("forced-sasl", rb"(?P<k>(?<![A-Za-z0-9_])(?i:auth(?:enticate)?)[ \t]+"
     rb"(?i:plain|xoauth2|oauthbearer)[ \t]+)(?P<v>(?!\[REDACTED)[A-Za-z0-9+/]{8,}={0,2})"),
    ("forced-pass-command", rb"(?P<k>(?:(?<=> )|(?<=\*cmd\* ')|(?<=send: ')|(?<=send: b')"
     rb"|(?<=C: ))PASS )(?P<v>(?!\[REDACTED)[^\s'\\]+)"),
    ("forced-imap-login", rb"(?P<k>> b'[A-Za-z0-9]{1,16} (?i:login) (?:\"(?:[^\"\\\r\n]|\\.)"
     rb"{1,256}\"|[^\s\"'\\]{1,256}) )(?P<v>\"(?:[^\"\\\r\n]++|\\.)+\"|[^\s\"'\\]+)"),
    # Redis ACL: `ACL SETUSER alice on >password ~* +@all`, the password after `>`
    ("forced-redis-acl", rb"(?P<k>(?i:acl)[ \t]+(?i:setuser)[ \t]+\S{1,128}"
     rb"(?:[ \t]+[^\s>]\S{0,256}){0,16}[ \t]+>)(?P<v>(?!\[REDACTED)[^\s\"']+)"),
    # a password prompt and the answer echoed after it (see PROMPT_KEY)
    ("forced-prompt", PROMPT_LEAD + rb"(?P<k>" + PROMPT_KEY + rb")[ \t]*:[ \t]+(?P<v>" + _REST
     + rb")"),
    # HTTP Basic credentials without a header name in front of them (httpx's `_auth_header`,
    # nginx's `proxy_set_header Authorization "Basic X";`): the base64 of `user:password`,
    # which the handler decodes to be sure (`basic authentication` is prose)
    ("basic", rb"(?<![A-Za-z0-9_\-])(?i:basic)[ \t]+(?P<v>(?!\[REDACTED)"
     rb"[A-Za-z0-9+/]{8,4096}={0,2})(?![A-Za-z0-9+/=_\-])"),
    # a bearer token without a header name in front of it
    ("bearer", rb"(?<![A-Za-z0-9_\-])(?i:bearer)[ \t]+(?P<v>(?!\[REDACTED)"
     rb"[A-Za-z0-9._~+/\-]{8,4096}=*)"),
)
# literals that trigger the shapes above that hold no secret word of their own
FORM_TRIGGERS: tuple[bytes, ...] = (b"identified by", b"::add-mask::", b"> auth", b'] "auth"',
                                    b"connect ", b"conn ", b"sqlplus ",
                                    b"convertto-securestring", b"identified with",
                                    b"set password for ", b"requirepass", b"masterauth",
                                    b"insecure-password", b"bundle_", b"acl setuser",
                                    b"basic ",
                                    *(a + m for a in (b"auth ", b"authenticate ")
                                      for m in (b"plain ", b"xoauth2 ", b"oauthbearer ")))
# ...and those whose case is the protocol's (a command, a client's debug mark)
FORM_TRIGGERS_CS: tuple[bytes, ...] = (b"PASS ", b"> b'", b"* Server auth using ")
# ...and `=` URL-encoded (mode IDENT: the name before it is the start), for the "url-encoded"
# form: not a key separator of the scans, whose expression for a secret word and its
# separator it slowed by 4-5% on a log full of those words
ENCODED_TRIGGERS: tuple[bytes, ...] = (b"%3d",)
# ...and those that start their line (mode LINE: the line start is a candidate)
LINE_TRIGGERS: tuple[bytes, ...] = (b":5432:", b":*:")
# ...and the short words as a whole name with blanks before the separator (`pin = 1234`,
# `PAT = x` of an INI or TOML file), as `pin=` and `pin:` are without (mode SHORT)
SHORT_SPACED: tuple[bytes, ...] = (b"pin ", b"pin\t", b"pat ", b"pat\t", b"otp ", b"otp\t",
                                  b"pw ", b"pw\t")

# userinfo up to the last "@" of the authority: passwords may contain an unencoded "@"
URL_CREDENTIALS = rb"[A-Za-z][A-Za-z0-9+.\-]{0,30}://(?P<v>[^\s/?\"'<>]{1,1024})@"

# Multi-line: a whole private key block, BEGIN to END. Without an END (a truncated log) the
# header and the lines that look like key material (base64, armor headers) go.
PRIVATE_KEY_BEGIN = b"-----BEGIN"
# (and OpenVPN's static key, the `tls-auth`/`tls-crypt` secret of a .ovpn profile)
_KEY_LABEL = rb"(?:[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?| OpenVPN Static key V1)-----"
PRIVATE_KEY = (
    rb"-----BEGIN" + _KEY_LABEL
    + rb"(?:[\s\S]*?-----END" + _KEY_LABEL +
    rb"|[A-Za-z0-9+/= \t]*(?:(?:\r?\n|\\r?\\n)"
    rb"(?:[A-Za-z0-9+/= \t]*|[A-Za-z][A-Za-z\-]{0,30}: [^\r\n\\]*)(?=\r?\n|\\r?\\n|\Z))*)"
)
PRIVATE_KEY_MAX = 1024 * 1024  # bytes a block may span (real keys: < 20 KiB); a stream keeps
# this much lookahead while a block is open

# Values under a secret name that carry no secret (and would only hide useful facts).
HARMLESS_VALUES = frozenset({
    b"", b"true", b"false", b"null", b"none", b"nil", b"yes", b"no", b"on", b"off",
    b"0", b"1", b"***", b"<redacted>", b"redacted", b"*", b"undefined", b"enabled",
    b"{", b"[", b"(",  # what opens a JSON object, list or tuple: the value is inside
    # a package's architecture (`libsecret-1-0:amd64` in dpkg -l, apt)
    b"amd64", b"arm64", b"i386", b"armhf", b"armel", b"ppc64el", b"s390x", b"riscv64",
    b"x86_64", b"aarch64", b"noarch", b"mips64el", b"all",
    b"disabled", b"|", b">", b"|-", b">-", b"|+", b">+",
    # where keytool reads it from: `-storepass:env VAR`, `-keypass:file PATH`
    b"env", b"file",
})

# HTTP auth schemes kept in front of a redacted Authorization value.
AUTH_SCHEMES = frozenset({
    b"bearer", b"basic", b"token", b"digest", b"negotiate", b"ntlm", b"bot", b"aws4-hmac-sha256",
})
# ...those whose credential is one word (token68); Digest's and AWS's are parameter lists
TOKEN_SCHEMES = frozenset({b"bearer", b"basic", b"token", b"negotiate", b"ntlm", b"bot"})

# User and host names that are shared words or system accounts, not personal data; replacing
# them would mangle text ("root cause", "/root", "test") for no privacy gain.
COMMON_NAMES = frozenset({
    "root", "admin", "administrator", "user", "users", "ubuntu", "debian", "fedora", "centos",
    "runner", "vagrant", "guest", "test", "build", "builder", "docker", "node", "app", "home",
    "server", "host", "localhost", "localdomain", "default", "nobody", "daemon", "jenkins",
    "git", "www-data", "ec2-user", "dev", "worker", "linux", "container", "sandbox", "shared",
})
MIN_NAME_LEN = 3


def compile_custom(pattern: str) -> re.Pattern[bytes]:
    """Compile a user's redaction regex; :class:`ConfigError` when invalid or empty-matching."""
    try:
        re.compile(pattern)
        compiled = re.compile(pattern.encode("utf-8"))
    except re.error as e:
        raise ConfigError(f"invalid redact pattern {pattern!r}: {e}") from None
    if compiled.fullmatch(b"") is not None:
        raise ConfigError(f"redact pattern {pattern!r} matches the empty string")
    return compiled
