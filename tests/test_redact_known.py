"""A secret of the run's context, found again anywhere: what redaction removes from the
environment and from argv is removed from the output too, whatever surrounds it.

On the code before, a bash script with ``set -x`` printed ``+ echo <the password>`` from
``"$DB_PASSWORD"`` and the bundle kept it: no rule can know that a bare word is a password.
A tool printing a value it took from ``--password`` kept it the same way.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rage.redact import Redactor
from rage.redact.known import learnable, removed
from tests.conftest import rage_cmd, run_rage
from tests.redact_helpers import reported

S = "Zq8s3cretValue77xY"
T = "k9Xv2LmQ4rTzPq"
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(("original", "redacted", "parts"), [
    (S, "[REDACTED:secret-field]", [S]),
    (f"postgres://app:{S}@db/app", "postgres://app:[REDACTED:url-credentials]@db/app", [S]),
    (f"-Dpassword={S} -Xmx2g", "-Dpassword=[REDACTED:secret-field] -Xmx2g", [S]),
    (f"a={S} b={T}", "a=[REDACTED:x] b=[REDACTED:y]", [S, T]),
    ("plain", "plain", []),
    ("alice:x", "user1:[REDACTED:x]", []),  # a pseudonym does not align: nothing learned
])
def test_removed_finds_what_the_markers_replaced(original: str, redacted: str,
                                                  parts: list[str]) -> None:
    assert removed(original, redacted) == parts


@pytest.mark.parametrize(("value", "learned"), [
    (S, True), (T, True), (AWS, True), ("hunter2xy", True), ("Passw0rd", True),
    ("correct horse battery staple", True),  # long enough to be learned as it is
    ("postgres", False), ("changeme", False), ("Postgres", False), ("secret", False),
    ("12345678", False), ("true", False), ("/run/secrets/db", False), ("${DB_PASSWORD}", False),
    ("short1!", False),
])
def test_only_values_shaped_like_secrets_are_learned(value: str, learned: bool) -> None:
    assert learnable(value) is learned


def test_learning_leaves_counts_and_pseudonyms_as_they_were() -> None:
    r = Redactor(user="alice", home="/home/alice", hostname="build7")
    env = {"DB_PASSWORD": S, "API_TOKEN": T, "HOME": "/home/alice", "USER": "alice",
           "PGPASSWORD": "postgres"}
    assert r.learn([env], ["deploy", "--password", "Yy7Hq2wLzQQ"]) == 3
    assert r.counts == {}
    assert r.pseudonym_map() == {}
    out = r.text(f"echo {S} | login\nusing {T} and Yy7Hq2wLzQQ; db postgres as alice\n")
    assert S not in out and T not in out and "Yy7Hq2wLzQQ" not in out, out
    assert "db postgres as user-1" in out, out
    assert r.counts == {"literal": 3, "user": 1}


def test_rage_redact_knows_its_environment() -> None:
    text = f"+ echo {S}\n+ ./upload {AWS} s3://bucket\nok postgres\n"
    for scan in ("1", "0"):
        env = dict(os.environ, DB_PASSWORD=S, AWS_SECRET_ACCESS_KEY=AWS, PGPASSWORD="postgres",
                   RAGE_NATIVE_SCAN=scan)
        out = subprocess.run(rage_cmd("redact", "--no-pseudonyms"), input=text,
                             capture_output=True, text=True, env=env, check=True).stdout
        assert out == ("+ echo [REDACTED:literal]\n"
                       "+ ./upload [REDACTED:literal] s3://bucket\n"
                       "ok postgres\n"), (scan, out)


XTRACE = """set -x
echo "$DB_PASSWORD" | cat >/dev/null
echo "connecting with $API_TOKEN"
printf '%s\\n' "db $PGPASSWORD"
"""


def test_a_real_xtrace_of_secrets_from_the_environment(tmp_path: Path) -> None:
    """bash prints each command with its expansions: the secrets' values, bare."""
    env = dict(os.environ, DB_PASSWORD=S, API_TOKEN=T, PGPASSWORD="postgres")
    script = tmp_path / "deploy.sh"
    script.write_text(XTRACE)
    proc = run_rage("run", "--app", "deploy", "--", "bash", str(script), env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"+ echo {S}" in proc.stderr and f"connecting with {T}" in proc.stdout
    raw = reported("deploy", tmp_path / "b.tar.zst", env=env)
    assert S.encode() not in raw and T.encode() not in raw
    assert b"+ echo [REDACTED:literal]" in raw
    assert b"connecting with [REDACTED:literal]" in raw
    assert b"db postgres" in raw  # a word-shaped value is redacted only where it is named


def test_a_real_tool_printing_a_value_it_took_from_argv(tmp_path: Path) -> None:
    code = "import sys; print('signing in with', sys.argv[2], 'as', sys.argv[4])"
    proc = run_rage("run", "--app", "signin", "--", sys.executable, "-c", code,
                    "--password", S, "--user", "deploy")
    assert proc.returncode == 0, proc.stderr
    assert f"signing in with {S} as deploy" in proc.stdout
    raw = reported("signin", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert b"signing in with [REDACTED:literal] as deploy" in raw


def test_values_redacted_under_a_name_are_learned_then_found_anywhere() -> None:
    r = Redactor(pseudonymize=False)
    r.start_learning()
    first = r.text(f"PASS={S}\ntoken: ghp_{'a' * 36}\npassword=postgres\nAPI_KEY='{T}'\n")
    assert S not in first and T not in first
    # a provider's format is found anywhere already; a word-shaped value is not learned
    assert r.learned() == (S, T)
    assert r.learned() == ()  # learning stopped
    assert r.text(f"+ mysql_login {S} -h db; echo {T}\n") == (
        "+ mysql_login [REDACTED:literal] -h db; echo [REDACTED:literal]\n")
    assert r.replace_learned(f"early {S}, {T}".encode(), (S, T)) == (
        b"early [REDACTED:literal], [REDACTED:literal]")
    assert r.counts == {"secret-field": 4, "literal": 4}


LEARNED = f"""echo "connecting with {S} first"
set -x
PASS={S}
ping_db "$PASS" 2>/dev/null || true
echo 'token: {T}'
echo "later {T}"
"""


def test_a_real_script_repeating_a_secret_it_named_once(tmp_path: Path) -> None:
    """A shell variable that is no environment variable: the output names it once
    (`+ PASS=X`), and repeats it bare before and after; the report finds every copy."""
    script = tmp_path / "deploy.sh"
    script.write_text(LEARNED)
    proc = run_rage("run", "--app", "deploy2", "--", "bash", str(script))
    assert proc.returncode == 0, proc.stderr
    assert f"+ ping_db {S}" in proc.stderr and f"later {T}" in proc.stdout
    raw = reported("deploy2", tmp_path / "b.tar.zst")
    assert S.encode() not in raw and T.encode() not in raw
    for line in (b"connecting with [REDACTED:literal] first", b"+ PASS=[REDACTED:secret-field]",
                 b"+ ping_db [REDACTED:literal]", b"later [REDACTED:literal]"):
        assert line in raw, line


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.text("ab:=[]x ", max_size=6), st.text("abx=:", min_size=1,
                                                                  max_size=6)),
                min_size=1, max_size=5),
       st.text("ab:=x ", max_size=6), st.text("ab", max_size=2))
