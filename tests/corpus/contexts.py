"""Where secrets appear: the contexts real tools print them in.

``TOKEN_CONTEXTS``: templates for a provider token (``{t}`` the planted text, ``{V}`` an
environment-style name for it, ``{v}`` a config-style name); some name the secret, most do
not (a log sentence, a traceback argument, a URL path), so the format alone must be known.

``STRUCTURAL``: shapes that the key=value rules do not parse (XML, .netrc, SQL, YAML block
scalars, Kubernetes name/value pairs...), each holding a generated password.

``ARGV``: command lines that carry a secret as an argument (as the recorder stores them).
"""

from __future__ import annotations

import base64
import random
import re
from collections.abc import Callable
from urllib.parse import quote

from tests.corpus.secrets import ALNUM, HEX, r

E = "\x1b"

TOKEN_CONTEXTS: dict[str, str] = {
    "bare": "{t}",
    "log-sentence": "2026-12-02T10:15:32Z INFO client: loaded credential {t} from cache",
    "env-export": "export {V}={t}",
    "dotenv-quoted": '{V}="{t}"',
    "json": '{{"{v}": "{t}", "region": "eu-west-1"}}',
    "json-list": '{{"args": ["--verbose", "{t}"], "retries": 3}}',
    "yaml": "  {v}: {t}",
    "traceback-arg": "    client = Client('{t}', timeout=30)",
    "exception-message": "ValueError: invalid credential '{t}' for account 18842",
    "python-repr": "call(('{t}',), {{'retries': 3}})",
    "url-query": "GET https://api.example.com/v1/items?page=2&access_token={t} HTTP/1.1",
    "url-path": "POST https://relay.example.com/forward/{t}/events -> 502",
    "cli-flag": "$ acme deploy --region eu-west-1 --token {t} --yes",
    "cli-flag-eq": "+ acme login --api-key={t}",
    "http-header": "Authorization: Bearer {t}",
    "x-header": "X-Api-Key: {t}",
    "ansi-color": E + "[32m{t}" + E + "[0m",
    "grep-color": "config/prod.env:3:{V}=" + E + "[01;31m" + E + "[K{t}" + E + "[m" + E + "[K",
    "ansi-label": E + "[1mcredential:" + E + "[0m {t}",
    "xml-element": "<apiKey>{t}</apiKey>",
    "xml-attr": '<add key="{V}" value="{t}" />',
    "csv": "prod,deploy-bot,{t},2026-01-01",
    "escaped-json": '{{"level": "info", "msg": "{{\\"{v}\\": \\"{t}\\", \\"n\\": 1}}"}}',
    "http-debug": "send: b'GET /v1/me HTTP/1.1\\r\\nHost: api.example.com\\r\\n"
    "Authorization: Bearer {t}\\r\\n\\r\\n'",
    "curl-verbose": "> Authorization: token {t}",
    "header-in-a-log-line": "2026-12-02 DEBUG api: sent Authorization: token {t} (attempt 2)",
    "sql": "INSERT INTO credentials (name, value) VALUES ('deploy', '{t}');",
    "code-arrow": "    '{v}' => '{t}',",
    "semicolon-list": "{V}={t};timeout=30",
    "comma-list": "tokens={t},none",
    "cr-redraw": "downloading... 42%\rusing {t}",
    "docker-env": "docker run -e {V}={t} acme/api:1.4",
    "k8s-env": "        - name: {V}\n          value: {t}",
    "yaml-block": "{v}: |\n  {t}\nnext: 1",
    "npmrc": "//registry.npmjs.org/:_authToken={t}",
    "toml": '{v} = "{t}"',
    "html-input": '<input type="hidden" name="{v}" value="{t}">',
    "markdown-table": "| prod | {t} | active |",
    "sentence-period": "Your new credential is {t}.",
    "parenthesized": "(credential {t})",
    "git-credential": "protocol=https\nhost=example.com\nusername=deploy-bot\npassword={t}",
    "shell-trace": "+ curl -sf -H 'Authorization: Bearer {t}' https://api.example.com/v1/me",
    "powershell": '$env:{V} = "{t}"',
    "windows-set": "set {V}={t}",
    "actions-mask": "::add-mask::{t}",
    "tab-separated": "prod\t{t}\tactive",
    "unicode-quotes": "credential \u00ab{t}\u00bb rejected (\u201c{t}\u201d)",
    "angle-brackets": "<{t}>",
    "markdown-bold": "**{t}**",
    "osc8-hyperlink": E + "]8;;https://example.com/keys" + E + "\\{t}" + E + "]8;;" + E + "\\",
    "docker-json-log": '{{"log":"using {t}\\n","stream":"stderr","time":"2026-12-02T10:15:32Z"}}',
    "logfmt": 'time=2026-12-02T10:15:32Z level=error msg="upstream rejected {t}" status=401',
    # the planted text transformed the way a tool prints it (see TRANSFORMS)
    "grep-match-prefix": "config/prod.env:3:{V}={t}",
    "overstrike": "{t}",
    "json-escaped-slash": '{{"{v}": "{t}"}}',
    "url-encoded": "GET /oauth/callback?state=xyz&credential={t}&next=%2Fhome",
    # the line as `curl --trace-ascii` dumps it, 64 bytes a line (see DUMPS)
    "curl-trace-header": "Authorization: Bearer {t}",
    "curl-trace-form": "client_id=app-7f3a9c&scope=read%20write&{v}={t}&grant_type=x",
    # the line as a hex dump shows it: hex and characters, 16 bytes a line (see DUMPS)
    "xxd-dump": "{V}={t}",
    "curl-trace-hex": "Authorization: Bearer {t}",
}


