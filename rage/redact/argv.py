"""A recorded command line, redacted as the command line it is.

Each element of argv alone says little: ``X`` in ``--token X``, ``-p X`` (sshpass) or
``vault login X`` is a secret only because of what comes before it. The rules here read argv
in order, with the program it runs (after ``sudo``, ``env``, ``VAR=value`` prefixes), replace
the values those rules point to, and leave every other element to the text engine (known
token formats, ``key=value``, URL credentials, headers).

Rules, from how the tools document their options:

- any ``--NAME X`` / ``-NAME X`` (a long option spelled with one dash: ``-storepass``) whose
  NAME looks secret (:func:`rage.sensitive.looks_secret_name`) and takes no ``=``: X goes;
  ``--NAME=X``, ``-Dfoo.password=X`` likewise;
- per program: mysql family ``-pX``; redis-cli ``-a X``; ldap* ``-w X``/``-wX``; curl/wget
  ``-u``/``--user``/``--proxy-user user:pass`` (the password part), ``-U``; sshpass, docker,
  podman, helm, mongosh, az ``-p X``; sqlcmd/bcp ``-P X``; ssh-keygen ``-N``/``-P X``;
  smbclient ``-U user%pass``; lftp ``-u user,pass``; openssl ``-pass/-passin/-passout
  pass:X`` and ``-k X``; vault ``login X``; nuget ``setapikey X``; nmcli ``password X`` and
  ``*.psk X``/``*.password X``; htpasswd ``-b``'s password (``-bc`` too); ``config set KEY
  X`` and ``git config KEY X`` with a secret KEY; Samba's ``-U user%pass`` (``net``,
  ``samba-tool``, ``smbcacls``...); Windows' ``net user NAME X`` and ``net use ... X``;
  ``oc login -p X``; ``ldappasswd -s/-a X``; PsExec's, ncftp's ``-p X``; ``choco -k X``;
  ``p4 -P X``; macOS's ``security unlock-keychain -p X`` and ``add-generic-password -w X``;
  ``cargo login X``, ``rclone obscure X``; the Nth operand of ``wpa_passphrase SSID X``,
  ``isql DSN USER X``, ``mc alias set NAME URL KEY X``; ``rclone config create NAME TYPE
  KEY X...``; poetry's ``pypi-token.*`` and ``http-basic.* USER X``; ``bundle config HOST
  user:X``; FreeRDP's ``/p:X``; TFVC's ``/login:user,X``; what an ``echo`` in a
  ``--password-command`` prints; what a pipe or a here-string feeds ``sudo -S``. A program
  is named by its file, without a Windows ``.exe`` (``PsExec64.exe`` is ``psexec64``);
- ``sh -c SCRIPT`` (bash, zsh, dash...): SCRIPT is split as a shell would and redacted with
  the same rules (re-joined only when something in it was replaced).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from rage.redact.nearby import option_value
from rage.redact.regexcache import compiled
from rage.redact.values import DUMMY_PASSWORDS, token_shaped
from rage.sensitive import looks_harmless_value, looks_secret_name

REDACTED = "[REDACTED:secret-field]"
_WRAPPERS = frozenset({"sudo", "doas", "env", "time", "nice", "nohup", "exec", "command",
                       "stdbuf", "timeout", "xargs", "strace", "ltrace", "rage", "run", "--",
                       # a prompt or an xtrace mark in front of a command printed as text
                       "$", "#", ">", "+", "++", "+++"})
# wrapper options that take a value (sudo -u root, nice -n 5, env -u VAR)
_WRAPPER_ARG_OPTS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"}),
    "nice": frozenset({"-n"}), "env": frozenset({"-u", "-C", "-S"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}), "strace": frozenset({"-o", "-e", "-p", "-s"}),
}
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "ash", "busybox"})
_MYSQL = frozenset({"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlcheck", "mysqlsh",
                    "mysqlpump", "mariadb", "mariadb-dump", "mariadb-admin", "mysqlbinlog"})
# `-pSECRET` glued is the password, `-p NAME` is something else (mysql: the database)
_GLUED_P = _MYSQL | {"7z", "7za", "7zz", "7zr"}
# program -> options whose next element (or attached rest, for one-letter options) is secret
_SECRET_OPTS: dict[str, frozenset[str]] = {
    "redis-cli": frozenset({"-a", "--pass", "--user-pass"}),
    "sshpass": frozenset({"-p"}),
    "docker": frozenset({"-p"}), "podman": frozenset({"-p"}), "nerdctl": frozenset({"-p"}),
    "buildah": frozenset({"-p"}), "skopeo": frozenset({"-p"}), "helm": frozenset({"-p"}),
    "oras": frozenset({"-p"}), "mongo": frozenset({"-p"}), "mongosh": frozenset({"-p"}),
    "mongodump": frozenset({"-p"}), "mongorestore": frozenset({"-p"}), "az": frozenset({"-p"}),
    "sqlcmd": frozenset({"-P"}), "bcp": frozenset({"-P"}), "osql": frozenset({"-P"}),
    "ssh-keygen": frozenset({"-N", "-P"}), "mosquitto_pub": frozenset({"-P"}),
    "mosquitto_sub": frozenset({"-P"}), "openssl": frozenset({"-k", "-K", "-hmac"}),
    "zip": frozenset({"-P"}), "7z": frozenset(), "unzip": frozenset({"-P"}),
    "dotnet": frozenset({"-k"}), "nuget": frozenset({"-k"}), "twine": frozenset({"-p"}),
    "keytool": frozenset(), "psql": frozenset(), "gpg": frozenset(),
    "ipmitool": frozenset({"-P"}), "rdesktop": frozenset({"-p"}), "racadm": frozenset({"-p"}),
    "rabbitmqadmin": frozenset({"-p"}), "cqlsh": frozenset({"-p"}),
    "oc": frozenset({"-p"}), "psexec": frozenset({"-p"}), "psexec64": frozenset({"-p"}),
    "paexec": frozenset({"-p"}), "smbmap": frozenset({"-p"}), "choco": frozenset({"-k"}),
    "p4": frozenset({"-P"}), "security": frozenset(),
}
for _p in ("ncftp", "ncftpget", "ncftpput", "ncftpls", "ncftpbatch"):
    _SECRET_OPTS[_p] = frozenset({"-p"})
# SNMP's community string (v1, v2c) and v3's authentication and privacy passphrases
for _p in ("snmpwalk", "snmpget", "snmpset", "snmpbulkwalk", "snmpbulkget", "snmpgetnext",
           "snmptrap", "snmpinform", "snmptable", "snmpdelta", "snmpstatus"):
    _SECRET_OPTS[_p] = frozenset({"-c", "-A", "-X"})
for _p in ("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldapwhoami", "ldappasswd",
           "ldapcompare", "ldapmodrdn", "ldapexop"):
    _SECRET_OPTS[_p] = frozenset({"-w"})
_SECRET_OPTS["ldappasswd"] = frozenset({"-w", "-s", "-a"})  # the bind, new and old passwords
for _p in _MYSQL:
    _SECRET_OPTS[_p] = frozenset()
# options holding `user:password` (curl, wget) or `user%password` (smbclient) or `user,pass`
_USERPASS: dict[str, tuple[frozenset[str], str]] = {
    "curl": (frozenset({"-u", "--user", "-U", "--proxy-user"}), ":"),
    "wget": (frozenset({"--user", "--http-user"}), ":"),
    "smbclient": (frozenset({"-U", "--user"}), "%"),
    "rpcclient": (frozenset({"-U", "--user"}), "%"),
    "net": (frozenset({"-U", "--user"}), "%"), "samba-tool": (frozenset({"-U", "--username"}), "%"),
    "smbcacls": (frozenset({"-U", "--user"}), "%"), "smbget": (frozenset({"-U", "--user"}), "%"),
    "smbtree": (frozenset({"-U", "--user"}), "%"), "winexe": (frozenset({"-U", "--user"}), "%"),
    "wbinfo": (frozenset({"-a", "--authenticate"}), "%"),
    "lftp": (frozenset({"-u", "--user"}), ","),
    "svn": (frozenset(), ":"),
    "http": (frozenset({"-a", "--auth"}), ":"), "https": (frozenset({"-a", "--auth"}), ":"),
    "xh": (frozenset({"-a", "--auth"}), ":"), "xhs": (frozenset({"-a", "--auth"}), ":"),
    "etcdctl": (frozenset({"--user"}), ":"),
}
_GENERIC_USERPASS = (frozenset({"-u", "--user", "--proxy-user"}), ":")
# `program SUBCOMMAND X`: the first positional after the subcommand is a secret
_POSITIONAL: dict[str, frozenset[str]] = {
    "vault": frozenset({"login"}),
    "nuget": frozenset({"setapikey"}),
    "heroku": frozenset(),
    "cargo": frozenset({"login"}),  # `cargo login TOKEN`
    "rclone": frozenset({"obscure"}),  # `rclone obscure PASSWORD`
}
# options of theirs that take a value, not the positional secret (`cargo login --registry r X`)
_POSITIONAL_ARG_OPTS: dict[str, frozenset[str]] = {
    "cargo": frozenset({"--registry", "--config", "-Z"}),
}
# `program [WORDS...] OPERAND...`: after WORDS, the Nth operand (not an option) is a secret:
# `wpa_passphrase SSID PASSPHRASE`, unixODBC's `isql DSN USER PASSWORD`, MinIO's
# `mc alias set NAME URL ACCESS_KEY SECRET_KEY`
_NTH_OPERAND: dict[str, tuple[tuple[tuple[str, ...], int], ...]] = {
    "wpa_passphrase": (((), 2),), "isql": (((), 3),), "iusql": (((), 3),),
    "mc": ((("alias", "set"), 4), (("alias", "add"), 4), (("config", "host", "add"), 4)),
}
# FreeRDP's options, Windows-style: `/p:PASSWORD`, the gateway's `/gp:PASSWORD`
_FREERDP = frozenset({"xfreerdp", "xfreerdp3", "wlfreerdp", "wlfreerdp3", "sdl-freerdp",
                      "sdl-freerdp3", "wfreerdp"})
_FREERDP_PASS = ("/p:", "/password:", "/gp:", "/gateway-password:")
# `program ... WORD [user] SECRET`: after WORD, the last of at most N operands is a secret,
# wherever WORD stands (`redis-cli -h h AUTH [user] X`, `mysqladmin -h h password NEW`)
_AFTER_WORD: dict[str, dict[str, int]] = {
    "redis-cli": {"AUTH": 2, "auth": 2},
    "mysqladmin": {"password": 1}, "mariadb-admin": {"password": 1},
}
# ...and the second one: `rabbitmqctl add_user NAME PASSWORD`
_SECOND_POSITIONAL: dict[str, frozenset[str]] = {
    "rabbitmqctl": frozenset({"add_user", "change_password", "authenticate_user"}),
}
# `openssl passwd [-6] [-salt S] PASSWORD...`: every operand is a password to hash; these
# options take a value
_OPENSSL_PASSWD_ARG_OPTS = frozenset({"-salt", "-in"})
# their `-p` is a password only in `login` (`docker run -p` is a port)
_LOGIN_ONLY = frozenset({"docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras", "oc",
                         "az"})
_OPENSSL_PASS = frozenset({"-pass", "-passin", "-passout", "-password", "-passphrase"})
# openssl's options are words: `-key k.pem` is not `-k` with `ey` glued to it
_NO_GLUED = frozenset({"openssl"})
# programs that run another command: their options end at it (`sshpass -p X ssh -p 2222 h`:
# the second `-p` is ssh's port), with the options of theirs that take a value
_RUNS_A_COMMAND: dict[str, frozenset[str]] = {"sshpass": frozenset({"-p", "-f", "-d", "-P"})}
# what reads a password from standard input: what a pipeline feeds it is the password
# (`echo X | docker login -u u --password-stdin`)
STDIN_SECRET = ("--password-stdin", "--passphrase-fd", "--password-from-stdin",
                "--pass-stdin", "chpasswd", "sudo -S")
_NMCLI_KEYS = frozenset({"password", "psk", "wep-key0", "wep-key1", "wep-key2", "wep-key3",
                         "leap-password", "private-key-password", "pin", "secrets"})


def program_name(word: str) -> str:
    """The program a word runs: its file name, and on Windows without ``.exe``, in lower
    case (``C:\\Tools\\PsExec64.exe`` is ``psexec64``, ``NET.EXE`` is ``net``)."""
    base = word.rsplit("/", 1)[-1]
    if base[-4:].lower() == ".exe":
        return base.rsplit("\\", 1)[-1][:-4].lower()
    return base


def _program(argv: list[str]) -> int:
    """Index of the program argv runs, past wrappers, their options and ``VAR=value``."""
    i = 0
    while i < len(argv):
        a = argv[i]
        base = program_name(a)
        if base in _WRAPPERS or ("=" in a and not a.startswith("-") and i + 1 < len(argv)):
            i += 1
            while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
                i += 2 if argv[i] in _WRAPPER_ARG_OPTS.get(base, ()) else 1
            if base in {"timeout"} and i < len(argv):
                i += 1  # the duration
            continue
        return i
    return 0


# (program, subcommand, subcommand) -> options whose value is a secret there only
_SUBCOMMAND_OPTS: dict[tuple[str, ...], frozenset[str]] = {
    ("gh", "secret", "set"): frozenset({"--body", "-b"}),
    ("dotnet", "nuget", "add"): frozenset({"-p"}),
    ("dotnet", "nuget", "update"): frozenset({"-p"}),
    # macOS's keychain tool (`security unlock-keychain -p X`, `add-generic-password -w X`)
    ("security", "unlock-keychain"): frozenset({"-p"}),
    ("security", "create-keychain"): frozenset({"-p"}),
    ("security", "set-keychain-password"): frozenset({"-o", "-p"}),
    ("security", "add-generic-password"): frozenset({"-w"}),
    ("security", "add-internet-password"): frozenset({"-w"}),
}
# Oracle's `user/password[@db]`, the first argument that is not an option
_ORACLE = frozenset({"sqlplus", "rman", "expdp", "impdp", "exp", "imp", "sqlldr", "dgmgrl",
                     "sqlcl"})
_KNOWN = frozenset({*_SECRET_OPTS, *_USERPASS, *_POSITIONAL, *_SECOND_POSITIONAL,
                    *_ORACLE - {"exp", "imp"}, "gh",
                    "openssl", "nmcli", "htpasswd", *_NTH_OPERAND, *_FREERDP, "tf", "poetry",
                    "pdm", "bundle", "restic",
                    *_SHELLS, "git", "npm", "yarn", "pnpm", "aws"}) - {"heroku", "svn"}


def _oracle_login(arg: str) -> bool:
    """``user/password[@db]`` as Oracle's tools take it (not ``/``, ``/nolog``, ``@x.sql``,
    ``control=dir/x.ctl``)."""
    user, slash, rest = arg.partition("/")
    pw = rest.partition("@")[0]
    return bool(slash and pw and user[:1].isalpha() and user.replace("_", "").replace(
        "$", "").replace("#", "").isalnum() and not any(c.isspace() for c in arg)
        and not pw.startswith("[REDACTED"))


def command_start(line: str) -> int | None:
    """Where ``line`` runs a program these rules know, with at least one argument: at its
    start, after a prompt or trace mark (``$ ``, ``+ ``), a log prefix or ``ps`` columns."""
    words = list(re.finditer(r"\S+", line))
    fed = any(s in line for s in STDIN_SECRET)  # `echo X | docker login --password-stdin`
    for w in words[:-1]:
        word = w[0].lstrip("'\"")  # a command quoted as a value: node's `cmd: 'mysql -pX db'`
        if program_name(word) in _KNOWN or (fed and word in ("echo", "printf", "sudo")):
            return w.start() + len(w[0]) - len(word)
    return None


def redact_command_line(line: str, count: Callable[[str], None]) -> str | None:
    """``line`` (already redacted as text) with the command it prints redacted by these
    rules (an xtrace's ``+ sshpass -p X ssh h``); None when no rule applies. The command is
    re-joined from its words, quoted as needed, only when something in it was replaced."""
    start = command_start(line)
    if start is None:
        return None
    rest, after = line[start:], ""  # a script: `a -p X; b -w Y && c` is three commands
    quote = line[start - 1:start]
    if quote in ("'", '"') and (end := line.find(quote, start)) > 0:
        rest, after = line[start:end], line[end:]  # up to the quote that closes it
    kinds: list[str] = []  # counted only if the line changes
    redactor = ArgvRedactor(str, kinds.append)
    changes = redactor.changes(rest)
    if not changes:
        return None
    cleaned = _in_place(rest, changes)
    if cleaned is None:  # a word quoted so that its secret is not in the line as it is
        kinds.clear()
        cleaned = redactor.script(rest)
    for kind in kinds:
        count(kind)
    return line[:start] + cleaned + after


_XTRACE = compiled(r"(\++) ")


def redact_fed_lines(lines: list[str], i: int, count: Callable[[str], None]) -> list[int]:
    """An xtrace prints each command of a pipeline on a line of its own: when ``lines[i]``
    is one that reads a password from standard input (``+ docker login --password-stdin``),
    the ``+ echo X`` or ``+ printf`` beside it (same depth) feeds it, and its operands go.
    Returns the indices of the lines changed."""
    mark = _XTRACE.match(lines[i])
    if mark is None:
        return []
    try:
        if not reads_a_secret(shlex.split(lines[i][mark.end():])):
            return []
    except ValueError:
        return []
    changed = []
    for j in (i - 1, i + 1):
        if not 0 <= j < len(lines) or not lines[j].startswith(mark[0]) or (
                lines[j][len(mark[0]):len(mark[0]) + 1] == "+"):
            continue
        text = lines[j][mark.end():]
        try:
            words = shlex.split(text)
        except ValueError:
            continue
        cleaned = list(words)
        kinds: list[str] = []
        if not ArgvRedactor(str, kinds.append).feed(words, cleaned) or not kinds:
            continue
        new = _in_place(text, [(w, c) for w, c in zip(words, cleaned, strict=True) if w != c])
        if new is not None:
            for kind in kinds:
                count(kind)
            lines[j] = lines[j][:mark.end()] + new
            changed.append(j)
    return changed


def _in_place(text: str, changes: list[tuple[str, str]]) -> str | None:
    """``text`` with each changed word's secret replaced where it stands, every other byte
    as it was (``ps`` output's ``sleep(30)``, an xtrace's ``'\\''`` quoting); None if a
    secret is not in ``text`` as it is."""
    out: list[str] = []
    pos = 0
    for before, after in changes:
        p = 0
        while p < min(len(before), len(after)) and before[p] == after[p]:
            p += 1
        s = 0
        while s < min(len(before), len(after)) - p and before[-1 - s] == after[-1 - s]:
            s += 1
        secret, rep = before[p:len(before) - s], after[p:len(after) - s]
        word = text.find(before, pos)  # the word where it stands, then its secret inside it
        at = word + p if word >= 0 else text.find(secret, pos) if secret else -1
        if at < 0 or not secret:
            return None
        out += [text[pos:at], rep]
        pos = at + len(secret)
    return "".join(out) + text[pos:]


_STR = r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\""
_LITERAL = compiled(_STR)
_LIST = compiled(rf"\[[ \t]*(?:{_STR})(?:[ \t]*,[ \t]*(?:{_STR}))+[ \t]*,?[ \t]*\]")  # 2+


def redact_argv_lists(line: str, count: Callable[[str], None]) -> str | None:
    """``line`` with each argv it prints as a list (Python's repr, JSON) redacted by these
    rules: ``Command '['mysql', '-pX', 'db']' returned non-zero exit status 1`` of a
    ``CalledProcessError``, a logged ``sys.argv``. Only the elements that change are
    rewritten, in their quotes; None when nothing does."""
    import ast

    out: list[str] = []
    last = 0
    for m in _LIST.finditer(line):
        tokens = list(_LITERAL.finditer(line, m.start(), m.end()))
        try:
            argv = [ast.literal_eval(t[0]) for t in tokens]
        except (ValueError, SyntaxError):
            continue
        if not all(isinstance(a, str) for a in argv):
            continue
        kinds: list[str] = []
        cleaned = ArgvRedactor(str, kinds.append).redact(argv)
        for t, before, after in zip(tokens, argv, cleaned, strict=True):
            if after != before:
                q = t[0][0]
                out.append(line[last:t.start()])
                out.append(q + after + q)
                last = t.end()
        for kind in kinds:
            count(kind)
    if not out:
        return None
    return "".join(out) + line[last:]


def argv_list_needles() -> tuple[bytes, ...]:
    """Literals one of which a list :func:`redact_argv_lists` changes holds, with
    :func:`command_needles` (whose lines the list rule also sees): an option among its
    string elements, or, for the rules without one, `rman`'s and `rclone`'s element, a
    `config` or `configure` subcommand's (git, npm, yarn, aws), Windows' `net use`/`net
    user` and MinIO's `mc alias`. Few: without Hyperscan each needle is
    one search of the whole text (36 cost the pure-Python scan 9%)."""
    return (b"', '-", b'", "-', b"['-", b'["-', b"','-", b'","-', b"'rman'", b'"rman"',
            b"'config", b'"config', b"'net', 'use", b'"net", "use', b"'mc', 'alias'",
            b'"mc", "alias"', b"'rclone'", b'"rclone"')


def command_needles() -> tuple[bytes, ...]:
    """Literals one of which every line :func:`redact_command_line` changes holds: the
    programs whose own rules find secrets, a shell's ``-c``, ``config``. As few as can be:
    without Hyperscan each is one search of the whole text. ``sql`` stands for mysql,
    mysqldump, sqlcmd, sqlplus...; ``login`` for the tools whose ``-p`` is a password only
    there (docker, podman, helm, az...) and ``vault login``; a short name goes with what
    must follow it."""
    return tuple(sorted((
        b"sql", b"mariadb", b"login", b"nuget", b"dotnet", b"twine", b"keytool",
        b"ssh-keygen", b"mosquitto_", b"mongo", b"ldap", b"redis-cli", b"sshpass",
        b"htpasswd", b"openssl", b"nmcli", b"curl ", b"wget ", b"lftp ", b"smbclient",
        b"rpcclient", b"zip -", b"7z a ", b"7z x ", b"7za ", b"7zz ", b"7zr ", b"bcp ",
        b"rman ", b"expdp", b"impdp", b"dgmgrl", b"sh -c ", b"git config ", b"npm config ",
        b"gh secret ", b"rabbitmqctl", *(s.encode() for s in STDIN_SECRET),
        b"yarn config ", b"aws configure ", b"rdesktop", b"racadm", b"rabbitmqadmin", b"cqlsh",
        b"ipmitool", b"snmp", b"psexec", b"PsExec", b"paexec", b"smbmap", b"choco ", b"p4 -",
        b"ncftp", b"net ads ", b"net rpc ", b"net user ", b"net use ", b"net -", b"samba-tool",
        b" -a ", b"--auth ", b"etcdctl",
        b"smbcacls", b"smbget", b"smbtree", b"winexe", b"wbinfo", b"mc alias ",
        b"mc config host", b"-keychain", b"-generic-password", b"-internet-password",
        b"wpa_passphrase", b"rclone ", b"password-command", b"passcommand", b"poetry config ",
        b"pdm config ", b"bundle config ", b"freerdp", b"/login:")))


def looks_like_command(line: str) -> bool:
    """A one-line text that runs a program these rules know (``mysql -pX``, ``sudo
    redis-cli -a X``; also after a prompt or an ``xtrace`` mark: ``$ ``, ``+ ``)."""
    words = line.split(None, 12)
    while words and words[0] in ("$", "#", ">", "+", "++", "+++"):
        words = words[1:]
    if len(words) < 2:
        return False
    i = _program(words)
    return program_name(words[i]) in _KNOWN and i + 1 < len(words)


def join_words(original: list[str], cleaned: list[str]) -> str:
    """``cleaned`` as a command line, quoted where ``original`` needed quotes (a placeholder
    alone does not make a word need them)."""
    return " ".join(shlex.quote(c) if shlex.quote(o) != o else c
                    for o, c in zip(original, cleaned, strict=True))


def word_spans(s: str, *, script: bool = False) -> list[tuple[int, int]] | None:
    """Where each word of ``s`` is, as :func:`shlex.split` reads them: blanks between
    words; quotes and backslashes inside one. ``script``: as :meth:`ArgvRedactor._entries`
    reads a script (``shlex.shlex`` with punctuation): a run of ``();<>|&`` is a word of
    its own, and ``#`` outside quotes starts a comment, to the line's end. None when ``s``
    does not split so (an unclosed quote, a backslash at the end)."""
    punct = "();<>|&" if script else ""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c in " \t\r\n":
            i += 1
            continue
        if script and c == "#":
            i = n if (j := s.find("\n", i)) < 0 else j
            continue
        start = i
        if c in punct:
            while i < n and s[i] in punct:
                i += 1
            spans.append((start, i))
            continue
        while i < n and s[i] not in " \t\r\n" and s[i] not in punct and not (
                script and s[i] == "#"):
            c = s[i]
            if c == "'":
                i = s.find("'", i + 1)
            elif c == '"':
                i += 1
                while i < n and s[i] != '"':
                    i += 2 if s[i] == "\\" else 1
            elif c == "\\":
                i += 1
            if i < 0 or i >= n:
                return None
            i += 1
        spans.append((start, i))
    return spans


def _script_words(s: str) -> list[str]:
    lex = shlex.shlex(s, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    return list(lex)


def rejoin(s: str, words: list[str], cleaned: list[str], *, script: bool = False
           ) -> str | None:
    """``s`` with each word of it that redaction changed replaced, and nothing else: its
    spacing, quotes, backslashes and comments stay as they were (a word that changed keeps
    the quotes it had when its new text needs no others). ``words`` are ``s`` split by
    :func:`shlex.split` (``script``: as a script, see :func:`word_spans`). None where the
    spans do not give them back: the caller joins the words anew (:func:`join_words`)."""
    spans = word_spans(s, script=script)
    split = _script_words if script else shlex.split
    try:
        ok = spans is not None and len(spans) == len(words) and all(
            split(s[a:b]) == [w] for (a, b), w in zip(spans, words, strict=True))
    except ValueError:
        ok = False
    if not ok or spans is None:
        return None
    out, last = [], 0
    for (a, b), w, c in zip(spans, words, cleaned, strict=True):
        if c == w:
            continue
        raw = s[a:b]
        q = raw[:1]
        if q in ("'", '"') and raw == q + w + q and q not in c and (q == "'" or not any(
                ch in c for ch in '\\$`')):
            new = q + c + q  # `"bob:X"` -> `"bob:[REDACTED:...]"`
        else:
            new = shlex.quote(c) if shlex.quote(w) != w else c  # as join_words
        out += [s[last:a], new]
        last = b
    out.append(s[last:])
    return "".join(out)


def reads_a_secret(words: list[str]) -> bool:
    """Does this command read a password from its standard input?"""
    start = _program(words)
    prog = program_name(words[start]) if words else ""
    rest = words[start + 1:]
    head = words[:start] or words  # `sudo -S` alone: sudo's options to the end
    if any(program_name(w) == "sudo" for w in head) and any(
            w == "--stdin" or (w[:1] == "-" and w[1:2] != "-" and "S" in w) for w in head):
        return True  # sudo -S reads its password from standard input
    return prog in ("chpasswd", "chgpasswd") or (prog == "passwd" and "--stdin" in rest) or any(
        w in STDIN_SECRET or w.startswith(("--password-stdin", "--passphrase-fd"))
        for w in rest)


def _password_command(opt: str) -> bool:
    """``--password-command`` (restic, rclone), ``--passcommand``: a command that prints
    the password."""
    name = opt.lstrip("-").lower().replace("_", "-")
    return opt.startswith("--") and name.endswith(("-command", "-cmd", "command")) and (
        name.startswith(("password", "pass", "passphrase")))


def _secret_option(opt: str) -> bool:
    name = opt.lstrip("-")
    return len(name) > 1 and opt.startswith("-") and looks_secret_name(name)


class ArgvRedactor:
    """Applies the rules above; ``text`` redacts an element as ordinary text and ``count``
    records one replacement of a kind."""

    def __init__(self, text: Callable[[str], str], count: Callable[[str], None]) -> None:
        self._text = text
        self._count = count

    def redact(self, argv: list[str]) -> list[str]:
        out = list(argv)
        done = [False] * len(argv)

        def hide(i: int, prefix: str = "", key: str = "password") -> None:
            """``argv[i]`` past ``prefix`` is the value of ``key`` (an option a program
            documents as a password, unless said): kept if it is evidence."""
            value = argv[i][len(prefix):]
            if not value or looks_harmless_value(value, key) or value.startswith("[REDACTED") or (
                    len(value) == 1 and value.isdigit()):  # no secret: ffmpeg's `-pass 2`
                done[i] = True
                return
            self._count("secret-field")
            out[i] = prefix + REDACTED
            done[i] = True

        start = _program(argv)
        prog = program_name(argv[start]) if argv else ""
        opts = _SECRET_OPTS.get(prog, frozenset())
        if prog in _LOGIN_ONLY and "login" not in argv[start:]:
            opts = frozenset()  # `docker run -p 8080:80` publishes a port
        opts |= _SUBCOMMAND_OPTS.get((prog, *argv[start + 1:start + 3]), frozenset()) | (
            _SUBCOMMAND_OPTS.get((prog, *argv[start + 1:start + 2]), frozenset()))
        for words, nth in _NTH_OPERAND.get(prog, ()):
            if tuple(argv[start + 1:start + 1 + len(words)]) == words:
                spots = [k for k in range(start + 1 + len(words), len(argv))
                         if not argv[k].startswith("-")]
                if len(spots) >= nth:
                    hide(spots[nth - 1])
                break
        # `-u user:password` is curl's, but many tools copy it (`docker run -u 1000:1000` is
        # a uid:gid: numbers are kept)
        userpass = _USERPASS.get(prog, _GENERIC_USERPASS)
        positional = _POSITIONAL.get(prog, frozenset())
        second = _SECOND_POSITIONAL.get(prog, frozenset())
        subcommand: str | None = None
        operands = 0  # after the subcommand
        i = start + 1
        while i < len(argv):
            a = argv[i]
            nxt = i + 1 < len(argv)
            if a == "--":
                i += 1
                continue
            if prog in _SHELLS and nxt and (a == "-c" or (
                    a[:1] == "-" and a[1:].isalpha() and "c" in a)):  # -c, -xc, -euc
                out[i + 1] = self.script(argv[i + 1])
                done[i + 1] = True
                i += 2
                continue
            if a.startswith("-") and "=" in a:
                name, _eq, _value = a.partition("=")
                if _secret_option(name.removeprefix("-D")) or name in opts:
                    hide(i, name + "=", name if name not in opts else "password")
                elif prog == "openssl" and name in _OPENSSL_PASS:
                    self._openssl_pass(argv, out, done, i, len(name) + 1)
            elif a in opts and nxt:
                hide(i + 1)
                i += 2
                continue
            elif userpass is not None and a in userpass[0] and nxt:
                self._userpass(argv, out, done, i + 1, sep=userpass[1], skip=0,
                               numbers=prog in _USERPASS)
                i += 2
                continue
            elif userpass is not None and len(a) > 2 and a[:2] in userpass[0]:
                self._userpass(argv, out, done, i, sep=userpass[1], skip=2,  # -uuser:pass
                               numbers=prog in _USERPASS)
            elif prog in _GLUED_P and a.startswith("-p") and len(a) > 2:
                hide(i, "-p")
            elif len(a) > 2 and a[:2] in opts and not a.startswith("--") and (
                    prog not in _NO_GLUED):
                hide(i, a[:2])  # -wSECRET, -pSECRET
            elif prog == "openssl" and a in _OPENSSL_PASS and nxt:
                self._openssl_pass(argv, out, done, i + 1, 0)
                i += 2
                continue
            elif nxt and ((_secret_option(a) and not argv[i + 1].startswith("-")) or (
                    prog == "nmcli" and (a in _NMCLI_KEYS
                                         or a.rsplit(".", 1)[-1] in _NMCLI_KEYS))):
                hide(i + 1, "", a)
                i += 2
                continue
            elif prog == "htpasswd" and not a.startswith("-") and i == len(argv) - 1 and any(
                    w[:1] == "-" and w[1:2] != "-" and "b" in w for w in argv[start + 1:i]):
                hide(i)  # -b, -bc, -Bbc...: the password is the last argument
            elif prog in _FREERDP and a.lower().startswith(_FREERDP_PASS):
                hide(i, a[:a.index(":") + 1])
            elif prog == "tf" and a.lower().startswith(("/login:", "-login:")):
                self._userpass(argv, out, done, i, sep=",", skip=7, numbers=True)
            elif _password_command(a) and nxt:  # restic's `--password-command 'echo X'`
                out[i + 1] = self.script(argv[i + 1], fed=True)
                done[i + 1] = True
                i += 2
                continue
            elif "=" in a and _password_command(a.partition("=")[0]):
                name = a.partition("=")[0]
                out[i] = name + "=" + self.script(a[len(name) + 1:], fed=True)
                done[i] = True
            elif prog == "rclone" and a == "config" and self._rclone_pairs(argv, out, done, i):
                break
            elif prog == "net" and a.startswith("/"):
                pass  # Windows' `net user bob X /add`: an option, not an operand
            elif a in _POSITIONAL_ARG_OPTS.get(prog, ()) and nxt:
                i += 2  # `cargo login --registry r X`: the registry is no token
                continue
            elif a in ("config", "configure") and self._config(argv, out, done, i, prog):
                pass
            elif prog in _ORACLE and _oracle_login(a):
                user, _slash, rest = a.partition("/")  # user/password@db: the password goes
                _pw, at, db = rest.partition("@")
                self._count("secret-field")
                out[i] = f"{self._text(user)}/{REDACTED}{at}{self._text(db)}"
                done[i] = True
            elif prog == "openssl" and subcommand == "passwd" and a in _OPENSSL_PASSWD_ARG_OPTS:
                i += 2  # -salt S: not a password
                continue
            elif (n := _AFTER_WORD.get(prog, {}).get(a)) is not None:
                j = i + 1
                while j < len(argv) and j - i <= n and not argv[j].startswith("-"):
                    j += 1
                if j > i + 1:
                    hide(j - 1)
                i = j
                continue
            elif prog in _RUNS_A_COMMAND and a in _RUNS_A_COMMAND[prog] and nxt:
                i += 2  # sshpass -f FILE: its own option, with its value
                continue
            elif prog in _RUNS_A_COMMAND and not a.startswith("-"):
                out[i:] = self.redact(argv[i:])  # the command it runs, by its own rules
                done[i:] = [True] * (len(argv) - i)
                break
            elif nxt and not done[i + 1] and option_value(a, argv[i + 1]):
                hide(i + 1)  # a random token after `-p` or `password`, whatever the program
                i += 2
                continue
            elif not a.startswith("-"):
                if subcommand is None:
                    subcommand = a
                elif subcommand in positional and "=" not in a:
                    hide(i)
                    subcommand = ""  # only the first positional
                elif prog == "openssl" and subcommand == "passwd":
                    hide(i)
                elif prog == "net" and subcommand.lower() in ("user", "use"):
                    operands += 1  # `net user NAME PASSWORD`, `net use [D:] \\h\s PASSWORD`
                    if a != "*" and (operands == 2 if subcommand.lower() == "user" else any(
                            w.startswith(("\\", "//")) for w in argv[start + 2:i])):
                        hide(i)
                elif subcommand in second:
                    operands += 1
                    if operands == 2:
                        hide(i)
            i += 1
        for k, a in enumerate(out):
            if not done[k]:
                out[k] = self._text(a)
        return self._across(out, done)

    def _across(self, out: list[str], done: list[bool]) -> list[str]:
        """Shapes of several elements, which no element holds alone (`echo Authorization:
        Bearer X`, `mytool password: X`): each run of free elements redacted as the line
        it makes, and taken back when its words still line up (a marker of several words
        would not: the elements stay as they were redacted one by one). Free: no blank in
        it, not judged by a command-line rule, not an option's value (those rules know
        better than prose: `openssl enc -pass env:PW` is kept)."""
        def free(n: int) -> bool:
            return bool(out[n]) and not done[n] and not any(c.isspace() for c in out[n]) and (
                not (n and out[n - 1].startswith("-")))

        k = 0
        while k < len(out):
            j = k
            while j < len(out) and free(j):
                j += 1
            if j - k >= 2:
                line = " ".join(out[k:j])
                red = self._text(line)
                if red != line and len(words := red.split(" ")) == j - k:
                    out[k:j] = words
            k = max(j, k + 1)
        return out

    def _config(self, argv: list[str], out: list[str], done: list[bool], i: int,
                prog: str) -> bool:
        """``npm config set KEY VALUE``, ``git config [--global] KEY VALUE``."""
        j = i + 1
        while j < len(argv) and (argv[j].startswith("-") or argv[j] in {"set", "add"}):
            j += 1
        key = argv[j].rsplit(":", 1)[-1].rsplit(".", 1)[-1] if j < len(argv) else ""
        if prog == "poetry" and j + 1 < len(argv) and argv[j].startswith(
                ("http-basic.", "pypi-token.")):
            # `poetry config pypi-token.pypi X`, `poetry config http-basic.foo USER X`
            k = j + 2 if argv[j].startswith("http-basic.") else j + 1
            if k < len(argv) and not looks_harmless_value(argv[k], "password"):
                self._count("secret-field")
                out[k] = REDACTED
                done[k] = True
            return True
        if prog == "bundle" and j + 1 < len(argv) and "." in argv[j]:
            # `bundle config set --global gems.example.com USER:PASSWORD`
            self._userpass(argv, out, done, j + 1, sep=":", skip=0, numbers=True)
            return True
        if j + 1 < len(argv) and looks_secret_name(key):
            value = argv[j + 1]
            if not looks_harmless_value(value, key):
                self._count("secret-field")
                out[j + 1] = REDACTED
            done[j + 1] = True
            return True
        return False

    def _userpass(self, argv: list[str], out: list[str], done: list[bool], i: int, *,
                  sep: str, skip: int, numbers: bool) -> None:
        """``user:password``; ``numbers``: a number there is a password too (curl's, not
        the ``uid:gid`` of ``docker run -u 1000:1000``)."""
        user, found, pw = argv[i][skip:].partition(sep)
        if found and numbers and pw in DUMMY_PASSWORDS and token_shaped(user):
            # the token as the user name, no password (`curl -u TOKEN:`, `-u KEY:X`): curl
            # -v then prints `Server auth using Basic with user 'TOKEN'`
            self._count("secret-field")
            out[i] = argv[i][:skip] + REDACTED + sep + pw
            done[i] = True
        elif found and pw and not pw.startswith("[REDACTED") and not looks_harmless_value(
                pw, "password" if numbers else ""):
            self._count("secret-field")
            out[i] = argv[i][:skip] + self._text(user) + sep + REDACTED
            done[i] = True

    def _rclone_pairs(self, argv: list[str], out: list[str], done: list[bool], i: int
                      ) -> bool:
        """``rclone config create NAME TYPE [KEY VALUE]...`` (``update NAME``, ``password
        NAME``): each VALUE whose KEY names a secret (``pass``, ``secret_access_key``,
        ``token``)."""
        sub = argv[i + 1] if i + 1 < len(argv) else ""
        skip = {"create": 2, "update": 1, "password": 1}.get(sub)
        if skip is None:
            return False
        at = [k for k in range(i + 2, len(argv)) if not argv[k].startswith("-")][skip:]
        for key, value in zip(at[::2], at[1::2], strict=False):
            if "=" not in argv[key] and looks_secret_name(argv[key]) and not (
                    looks_harmless_value(argv[value], argv[key])):
                self._count("secret-field")
                out[value] = REDACTED
                done[value] = True
        return True

    def _openssl_pass(self, argv: list[str], out: list[str], done: list[bool], i: int,
                      skip: int) -> None:
        """``pass:X`` is the password itself; ``env:``, ``file:``, ``fd:``, ``stdin`` name
        where it is."""
        value = argv[i][skip:]
        done[i] = True  # judged: `env:PW` names where the password is
        if value.startswith("pass:") and len(value) > 5:
            self._count("secret-field")
            out[i] = argv[i][:skip] + "pass:" + REDACTED

    def script(self, script: str, *, fed: bool = False) -> str:
        """A shell script given with ``-c``: each simple command redacted as argv. ``fed``:
        a command whose output is a password (restic's ``--password-command``): what an
        ``echo`` or ``printf`` in it prints goes too."""
        entries = self._entries(script)
        for e in entries if fed and entries is not None else ():
            if isinstance(e, tuple):
                self.feed(*e)
        if entries is None or not any(isinstance(e, tuple) and e[0] != e[1] for e in entries):
            return self._text(script)
        words: list[str] = []
        cleaned: list[str] = []
        for e in entries[:-1]:
            words += e[0] if isinstance(e, tuple) else [e]
            cleaned += e[1] if isinstance(e, tuple) else [e]
        kept = rejoin(script, words, cleaned, script=True)  # the script as it was written
        return kept if kept is not None else " ".join(
            join_words(*e) if isinstance(e, tuple) else e for e in entries[:-1])

    def changes(self, script: str) -> list[tuple[str, str]]:
        """Each word of ``script`` that redaction changes, in order, with what it becomes."""
        return [(w, c) for e in self._entries(script) or () if isinstance(e, tuple)
                for w, c in zip(*e, strict=True) if w != c]

    def _entries(self, script: str) -> list[str | tuple[list[str], list[str]]] | None:
        """``script``'s simple commands, each with its words redacted as argv, and the
        separators between them; what a pipeline feeds a program that reads a password
        from standard input is redacted too (``echo X | docker login --password-stdin``).
        None when it does not parse."""
        lex = shlex.shlex(script, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        try:
            words = list(lex)
        except ValueError:
            return None
        entries: list[str | tuple[list[str], list[str]]] = []
        cmd: list[str] = []
        for w in [*words, ";"]:
            if w and all(c in "();&|<>" for c in w):
                if cmd:
                    entries.append((cmd, self.redact(cmd)))
                    cmd = []
                entries.append(w)
            else:
                cmd.append(w)
        pipeline: list[tuple[list[str], list[str]]] = []
        for k, e in enumerate(entries):
            if e == "<<<" and 0 < k < len(entries) - 1:  # a here-string: `sudo -S <<< X`
                fed_cmd, word = entries[k - 1], entries[k + 1]
                if isinstance(fed_cmd, tuple) and isinstance(word, tuple) and reads_a_secret(
                        fed_cmd[0]) and not looks_harmless_value(word[0][0], "password"):
                    self._count("secret-field")
                    word[1][0] = REDACTED
            if isinstance(e, tuple):
                if pipeline and reads_a_secret(e[0]):
                    for fed in pipeline:
                        self.feed(*fed)
                pipeline.append(e)
            elif e != "|":
                pipeline = []
        return entries

    def feed(self, words: list[str], cleaned: list[str]) -> bool:
        """``echo X`` or ``printf FMT X`` whose output a program reads as a password:
        its operands go (in ``cleaned``). False when ``words`` prints nothing of the
        kind."""
        start = _program(words)
        prog = program_name(words[start]) if words else ""
        if prog not in ("echo", "printf"):
            return False
        operands = [k for k in range(start + 1, len(words))
                    if prog == "printf" or not words[k].startswith("-")]
        if prog == "printf" and len(operands) > 1:
            operands = operands[1:]  # the format only when it is alone
        for k in operands:
            if not looks_harmless_value(words[k], "password") and not (
                    cleaned[k].startswith("[REDACTED")):
                self._count("secret-field")
                cleaned[k] = REDACTED
        return True