def test_removed_aligns_as_its_expression_does(parts: list[tuple[str, str]], tail: str,
                                               noise: str) -> None:
    """The one-pass alignment (marker_spans) gives what `(.+?)` between the pieces,
    matched whole, gives (what removed() used to run), aligned or not: texts full of
    repeats, pieces that recur."""
    original = "".join(kept + value for kept, value in parts) + tail
    redacted = "".join(kept + "[REDACTED:x]" for kept, _ in parts) + tail + noise
    pieces = re.split(r"\[REDACTED:[a-z0-9-]+\]", redacted)
    m = re.fullmatch("(.+?)".join(map(re.escape, pieces)), original, re.S)
    assert removed(original, redacted) == (list(m.groups()) if m else [])


LONG_RUN = """
import sys
secret = open(sys.argv[1]).read().strip()
print("+ export API_PASSWORD=" + secret, flush=True)
line = "step finished: copied a batch of ordinary files to the build cache\\n"
sys.stdout.write(line * (12_000_000 // len(line)))
print("+ echo " + secret)
"""


def test_a_long_runs_output_kept_at_the_default_cap_is_learned_from(tmp_path: Path) -> None:
    """A run printing more than the default output cap (8 MiB) keeps its head and tail: a
    file of 8 MiB and its marker. It names a value once at its start and repeats it bare at
    its end. Before, a file of that size was redacted by the worker processes, which do not
    learn: the bare copy reached the bundle."""
    secret_file = tmp_path / "secret"
    secret_file.write_text(S)  # never in argv: only what the output names is learned
    script = tmp_path / "long.py"
    script.write_text(LONG_RUN)
    proc = subprocess.run(
        [*rage_cmd(), "run", "--app", "longrun", "--", sys.executable, str(script),
         str(secret_file)], capture_output=True, env={**os.environ}, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith(b"+ echo " + S.encode() + b"\n")
    [out] = Path(os.environ["RAGE_HOME"]).glob("longrun/runs/*/stdout.log")
    assert out.stat().st_size > 8 * 1024 * 1024, "the default cap kept 8 MiB and its marker"
    raw = reported("longrun", tmp_path / "b.tar.zst")
    assert S.encode() not in raw
    assert b"+ export API_PASSWORD=[REDACTED:secret-field]" in raw
    assert b"+ echo [REDACTED:literal]" in raw


def _replaced_one_by_one(data: bytes, learned: list[str]) -> tuple[bytes, int]:
    """What replace_learned did before its one pass: a search of ``data`` for each value,
    longest first (the reference the pass must equal)."""
    n = 0
    for v in sorted({s.encode() for s in learned}, key=len, reverse=True):
        n += data.count(v)
        data = data.replace(v, b"[REDACTED:literal]")
    return data, n


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.text("aB3#xY", min_size=8, max_size=14), min_size=17, max_size=40,
                       unique=True),
       picks=st.lists(st.tuples(st.integers(0, 39), st.sampled_from(["", " ", "x", "aB3"])),
                      max_size=60))