def _grep_prefix(t: str) -> str:
    """`grep --color ghp_` colours only the matched prefix of the token."""
    return E + "[01;31m" + E + "[K" + t[:4] + E + "[m" + E + "[K" + t[4:]


# context -> (how the planted text is printed, how the secret then appears)
TRANSFORMS: dict[str, tuple[Callable[[str], str], Callable[[str], str]]] = {
    "grep-match-prefix": (_grep_prefix, lambda s: s),
    # man-page bold: every character struck twice (c BACKSPACE c)
    "overstrike": (lambda t: "".join(c + "\b" + c for c in t), lambda s: s),
    # PHP's json_encode and others escape "/"
    "json-escaped-slash": (lambda t: t.replace("/", "\\/"), lambda s: s.replace("/", "\\/")),
    "url-encoded": (lambda t: quote(t, safe=""), lambda s: quote(s, safe="")),
}


def curl_trace_ascii(data: bytes, what: str = "Send data") -> bytes:
    """``data`` as ``curl --trace-ascii`` prints it (its `dump` in nohex mode, step for
    step): 64 bytes a line, each after its offset; a CRLF of the data ends a line and is
    skipped, also right after a line's 64th byte; other control bytes show as dots."""
    out = [b"=> %s, %d bytes (0x%x)" % (what.encode(), len(data), len(data))]
    i, size = 0, len(data)
    while i < size:
        line = b"%04x: " % i
        c, nxt = 0, i + 64
        while c < 64 and i + c < size:
            if i + c + 1 < size and data[i + c:i + c + 2] == b"\r\n":
                nxt = i + c + 2
                break
            ch = data[i + c]
            line += bytes([ch]) if 0x20 <= ch < 0x7F else b"."
            if i + c + 2 < size and data[i + c + 1:i + c + 3] == b"\r\n":
                nxt = i + c + 3
                break
            c += 1
        out.append(line)
        i = nxt
    return b"\n".join(out) + b"\n"


def _shown(c: int) -> bytes:
    return bytes([c]) if 0x20 <= c < 0x7F else b"."


def xxd(data: bytes) -> bytes:
    """``data`` as ``xxd`` prints it by default: 16 bytes a line in groups of two, after
    the offset, then the characters (printable ASCII, else a dot)."""
    out = []
    for i in range(0, len(data), 16):
        row = data[i:i + 16]
        hexes = " ".join(row[j:j + 2].hex() for j in range(0, len(row), 2))
        out.append(b"%08x: %-39s  %s" % (i, hexes.encode(),
                                         b"".join(_shown(c) for c in row)))
    return b"\n".join(out) + b"\n"


def curl_trace_hex(data: bytes, what: str = "Send data") -> bytes:
    """``data`` as ``curl --trace`` prints it (its `dump` in hex mode): 16 bytes a line,
    each as two hex digits and a blank, padded, then the characters."""
    out = [b"=> %s, %d bytes (0x%x)" % (what.encode(), len(data), len(data))]
    for i in range(0, len(data), 16):
        row = data[i:i + 16]
        hexes = b"".join(b"%02x " % c for c in row) + b"   " * (16 - len(row))
        out.append(b"%04x: %s%s" % (i, hexes, b"".join(_shown(c) for c in row)))
    return b"\n".join(out) + b"\n"


_REQUEST = b"POST /v1/token HTTP/1.1\r\nHost: api.example.com\r\n"

# context -> how the whole rendered line is printed: curl's dump of a request it sent
DUMPS: dict[str, Callable[[str], str]] = {
    "curl-trace-header": lambda line: curl_trace_ascii(
        _REQUEST + line.encode() + b"\r\nAccept: */*\r\n\r\n", "Send header").decode(),
    "curl-trace-form": lambda line: curl_trace_ascii(line.encode()).decode(),
    "xxd-dump": lambda line: xxd(b"# deploy settings\n" + line.encode() + b"\n").decode(),
    "curl-trace-hex": lambda line: curl_trace_hex(
        _REQUEST + line.encode() + b"\r\nAccept: */*\r\n\r\n", "Send header").decode(),
}
# contexts whose redaction masks bytes (`**`) rather than writing a [REDACTED:...] marker
MASKED = frozenset({"xxd-dump", "curl-trace-hex"})
_DUMP_ROW = re.compile(r"[ \t]*(?:0x)?[0-9a-f]{4,8}:? {1,2}((?:[0-9a-f*]{2,8} {1,2})+) *(.*)")


