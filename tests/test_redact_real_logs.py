"""Real logs written by real systems come out of redaction byte for byte (issue 34, part 3).

The corpus (tests/corpus/real_logs/, its README says where each file comes from) is public
system logs (loghub) and a Debian machine's own logs and tools' output: no line holds a
secret. Each is redacted as one input, as a user would: `rage redact FILE`, the same bytes
through a pipe, and a recorded run's report; each line must come out as it went in. Then
the classes those logs showed damaged, one by one, each beside a secret of the same shape
that still goes.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from rage.redact import Redactor
from tests.conftest import rage_cmd, run_rage
from tests.redact_helpers import member

CORPUS = Path(__file__).resolve().parent / "corpus" / "real_logs"
SOURCES = sorted(p for p in CORPUS.iterdir() if p.suffix in (".log", ".txt"))
# what a report's pseudonyms make of other people's homes in the logs (`/home/curi`): by
# design, not damage
_HOMES = re.compile(rb"(/home/|/Users/)[A-Za-z0-9_][A-Za-z0-9_.\-]*")


def _lines() -> list[tuple[str, bytes]]:
    return [(p.name, line) for p in SOURCES for line in p.read_bytes().splitlines(keepends=True)]


def _damaged(lines: list[tuple[str, bytes]], out: bytes, homes: bool = False) -> list[str]:
    """Each line that did not come out as it went in, with its source."""
    got = out.splitlines(keepends=True)
    if len(got) != len(lines):
        return [f"{len(lines)} lines came out as {len(got)}"]
    if homes:
        return [f"{src}: {a!r} -> {b!r}" for (src, a), b in zip(lines, got, strict=True)
                if _HOMES.sub(rb"\1~", a) != _HOMES.sub(rb"\1~", b)]
    return [f"{src}: {a!r} -> {b!r}" for (src, a), b in zip(lines, got, strict=True) if a != b]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[str, bytes]]]:
    """Every source in one file: what one source's line teaches the engine (a learned value)
    is tried against every other source's lines."""
    lines = _lines()
    path = tmp_path_factory.mktemp("real") / "real.log"
    path.write_bytes(b"".join(line for _, line in lines))
    return path, lines


def test_the_corpus_is_a_few_thousand_real_lines() -> None:
    lines = _lines()
    assert len(SOURCES) >= 30 and len(lines) > 5000
    assert {src.split("-")[0] for src, _ in lines} >= {"loghub", "debian", "openssl",
                                                        "postgresql"}