def test_many_learned_values_replaced_in_one_pass_as_one_by_one(
        values: list[str], picks: list[tuple[int, str]]) -> None:
    """More than a few learned values are found in one Hyperscan pass: the same text and
    count as searching for each, longest first, even where copies overlap, touch or hold
    one another (`aB3#xYaB` inside `aB3#xYaB3#`)."""
    data = "".join(values[i % len(values)] + sep for i, sep in picks).encode()
    want, n = _replaced_one_by_one(data, values)
    r = Redactor(pseudonymize=False)
    assert r.replace_learned(data, values) == want
    assert r.counts.get("literal", 0) == n


def test_a_log_naming_hundreds_of_secrets_has_each_echo_removed(tmp_path: Path) -> None:
    """A file naming a secret every hundred lines, each echoed once at the end: all 400
    values are learned and their repeats found (in one pass over the file, see
    Redactor.replace_learned; one search a value took ten times the redaction)."""
    import random

    rng = random.Random(3)
    lines = []
    secrets = []
    for i in range(40_000):
        if i % 100 == 7:
            s = "".join(rng.choices("abcdefXYZ0123456789", k=20))
            secrets.append(s)
            lines.append(f"2026-12-02T10:00:00Z INFO token={s} request_id={i:016x}\n")
        else:
            lines.append(f"2026-12-02T10:00:00Z INFO session user lookup request_id={i:016x}\n")
    lines += [f"echo {s}\n" for s in secrets]
    src = tmp_path / "app.log"
    src.write_text("".join(lines))
    proc = subprocess.run([sys.executable, "-m", "rage", "redact", str(src), "--json"],
                          capture_output=True, text=True, check=False, env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    assert not any(s in proc.stdout for s in secrets)
    assert proc.stdout.count("echo [REDACTED:literal]\n") == len(secrets) == 400