def dump_columns(out: str) -> tuple[str, str]:
    """The hex digits and the characters that the dump lines of ``out`` show, each column
    run together over the lines (a masked byte as a gap: it joins nothing)."""
    hexes, chars = [], []
    for line in out.splitlines():
        m = _DUMP_ROW.fullmatch(line)
        if m is not None:
            hexes.append(m[1].replace(" ", "").replace("*", "|"))
            chars.append(m[2].strip("|<>"))
    return "".join(hexes), "".join(chars)


def names(kind: str) -> tuple[str, str]:
    """(ENV_NAME, config_name) a tool would store this kind under."""
    base = kind.split("/", maxsplit=1)[0]
    return base.upper().replace("-", "_"), base.replace("-", "_")


def render(template: str, planted: str, kind: str, ctx: str = "") -> str:
    env, cfg = names(kind)
    if ctx in TRANSFORMS:
        planted = TRANSFORMS[ctx][0](planted)
    text = template.format(t=planted, V=env, v=cfg)
    return DUMPS[ctx](text) if ctx in DUMPS else text


def shown(secret: str, ctx: str) -> str:
    """The secret as it appears in ``ctx`` once the tool has printed it."""
    return TRANSFORMS[ctx][1](secret) if ctx in TRANSFORMS else secret


def password(rng: random.Random, symbols: str = "!#%*") -> str:
    """A generated password: letters, digits and one symbol, 20 characters."""
    return r(rng, ALNUM, 8) + rng.choice(symbols) + r(rng, ALNUM, 11)


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


# (text, secrets that must not survive); built from a password generator
Structural = Callable[[random.Random], tuple[str, tuple[str, ...]]]


def pin(rng: random.Random) -> str:
    """A numeric secret: a PIN or a digits-only password, 8 digits."""
    return r(rng, "0123456789", 8)


def _p(template: str, symbols: str = "!#%*", *, numeric: bool = False) -> Structural:
    def make(rng: random.Random) -> tuple[str, tuple[str, ...]]:
        p = pin(rng) if numeric else password(rng, symbols)
        return template.format(p=p), (p,)

    return make