def test_real_logs_are_kept_byte_for_byte_from_a_file(
        corpus: tuple[Path, list[tuple[str, bytes]]]) -> None:
    path, lines = corpus
    proc = subprocess.run(rage_cmd("redact", "--no-pseudonyms", "--json", str(path)),
                          capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert _damaged(lines, proc.stdout) == []
    assert b'"total": 0' in proc.stderr


def test_real_logs_are_kept_byte_for_byte_through_a_pipe(
        corpus: tuple[Path, list[tuple[str, bytes]]]) -> None:
    """A pipe is read as it comes (blocks cut wherever a read ends) and learns forward
    only: the same output as the file."""
    path, lines = corpus
    with subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE) as cat:
        proc = subprocess.run(rage_cmd("redact", "--no-pseudonyms", "-q", "-"), stdin=cat.stdout,
                              capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert _damaged(lines, proc.stdout) == []


def test_real_logs_are_kept_byte_for_byte_in_a_report(
        corpus: tuple[Path, list[tuple[str, bytes]]], tmp_path: Path) -> None:
    """Recorded by `rage run`, then reported: the run's output is read whole and what it
    names under a secret name is learned and removed everywhere else in the bundle."""
    path, lines = corpus
    proc = run_rage("run", "--app", "reallogs", "--", "cat", str(path), text=False,
                    timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "b.tar.zst"
    rep = run_rage("report", "--last", "--app", "reallogs", "--yes", "--output", str(out))
    assert rep.returncode == 0, rep.stderr
    stdout = subprocess.run(["tar", "--zstd", "-xOf", str(out), "run/stdout.log"], check=True,
                            capture_output=True).stdout
    assert _damaged(lines, stdout, homes=True) == []
    assert "[REDACTED" not in member(out, "summary.md")


# (line, a secret of the same shape that still goes): each line was damaged before
CLASSES = [
    # a hex number (ZooKeeper's session ids); a token of hex digits alone still goes
    ("Processed session termination for sessionid: 0x14ede63a5a70023",
     "session termination for sessionid: 9f86d081884c7d659a2feaa0c55ad015"),
    ("Got user-level KeeperException when processing sessionid:0x34ed93485090001 type:create",
     "sessionid: s%3Aj9Xv2LmQ4rTzPq8sW3e"),
    # a Java class at a line, behind a name holding `session`
    ("INFO  [SessionTracker:ZooKeeperServer@325] - Expiring session 0x24ede63a01b003b",
     "session_token: Zq8s3cretValue77xY"),
    # Hadoop's auth method, a constant under `auth`
    ("Server: Auth successful for job_1445144423722_0020 (auth:SIMPLE)",
     "(auth:Zq8s3cretValue77xY)"),
    # macOS's 802.11 failure and deauthentication reasons
    ("Received Capture notice id: 1498928900.759059, reason = AuthFail:sts:5_rsn:0",
     "reason = AuthToken:Zq8s3cretValue77xY"),
    ("Received Capture notice id: 1499133420.914478, reason = DeauthInd:sts:0_rsn:7",
     "reason = AuthKey:Zq8s3cretValue77xY"),
    # sendmail's delivery status notification code: a version's shape
    ("relay=[127.0.0.1] [127.0.0.1], dsn=4.0.0, stat=Deferred: Connection refused",
     "relay=[127.0.0.1], dsn=https://4f3e0a1b2c3d4e5f6a7b8c9d0e1f2a3b@o1.ingest.sentry.io/1"),
    # Android's objects as toString prints them
    ("printFreezingDisplayLogsopening app wtoken = AppWindowToken{9f4ef63 token=Token{a64f992 "
     "ActivityRecord{de9231d u0 com.tencent.qt.qtl/.activity.info.NewsDetailXmlActivity t761}}}",
     "wtoken = Zq8s3cretValue77xY"),
    # Android's notification key: a record of plain fields; a Laravel Sanctum token goes
    ("PhoneStatusBar: addNotification key=0|com.tencent.mobileqq|121|null|10111",
     "addNotification key=5|Zq8s3cretValue77xYk9Xv2LmQ4rTzPq0aBcDeFgH"),
    # a CamelCase name under a key of a tag or a brand (Keystone on macOS)
    ("Info.plist tagKey=KSChannelID brandPath=/Users/x/Library/Google/Google Chrome Brand.plist",
     "tagKey=Zq8s3cretValue77xY brandPath=/x"),
    ("brandKey=KSBrandID versionPath=/Applications/Google Chrome.app/Contents/Info.plist",
     "brandKey=k9Xv2LmQ4rTzPq versionPath=/x"),
    # a URL with no password in it (its user an e-mail address); one with a password goes
    ("UserInfo={NSErrorFailingURLStringKey=https://gsp-ssl.ls.apple.com/dispatcher.arpc, "
     "NSErrorFailingURLKey=https://gsp-ssl.ls.apple.com/dispatcher.arpc}",
     "UserInfo={NSErrorFailingURLStringKey=https://bob:Zq8s3cretValue77xY@host/x}"),
    ("NSErrorFailingURLStringKey=https://13957525385%40163.com@p28-contacts.icloud.com/1/",
     "api_key_url_value=https://Zq8s3cretValue77xYk9Xv2LmQ4rTzPq@host/x"),
    # PostgreSQL's connection log: a pair after `authorized`
    ("LOG:  connection authorized: user=postgres database=postgres application_name=psql",
     "LOG:  connection authorized: password=Zq8s3cretValue77xY"),
    # apt's package versions, dpkg's architecture
    ("Commandline: apt-get install google-cloud-cli-gke-gcloud-auth-plugin=528.0.0-0 kubectl",
     "Commandline: deploy --auth-token=Zq8s3cretValue77xY kubectl"),
    ("2025-06-24 14:37:41 install dbus-session-bus-common:all <none> 1.14.10-1~deb12u1",
     "session_key:Zq8s3cretValue77xY"),
    ("2026-05-09 07:29:21 install python3-oauthlib:all <none> 3.2.2-1",
     "oauth_token:Zq8s3cretValue77xY"),
    # openssl.cnf: variables' paths, a certificate's extensions, a prompt's label
    ("private_key\t= $dir/private/cakey.pem# The private key",
     "private_key\t= Zq8s3cretValue77xY # The private key"),
    ("key = $insta::newkey # insta.priv.pem", "key = Zq8s3cretValue77xY # insta.priv.pem"),
    ("subjectKeyIdentifier=hash", "subjectKey=Zq8s3cretValue77xY"),
    ("authorityKeyIdentifier=keyid:always,issuer", "authorityKey=Zq8s3cretValue77xY"),
    ("keyUsage = nonRepudiation, digitalSignature, keyEncipherment",
     "key = Zq8s3cretValue77xY, digitalSignature"),
    ("challengePassword\t\t= A challenge password", "challengePassword\t\t= A9sQ2z#challenge"),
    (" -key val              Key for signing, and to include unless -in given",
     " -key Zq8s3cretValue77xY -in given"),
    # a changelog's bullet
    ("  * credential: sanitize the user prompt (CVE-2024-50349)",
     "  * credential: Zq8s3cretValue77xY"),
    # an actor system and a scheduler as a URL's user, not credentials
    ("Remoting started; listening on addresses :[akka.tcp://sparkExecutorActorSystem@mesos-"
     "slave-07:55904]", "listening on :[akka.tcp://4f3e0a1b2c3d4e5f6a7b8c9d0e1f@mesos:55904]"),
    ("Connecting to driver: spark://CoarseGrainedScheduler@10.10.34.11:48069",
     "Connecting to driver: spark://CoarseGrainedScheduler:Zq8s3cretValue77xY@10.10.34.11"),
    # initdb's method options
    ("/usr/lib/postgresql/15/bin/initdb -D /var/lib/postgresql/15/main --auth-local peer "
     "--auth-host scram-sha-256 --no-instructions",
     "/usr/lib/postgresql/15/bin/initdb -D /x --auth Zq8s3cretValue77xY"),
    # a time, a placeholder after an unknown scheme, docker's warning
    ("token_obtained_at = 2026-03-01T10:00:00Z", "token = 2026-03-01T10:00:00Zq8s3cretV77"),
    ("Authorization: SSWS ${OKTA_API_TOKEN}",
     "Authorization: SSWS 00Zq8s3cretValue77xYk9Xv2LmQ4rTzPq"),
    ("WARNING! Using --password via the CLI is insecure. Use --password-stdin.",
     "docker login --password Zq8s3cretValue77xY registry.example.com"),
]


@pytest.mark.parametrize(("line", "secret"), CLASSES, ids=[c[0][:40] for c in CLASSES])
def test_an_identifier_behind_a_secret_word_is_kept_and_a_secret_there_goes(
        line: str, secret: str) -> None:
    r = Redactor(pseudonymize=False)
    assert r.text(line) == line
    assert "[REDACTED:" in r.text(secret)


def test_a_line_ending_a_pty_made_of_a_programs_crlf_is_kept() -> None:
    """apt's term.log keeps what dpkg's scripts wrote through a pty: their own `\\r\\n`
    became `\\r\\r\\n`, a line's end, not a redraw. A redraw is still drawn."""
    r = Redactor(pseudonymize=False)
    text = b"Creating group 'polkitd' with GID 996.\r\r\nnext\r\n"
    assert r.bytes(text) == text
    assert r.bytes(b"progress 5%\rprogress 10%\r\r\n") == b"progress 10%\r\r\n"


def test_an_identifier_once_taken_for_a_secret_is_not_learned() -> None:
    """A value a name like `sessionid` or `key` stood before is learned (removed wherever
    else it appears) only if it is shaped like a token, or named a password's: a guess, if
    wrong, was removed from every other line too (`Skipping [REDACTED:literal]`)."""
    r = Redactor(pseudonymize=False)
    r.start_learning()
    out = r.text("session: ab12cd34ef\nkey: build-42-linux\npassword: hunter2hunter\n"
                 "token: Zq8s3cretValue77xY\n")
    assert out.count("[REDACTED:secret-field]") == 4  # each named copy goes
    assert r.learned() == ("hunter2hunter", "Zq8s3cretValue77xY")


def test_a_file_and_a_pipe_learn_nothing_from_a_log_of_identifiers(tmp_path: Path) -> None:
    """The amplification, end to end: an identifier a rule takes (a session id with no `0x`)
    is not learned, so its other copies stay, in a file as through a pipe."""
    log = ("session: ab12cd34ef\n" + "expiring ab12cd34ef\n" * 3).encode()
    src = tmp_path / "zk.log"
    src.write_bytes(log)
    by_file = subprocess.run(rage_cmd("redact", "-q", str(src)), capture_output=True,
                             check=False)
    piped = subprocess.run(rage_cmd("redact", "-q", "-"), input=log, capture_output=True,
                           check=False)
    for proc in (by_file, piped):
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(b"session: [REDACTED:secret-field]\n")
        assert proc.stdout.count(b"expiring ab12cd34ef\n") == 3
    assert by_file.stdout == piped.stdout



def test_real_logs_cut_into_blocks_anywhere_give_the_whole_inputs_output() -> None:
    """However the bytes arrive (a pipe's reads, a stream's blocks), the output is the
    whole input's: 40 cuts at random places, each a block of its own."""
    import random

    data = b"".join(line for _, line in _lines())
    whole = Redactor(pseudonymize=False).bytes(data)
    rng = random.Random(34)
    cuts = sorted(rng.sample(range(1, len(data)), 40))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    out = b"".join(Redactor(pseudonymize=False).stream(iter(chunks), block=1, workers=0))
    assert out == whole == data
