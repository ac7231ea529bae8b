"""A command line given to ``Redactor.text`` keeps its text: only the words redaction
changes are replaced (round 28).

``Redactor.text`` reads a one-line string that looks like a command (``mysql -pX``,
``net use \\\\s\\share /user:u X``) as one, by its words. It used to join the redacted
words anew, so the rest of the line changed too: runs of blanks became one, quotes were
rewritten (``"my db"`` -> ``'my db'``), a comment's ``#`` was quoted and its words taken
for arguments (``net use ... X # mapped drive`` lost ``mapped drive``), and a backslash,
which the shell reads as an escape, was lost (``\\\\s\\share`` -> ``'\\sshare'``): the
bundle showed a command the user never typed. The note, a collector's value and any other
one-line text go through it.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rage.redact import Redactor
from rage.redact.argv import word_spans
from tests.conftest import run_rage

S = "Zq8s3cretValue77xY"
R = "[REDACTED:secret-field]"


def text(s: str) -> str:
    return Redactor(pseudonymize=False).text(s)


def test_only_the_secret_word_changes() -> None:
    cases = [
        (f"net use \\\\fs\\share /user:deploy {S}", f"net use \\\\fs\\share /user:deploy {R}"),
        (f'mysql  -u root   -p{S} "my db"', f'mysql  -u root   -p{R} "my db"'),
        (f"$ sshpass -p '{S}' ssh  host", f"$ sshpass -p '{R}' ssh  host"),
        (f'curl -u "bob:{S}" https://x.example', f'curl -u "bob:{R}" https://x.example'),
        (f"docker login -p {S} reg.example  # login", f"docker login -p {R} reg.example  # login"),
        (f"net use \\\\fs\\share /user:deploy {S}  # mapped drive",
         f"net use \\\\fs\\share /user:deploy {R}  # mapped drive"),
        (f"mysql -p{S}  # password={S}", f"mysql -p{R}  # password={R}"),
        (f"redis-cli  -a {S}\tping", f"redis-cli  -a {R}\tping"),
    ]
    for given_, want in cases:
        assert text(given_) == want


def test_a_word_that_needs_quotes_gets_them() -> None:
    out = text("redis-cli -a Zq8s3cret\\ Value77 ping")
    assert out == f"redis-cli -a '{R}' ping"
    assert shlex.split(out) == ["redis-cli", "-a", R, "ping"]


# words that neither take the next one as their value nor end the options
_BEFORE = st.sampled_from(["-v", "-hdb.internal", "--port=5432", "-uroot", '"--user=my user"',
                           "'--host=x y'", "--ssl-mode=REQUIRED", "-B", "\"-s\""])
_PLAIN = st.sampled_from(["-h", "db.internal", "--port", "5432", "-u", "root", '"my db"',
                          "'x y'", "a\\ b", "\\\\srv\\share", "--", "-v", "$HOME",
                          '"a\\"b"', "--ssl-mode=REQUIRED", "# a comment", "#"])
_BLANKS = st.text(alphabet=" \t", min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(before=st.lists(st.tuples(_BEFORE, _BLANKS), max_size=5),
       after=st.lists(st.tuples(_BLANKS, _PLAIN), max_size=5), lead=_BLANKS)
def test_the_rest_of_the_line_stays_byte_for_byte(
        before: list[tuple[str, str]], after: list[tuple[str, str]], lead: str) -> None:
    head = "mysql" + lead + "".join(w + b for w, b in before)
    tail = "".join(b + w for b, w in after)
    line = f"{head}-p{S}{tail}"
    assert word_spans(line) is not None
    assert text(line) == f"{head}-p{R}{tail}"


def test_word_spans_split_as_the_shell_does() -> None:
    for s in ["a  'b c' \"d\\\"e\" f\\ g", "\\\\s\\share x", "x=\"1 2\"y 'z'", "  lead"]:
        spans = word_spans(s)
        assert spans is not None
        assert [shlex.split(s[a:b])[0] for a, b in spans] == shlex.split(s)
    for bad in ["a 'open", 'b "open', "c \\"]:
        assert word_spans(bad) is None


def test_real_report_note_keeps_the_command_a_user_typed(tmp_path: Path) -> None:
    """A real run and `rage report --note` naming the command that failed, with its
    password: the bundle's note is that command with only the password replaced."""
    proc = run_rage("run", "--app", "drives", "--", sys.executable, "-c", "raise SystemExit(2)")
    assert proc.returncode == 2, proc.stderr
    note = f"net use \\\\fs\\share /user:deploy {S}   # mapped drive"
    out = tmp_path / "n.tar.zst"
    rep = run_rage("report", "--last", "--app", "drives", "--yes", "--output", str(out),
                   "--note", note)
    assert rep.returncode == 0, rep.stderr
    raw = subprocess.run(["zstd", "-dc", str(out)], check=True, capture_output=True).stdout
    assert S.encode() not in raw
    want = f"net use \\\\fs\\share /user:deploy {R}   # mapped drive"
    assert json.dumps(want)[1:-1].encode() in raw or want.encode() in raw


def test_a_script_given_with_c_keeps_its_text() -> None:
    """`bash -c SCRIPT` in argv: the script's lines, blanks, quotes and comments stay;
    before, its words were joined anew into one line."""
    red = Redactor(pseudonymize=False)
    script = f'set -e\nmysql  -p{S}  app\n  ls -l  # list\nredis-cli -a "{S}" ping && echo  ok'
    out = red.argv(["bash", "-c", script])
    assert out == ["bash", "-c", script.replace(S, R)]
    fed = f"echo {S} | docker login -u me --password-stdin reg.example ;  date"
    assert red.argv(["sh", "-c", fed]) == ["sh", "-c", fed.replace(S, R)]


def test_word_spans_of_a_script_split_as_the_redactor_reads_it() -> None:
    from rage.redact.argv import _script_words

    for s in ["a&&b|c", 'x="a;b" ; y', "echo x # c\nls", "a#b c\nd", "f() { g; }"]:
        spans = word_spans(s, script=True)
        assert spans is not None
        assert [w for a, b in spans for w in _script_words(s[a:b])] == _script_words(s)