def _yaml_binary(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    """bytes as PyYAML dumps them: `!!binary |`, the base64 below, 76 characters a line."""
    p = password(rng) * 4
    encoded = base64.b64encode(p.encode()).decode()
    lines = "\n".join("    " + encoded[i:i + 76] for i in range(0, len(encoded), 76))
    return f"db:\n  password: !!binary |\n{lines}\n  port: 5432", (encoded, p)


def _console_wrapped(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    """A long value under a secret name, folded at 80 columns as Rich prints a word longer
    than its console (on a pipe) and `fold` does."""
    p = "".join(rng.choice(ALNUM) for _ in range(300))
    text = f"exporting AWS_SESSION_TOKEN={p} for the job"
    return "\n".join(text[i:i + 80] for i in range(0, len(text), 80)), (p,)


def _console_wrapped_rest(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    """A value under a secret name of 90-150 characters that Rich prints on a pipe: the
    word starts a line and is folded at 80, the rest, less than a line, before the text
    after it (its lines are not all one width: only the cut line's 80 tells the wrap)."""
    p = "".join(rng.choice(ALNUM) for _ in range(rng.randint(80, 140)))
    word = f"API_TOKEN={p}"
    return f"exporting\n{word[:80]}\n{word[80:]} for the job", (p,)


def _oauth(template: str) -> Structural:
    """An OAuth code or verifier: 43 URL-safe characters, as PKCE's verifier is."""
    def make(rng: random.Random) -> tuple[str, tuple[str, ...]]:
        c = r(rng, ALNUM + "-_", 43)
        return template.format(c=c), (c,)

    return make


def _k8s_secret(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    p = password(rng)
    text = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\n"
        f"data:\n  username: {b64('app_user')}\n  password: {b64(p)}\n"
    )
    return text, (b64(p), p)


def _wrapped_bearer(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    tok = r(rng, ALNUM, 120)
    text = f"Authorization: Bearer {tok[:60]}\n    {tok[60:]}\nContent-Type: application/json"
    return text, (tok[:60], tok[60:])


def _ppk(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    priv, mac = base64.b64encode(rng.randbytes(48)).decode(), r(rng, HEX, 64)
    text = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@ci\n"
        "Public-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAIOq7wNn2M3r0m8QbX1yF2zQ4Vv5wE6tH7jK8LmNoPqRs\n"
        "AAAAC3NzaC1lZDI1NTE5\n"
        f"Private-Lines: 1\n{priv}\nPrivate-MAC: {mac}\n"
    )
    return text, (priv, mac)


def _separators(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    p = r(rng, ALNUM, 8) + "&" + r(rng, ALNUM, 6) + ";" + r(rng, ALNUM, 6) + "," + r(rng, ALNUM, 6)
    return f"DB_PASSWORD={p} ./migrate.sh", (p.split("&")[1].split(";")[0], p.split(",")[1])


def _jwk(rng: random.Random, *, pretty: bool) -> tuple[str, tuple[str, ...]]:
    """A private EC JSON Web Key, keys sorted (`d` before `kty`), as `jose`/`step` print it."""
    import json

    b64url = ALNUM + "_-"
    d = r(rng, b64url, 43)
    key = {"crv": "P-256", "d": d, "kty": "EC", "x": r(rng, b64url, 43), "y": r(rng, b64url, 43)}
    return (json.dumps(key, indent=2) if pretty else json.dumps(key)), (d,)


def _ldif(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    encoded = b64(password(rng))
    return f"dn: uid=bob,dc=example,dc=com\nuserPassword:: {encoded}", (encoded,)


def _basic(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    p = password(rng)
    return f"> Authorization: Basic {b64('deploy:' + p)}", (b64("deploy:" + p),)


def _smtp_plain(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    encoded = b64("\0deploy\0" + password(rng))
    return f"send: 'AUTH PLAIN {encoded}\\r\\n'", (encoded,)


def _smtp_login(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    encoded = b64(password(rng))
    return (f"send: 'AUTH LOGIN ZGVwbG95\\r\\n'\nreply: b'334 UGFzc3dvcmQ6\\r\\n'\n"
            f"reply: retcode (334); Msg: b'UGFzc3dvcmQ6'\nsend: '{encoded}\\r\\n'"), (encoded,)


STRUCTURAL: dict[str, Structural] = {
    "xml-element": _p("<connection><user>app</user><password>{p}</password></connection>"),
    "xml-nuget-attr": _p('<add key="ClearTextPassword" value="{p}" />'),
    "netrc": _p("machine api.example.com login deploy password {p}"),
    "pgpass": _p("db.example.com:5432:appdb:app_user:{p}"),
    "sql-password": _p("ALTER ROLE app_user WITH LOGIN PASSWORD '{p}';"),
    "sql-identified-by": _p("CREATE USER 'app'@'%' IDENTIFIED BY '{p}';"),
    "csv": _p("name,username,password,url\nprod-db,app_user,{p},https://db.example.com"),
    "tsv": _p("name\tusername\tpassword\nprod-db\tapp_user\t{p}"),
    "yaml-block-literal": _p("db_password: |\n  {p}\nnext_key: 1"),
    "yaml-block-folded": _p("api_token: >-\n  {p}\nnext_key: 1"),
    "yaml-binary-tag": _yaml_binary,
    "console-wrapped-value": _console_wrapped,
    "console-wrapped-rest": _console_wrapped_rest,
    "k8s-name-value": _p("        - name: DB_PASSWORD\n          value: {p}"),
    "k8s-name-value-quoted": _p('        - name: "STRIPE_SECRET"\n          value: "{p}"'),
    "json-name-value": _p('{{"name": "API_TOKEN", "value": "{p}"}}'),
    "json-name-value-lines": _p('{{\n  "name": "API_TOKEN",\n  "value": "{p}"\n}}'),
    "k8s-secret-data": _k8s_secret,
    "escaped-json": _p('{{"level": "info", "msg": "config: {{\\"password\\": \\"{p}\\"}}"}}'),
    "http-debug-dump": _p(
        "send: b'POST /login HTTP/1.1\\r\\nHost: api.example.com\\r\\n"
        "Authorization: Bearer {p}\\r\\nContent-Length: 2\\r\\n\\r\\n{{}}'"
    ),
    "wrapped-bearer": _wrapped_bearer,
    "basic-auth-header": _basic,
    "auth-header-in-a-log-line": _p("2026-12-02 DEBUG api: sent Authorization: token {p} (try 2)"),
    "github-actions-add-mask": _p("+ echo '::add-mask::{p}'", "!%"),
    "odbc-connection-string": _p("Driver={{ODBC Driver 18}};Server=db;Uid=app;Pwd={p};", "!#%*"),
    "vault-kv-get": _p("====== Data ======\nKey         Value\n---         -----\n"
                       "api_token   {p}\nusername    app"),
    "redis-monitor-auth": _p('1733130000.123456 [0 127.0.0.1:53312] "AUTH" "{p}"'),
    "redis-cli-auth": _p("127.0.0.1:6379> AUTH default {p}"),
    "sqlplus-connect": _p("SQL> CONNECT app/{p}@orcl", "!#%*"),
    "terraform-output-sensitive": _p('{{\n  "admin": {{\n    "sensitive": true,\n'
                                     '    "type": "string",\n    "value": "{p}"\n  }}\n}}', "!#%"),
    "powershell-securestring": _p('$c = ConvertTo-SecureString "{p}" -AsPlainText -Force'),
    "powershell-securestring-named": _p('$password = ConvertTo-SecureString "{p}" -AsPlainText'
                                        ' -Force'),
    "python-short-name": _p('  File "deploy.py", line 12, in <module>\n    pw = "{p}"'),
    "key-secret-key": _p("secret_key: {p}"),
    "sql-insert-row": _p("INSERT INTO users (email, password) VALUES ('bob@example.com', '{p}');"),
    "mysql-set-password": _p("SET PASSWORD FOR 'app'@'%' = '{p}';"),
    "redis-requirepass": _p("requirepass {p}"),
    "ldif-base64": _ldif,
    "json-escaped-twice": _p('{{"msg": "{{\\"cfg\\": \\"{{\\\\\\"password\\\\\\": '
                             '\\\\\\"{p}\\\\\\"}}\\"}}"}}', "!#%*"),
    "bundler-host-credentials": _p("BUNDLE_GEMS__CONTRIBSYS__COM=ci:{p}", "!#%*"),
    "composer-auth-bearer": _p('{{\n    "bearer": {{\n        "repo.example.com": "{p}"\n'
                               '    }}\n}}'),
    # what a terminal echoed after a prompt that left echo on (`read -p`, a transcript)
    "prompt-git-echoed": _p("Password for 'https://deploy@git.example.com': {p}"),
    "prompt-sudo-echoed": _p("[sudo] password for deploy: {p}"),
    "prompt-ssh-passphrase": _p("Enter passphrase for key '/srv/keys/id_ed25519': {p}"),
    "prompt-openssl-pem": _p("Enter PEM pass phrase: {p}"),
    "openvpn-auth-user-pass": _p("client\n<auth-user-pass>\ndeploy\n{p}\n</auth-user-pass>\n"
                                 "verb 3"),
    # PHP's var_dump: the value on the line after its name
    "php-var-dump": _p('array(2) {{\n  ["user"]=>\n  string(3) "app"\n  ["password"]=>\n'
                       '  string(20) "{p}"\n}}'),
    "php-var-dump-private": _p('object(Config)#1 (1) {{\n  ["apiKey":"Config":private]=>\n'
                               '  string(20) "{p}"\n}}'),
    # node's error of a failed child: its command line as a quoted value
    "node-exec-cmd": _p("  cmd: 'mysql -uroot -p{p} appdb',"),
    # a dict's repr with bytes values (botocore's debug log of every request's headers)
    "python-bytes-repr": _p("{{'password': b'{p}', 'user': b'app'}}"),
    "botocore-debug-headers": _p("headers={{'X-Amz-Date': b'20261202T100000Z', "
                                 "'X-Amz-Security-Token': b'{p}', 'Content-Length': '43'}}"),
    # a rich panel (a traceback's locals and source lines) cropped before the closing quote
    "rich-locals-cropped": _p("│ │  password = '{p}… │ │"),
    "rich-source-cropped": _p('│   5 │   api_token = "{p} │'),
    # pulumi stack output --show-secrets
    "pulumi-outputs": _p("Current stack outputs (2):\n    OUTPUT      VALUE\n    dbPassword  {p}\n"
                         "    url         https://app.example.com"),
    # wget -d: every option it was given
    "wget-debug-setting": _p("Setting --password (password) to {p}"),
    # expect(1): what a script sends after a password prompt
    "expect-send": _p('spawn ssh deploy@host\nexpect "Password:"\nsend "{p}\\r"\nexpect "$ "'),
    # Redis ACL: the password after `>`
    "redis-acl-setuser": _p("127.0.0.1:6379> ACL SETUSER deploy on >{p} ~* +@all"),
    # mail protocols as Python's clients print them with debugging on
    "smtp-auth-plain": _smtp_plain,
    "smtp-auth-login": _smtp_login,
    "pop3-pass": _p("*cmd* 'USER deploy'\n*cmd* 'PASS {p}'"),
    "imap-login": _p("  45:09.05 > b'HDPH1 LOGIN deploy \"{p}\"'"),
    "redis-config-get": _p('127.0.0.1:6379> CONFIG GET requirepass\n1) "requirepass"\n2) "{p}"'),
    # a prepared statement's parameters, printed apart from it (SQLAlchemy's echo and its
    # errors, PostgreSQL's log_statement, Django's debug log), and PostgreSQL's key DETAIL
    "sqlalchemy-echo-parameters": _p(
        "INFO sqlalchemy.engine.Engine INSERT INTO users (name, password) VALUES (?, ?)\n"
        "INFO sqlalchemy.engine.Engine [generated in 0.00023s] ('deploy', '{p}')"),
    "sqlalchemy-named-parameters": _p(
        "INFO sqlalchemy.engine.Engine SELECT users.id \nFROM users \n"
        "WHERE users.api_token = %(tok)s\n"
        "INFO sqlalchemy.engine.Engine [cached since 3.2s ago] {{'tok': '{p}'}}"),
    "sqlalchemy-error-parameters": _p(
        "sqlalchemy.exc.IntegrityError: (sqlite3.IntegrityError) UNIQUE constraint failed: "
        "users.name\n[SQL: INSERT INTO users (name, password_hash) VALUES (?, ?)]\n"
        "[parameters: ('deploy', '{p}')]"),
    "postgres-log-parameters": _p(
        "LOG:  execute <unnamed>: UPDATE users SET password = $1 WHERE name = $2\n"
        "DETAIL:  parameters: $1 = '{p}', $2 = 'deploy'"),
    "django-sql-args": _p(
        "(0.002) UPDATE \"auth_user\" SET \"password\" = '{p}' WHERE \"auth_user\".\"id\" = 7;"
        " args=('{p}', 7); alias=default"),
    "postgres-key-detail": _p("DETAIL:  Key (api_token)=({p}) already exists.", "!#%*"),
    # validation errors quoting the rejected input (pydantic, FastAPI's 422 body)
    "pydantic-input-value": _p(
        "1 validation error for Settings\ndb_password\n  Input should be a valid integer, "
        "unable to parse string as an integer [type=int_parsing, input_value='{p}', "
        "input_type=str]"),
    "fastapi-422-input": _p(
        '{{"detail":[{{"type":"string_too_short","loc":["body","password"],'
        '"msg":"String should have at least 64 characters","input":"{p}"}}]}}', "!#%*"),
    # a list or tuple under a secret name; a password by position in code (a traceback)
    "python-auth-tuple": _p("{{'auth': ('deploy', '{p}'), 'verify': True}}"),
    "django-querydict": _p("<QueryDict: {{'username': ['deploy'], 'password': ['{p}']}}>"),
    "shell-array": _p('declare -A CREDS=([db]="{p}" [api]="x" )'),
    "traceback-smtp-login": _p('    server.login("deploy@example.com", "{p}")'),
    "traceback-basic-auth": _p("    r = requests.get(url, auth=HTTPBasicAuth('deploy', '{p}'))"),
    # what a pipeline feeds a program that reads its password from standard input
    "docker-password-stdin": _p("echo '{p}' | docker login -u ci --password-stdin reg.example.com",
                                "!#%"),
    "xtrace-password-stdin": _p("+ echo '{p}'\n+ docker login -u ci --password-stdin "
                                "reg.example.com", "!#%"),
    "xtrace-quoted-quote": _p("+ psql -c 'select 1 from t where api_key = '\\''{p}'\\'''", "!#%"),
    # query results as database clients print them
    "psql-table": _p(" id | api_key \n----+---------\n  1 | {p}\n(1 row)", "!#%*"),
    "psql-expanded": _p("-[ RECORD 1 ]---\nid      | 1\napi_key | {p}", "!#%*"),
    "mysql-box": _p("+----+---------+\n| id | api_key |\n+----+---------+\n|  1 | {p} |\n"
                    "+----+---------+", "!#%*"),
    "pg-dump-copy": _p("COPY public.users (id, api_key) FROM stdin;\n1\t{p}\n\\.", "!#%*"),
    "url-encoded-in-a-redirect": _p("GET /login?next=%2Fapp%3Fpassword%3D{p} HTTP/1.1", "!*"),
    "jwk-private-compact": lambda rng: _jwk(rng, pretty=False),
    "jwk-private-pretty": lambda rng: _jwk(rng, pretty=True),
    "code-eqeq": _p('    if password == "{p}":'),
    "code-arrow": _p("    'password' => '{p}',"),
    "code-dot-eq": _p("$secret .= '{p}';"),
    "code-makefile": _p("API_TOKEN ?= {p}"),
    "code-tuple": _p('os.environ.setdefault("DB_PASSWORD", "{p}")'),
    "setenv": _p("setenv DB_PASSWORD {p}"),
    "separators-in-value": _separators,
    "key-pass": _p("DB_PASS={p}"),
    "key-pass-lower": _p("db_pass: {p}"),
    "key-passphrase": _p("passphrase={p}"),
    "key-psk": _p('    psk="{p}"'),
    "key-pat": _p("GITLAB_PAT={p}"),
    "key-sig": _p("signature check: sig={p}"),
    # abbreviations, MFA backup codes (numbers under their name are the secret)
    "key-creds": _p("DB_CREDS={p}"),
    "key-pw-part": _p("MYSQL_ROOT_PW={p}"),
    "mfa-recovery-codes": _p("recovery_codes: {p}"),
    "numeric-backup-code": _p("backup_code={p}", numeric=True),
    # "password" in other languages, as their speakers name settings
    "key-german-passwort": _p("DB_PASSWORT={p}"),
    "key-portuguese-senha": _p("  senha: {p}"),
    "key-french-mot-de-passe": _p('"mot_de_passe": "{p}"'),
    "key-dutch-wachtwoord": _p("wachtwoord = {p}"),
    "key-camel-accountkey": _p("AccountKey: {p}"),
    "key-camel-storage": _p('"storageAccountKey": "{p}"'),
    "key-camel-master": _p("primaryMasterKey={p}"),
    "key-camel-server": _p("serverKey: {p}"),
    "putty-ppk": _ppk,
    "url-credentials": _p("postgres://app_user:{p}@db.example.com:5432/appdb", "!*"),
    "pip-index-url": _p("--index-url https://__token__:{p}@pypi.example.com/simple", "!*"),
    # digits only: a PIN or a numeric password is a secret under a password's name (a number
    # under any other secret-looking name, MAX_TOKENS=4096, is evidence)
    "numeric-pin-env": _p("SIM_PIN={p}", numeric=True),
    "numeric-pin-flag": _p("acme unlock --pin {p} --yes", numeric=True),
    "numeric-password-yaml": _p("  db_password: {p}", numeric=True),
    "numeric-k8s-name-value": _p('        - name: SIM_PIN\n          value: "{p}"', numeric=True),
    "numeric-csv-pin": _p("name,username,pin\nprod,bob,{p}", numeric=True),
    # OAuth 2.0: the authorization code a login's callback received and the token request
    # that spends it (RFC 6749 4.1.2, 4.1.3), PKCE's verifier, the device flow's code
    "oauth-callback": _oauth('127.0.0.1 - - [05/Dec/2026 10:00:00] "GET /callback?code={c}'
                             '&state=af0ifjsldkj&scope=email HTTP/1.1" 200 -'),
    "oauth-redirect": _oauth("Redirecting to http://localhost:8085/?state=Q3xY9&code={c}"),
    "oauth-session-state": _oauth("https://login.example.com/nativeclient?code={c}"
                                  "&session_state=5c2d0e"),
    "oauth-token-form": _oauth("0000: grant_type=authorization_code&code={c}&redirect_uri=htt"
                               "p%3A%2F%2F127.0.0.1%3A8085%2F"),
    "oauth-token-dict": _oauth("Supplying headers {{'Accept': 'application/json'}} and data "
                               "{{'grant_type': 'authorization_code', 'code': '{c}', "
                               "'redirect_uri': 'http://localhost:8085/'}}"),
    "oauth-token-json": _oauth('{{"grant_type":"authorization_code","code":"{c}",'
                               '"redirect_uri":"http://localhost:8085/"}}'),
    "oauth-pkce-verifier": _oauth("code_verifier={c}"),
    "oauth-device-code": _oauth('{{"device_code":"{c}","user_code":"WDJB-MJHT",'
                                '"verification_uri":"https://example.com/device"}}'),
}

# command lines as the recorder stores them: (argv, secret) built from a generated password
ARGV: dict[str, Callable[[str], list[str]]] = {
    "token-flag": lambda p: ["acme", "deploy", "--token", p],
    "api-key-flag": lambda p: ["acme", "--api-key", p, "status"],
    "password-flag": lambda p: ["acme", "db", "--password", p],
    "passphrase-flag": lambda p: ["gpg-tool", "--passphrase", p, "sign"],
    "token-eq": lambda p: ["acme", f"--token={p}"],
    "mysql-glued": lambda p: ["mysql", "-u", "root", f"-p{p}", "appdb"],
    "redis-cli-a": lambda p: ["redis-cli", "-a", p, "ping"],
    "ldapsearch-w": lambda p: ["ldapsearch", "-x", "-D", "cn=admin,dc=example,dc=com", "-w", p],
    "curl-u": lambda p: ["curl", "-u", f"deploy:{p}", "https://api.example.com/v1/me"],
    # the key as the user name, no password (Stripe's, Freshdesk's, Toggl's docs)
    "curl-u-token-user": lambda p: ["curl", "-u", f"{p}:", "https://api.example.com/v2/me"],
    "curl-u-token-user-x": lambda p: ["curl", "-u", f"{p}:X", "https://api.example.com/v2/me"],
    "vault-login": lambda p: ["vault", "login", p],
    "nuget-setapikey": lambda p: ["nuget", "setapikey", p, "-source", "https://nuget.example.com"],
    "docker-login-p": lambda p: ["docker", "login", "-u", "bot", "-p", p, "registry.example.com"],
    "sshpass-p": lambda p: ["sshpass", "-p", p, "ssh", "deploy@host.example.com"],
    "openssl-pass": lambda p: [
        "openssl",
        "enc",
        "-aes-256-cbc",
        "-in",
        "a.txt",
        "-pass",
        f"pass:{p}",
    ],
    "nmcli-password": lambda p: ["nmcli", "dev", "wifi", "connect", "acme-office", "password", p],
    "aws-configure-set": lambda p: ["aws", "configure", "set", "aws_secret_access_key", p],
    "heroku-config-set": lambda p: ["heroku", "config:set", f"API_KEY={p}", "-a", "acme"],
    "kubectl-from-literal": lambda p: [
        "kubectl",
        "create",
        "secret",
        "generic",
        "db",
        f"--from-literal=password={p}",
    ],
    "helm-set": lambda p: ["helm", "upgrade", "api", "./chart", "--set", f"db.password={p}"],
    "terraform-var": lambda p: ["terraform", "apply", "-var", f"db_password={p}"],
    "docker-run-e": lambda p: ["docker", "run", "-e", f"DB_PASSWORD={p}", "acme/api:1.4"],
    "az-login-sp": lambda p: [
        "az",
        "login",
        "--service-principal",
        "-u",
        "http://acme-ci",
        "-p",
        p,
        "--tenant",
        "acme",
    ],
    "wget-password": lambda p: ["wget", "--user=deploy", f"--password={p}", "https://e.com/a"],
    "smbclient-u": lambda p: ["smbclient", "//fs/share", "-U", f"deploy%{p}"],
    "java-keystore-prop": lambda p: ["java", f"-Djavax.net.ssl.keyStorePassword={p}", "-jar", "a"],
    "keytool-storepass": lambda p: ["keytool", "-list", "-keystore", "a.jks", "-storepass", p],
    "openssl-passin": lambda p: ["openssl", "pkcs12", "-in", "a.p12", "-passin", f"pass:{p}"],
    "sqlcmd-P": lambda p: ["sqlcmd", "-S", "db", "-U", "sa", "-P", p],
    "zip-P": lambda p: ["zip", "-P", p, "out.zip", "report.csv"],
    "7z-glued": lambda p: ["7z", "a", f"-p{p}", "out.7z", "report.csv"],
    "htpasswd-b": lambda p: ["htpasswd", "-b", "/etc/nginx/.htpasswd", "deploy", p],
    "git-clone-url": lambda p: ["git", "clone", f"https://deploy:{p}@git.example.com/acme/app.git"],
    "sqlplus-login": lambda p: ["sqlplus", "-S", f"app/{p}@//db.example.com:1521/orcl", "@x.sql"],
    "rabbitmqctl-add-user": lambda p: ["rabbitmqctl", "add_user", "deploy", p],
    "openssl-passwd": lambda p: ["openssl", "passwd", "-6", p],
    "rman-target": lambda p: ["rman", "target", f"sys/{p}@prod", "nocatalog"],
    # round 27: forms from the tools' own documentation
    "jarsigner-storepass": lambda p: ["jarsigner", "-keystore", "a.jks", "-storepass", p,
                                      "app.jar", "release"],
    "influx-password": lambda p: ["influx", "-username", "admin", "-password", p],
    "samba-net-ads": lambda p: ["net", "ads", "join", "-U", f"administrator%{p}"],
    "windows-net-user": lambda p: ["net", "user", "deploy", p, "/add"],
    "windows-net-use": lambda p: ["net", "use", "Z:", "\\\\fs\\share", p, "/user:deploy"],
    "htpasswd-bc": lambda p: ["htpasswd", "-bc", "/etc/nginx/.htpasswd", "deploy", p],
    "mc-alias-set": lambda p: ["mc", "alias", "set", "store", "https://s3.example.com",
                               "AKIAEXAMPLEACCESS", p],
    "macos-security-unlock": lambda p: ["security", "unlock-keychain", "-p", p, "ci.keychain"],
    "macos-security-add": lambda p: ["security", "add-generic-password", "-a", "ci", "-s",
                                     "deploy", "-w", p],
    "oc-login-p": lambda p: ["oc", "login", "-u", "developer", "-p", p, "https://api.example:6443"],
    "ldappasswd-s": lambda p: ["ldappasswd", "-x", "-D", "cn=admin,dc=example,dc=com", "-W",
                               "-s", p, "uid=deploy,dc=example,dc=com"],
    "psexec-exe-p": lambda p: ["PsExec64.exe", "\\\\build01", "-u", "ci", "-p", p, "cmd"],
    "wpa-passphrase": lambda p: ["wpa_passphrase", "acme-office", p],
    "ncftpput-p": lambda p: ["ncftpput", "-u", "deploy", "-p", p, "ftp.example.com", "/", "a"],
    "rclone-config-create": lambda p: ["rclone", "config", "create", "store", "s3", "provider",
                                       "AWS", "secret_access_key", p],
    "restic-password-command": lambda p: ["restic", "-r", "/srv/backup", "snapshots",
                                          "--password-command", f"echo {p}"],
    "choco-apikey-k": lambda p: ["choco", "apikey", "-k", p, "-s", "https://push.example.com"],
    "cargo-login": lambda p: ["cargo", "login", "--registry", "acme", p],
    "poetry-pypi-token": lambda p: ["poetry", "config", "pypi-token.pypi", p],
    "poetry-http-basic": lambda p: ["poetry", "config", "http-basic.acme", "deploy", p],
    "bundle-config-host": lambda p: ["bundle", "config", "set", "--global",
                                     "gems.example.com", f"deploy:{p}"],
    "xfreerdp-p": lambda p: ["xfreerdp", "/u:deploy", f"/p:{p}", "/v:win.example.com"],
    "tf-login": lambda p: ["tf", "get", f"/login:deploy,{p}"],
    "p4-P": lambda p: ["p4", "-u", "deploy", "-P", p, "sync"],
    "isql-dsn": lambda p: ["isql", "-v", "appdb", "deploy", p],
    # digits only (NUMERIC_ARGV): the secret is a PIN or a numeric password
    "numeric-pin-flag": lambda p: ["acme", "unlock", "--pin", p],
    "numeric-pin-eq": lambda p: ["acme", "unlock", f"--pin={p}"],
    "numeric-sshpass-p": lambda p: ["sshpass", "-p", p, "ssh", "deploy@host.example.com"],
    "numeric-redis-cli-a": lambda p: ["redis-cli", "-a", p, "ping"],
    "numeric-mysql-glued": lambda p: ["mysql", "-u", "root", f"-p{p}", "appdb"],
    "numeric-curl-u": lambda p: ["curl", "-u", f"deploy:{p}", "https://api.example.com/v1/me"],
}
NUMERIC_ARGV = frozenset(n for n in ARGV if n.startswith("numeric-"))
