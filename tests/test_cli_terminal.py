"""What reaches the terminal: inert text from bundles and records, colour only when wanted,
whole lines in pipes, headers, footers, help texts, and confirmation before deleting."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.test_cli_exit_codes import RAGE, pty_script, rage
from tests.test_select import record
from tests.test_upload_servers import Reply, make_bundle, serving

ESCAPES = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
# title, clipboard write (OSC 52), screen clear, a fake verdict on a line of its own
HOSTILE = "\x1b]0;pwned\x07\x1b]52;c;SGVsbG8=\x07\x1b[2J\rchecksums: ok"


def no_controls(data: str | bytes) -> bool:
    raw = data.encode() if isinstance(data, str) else data
    return ESCAPES.search(raw.replace(b"\r\n", b"\n")) is None


def test_inspect_makes_a_hostile_bundle_inert(tmp_path: Path) -> None:
    b = make_bundle(tmp_path / "evil.tar.zst", summary=f"# hi {HOSTILE}\n".encode())
    p = subprocess.run([RAGE, "inspect", str(b)], capture_output=True, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    assert no_controls(p.stdout) and no_controls(p.stderr)
    out = p.stdout.decode()
    assert "\\x1b]0;pwned\\x07" in out  # shown, escaped
    assert [ln for ln in out.splitlines() if ln.strip() == "checksums: ok"] == ["checksums: ok"]
    # a member name with control characters is refused outright (the reader rejects it,
    # as the receiver does), and the refusal quotes it escaped
    b = make_bundle(tmp_path / "evil2.tar.zst", extra=[(f"run/{HOSTILE}.log", b"x")])
    p = subprocess.run([RAGE, "inspect", str(b)], capture_output=True, timeout=60, check=False)
    assert p.returncode == 6 and b"unsafe member name" in p.stderr
    assert no_controls(p.stdout) and no_controls(p.stderr)


def test_send_makes_the_server_answer_inert(tmp_path: Path) -> None:
    b = make_bundle(tmp_path / "b.tar.zst", app="my\x1b[2Japp")
    with serving(Reply(200, b"{base}/b/\x1b]52;c;SGVsbG8=\x07")) as s:
        p = subprocess.run([RAGE, "send", str(b), "--to", s.url, "--yes"],
                           capture_output=True, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    assert no_controls(p.stdout) and no_controls(p.stderr)
    assert b"\\x1b]52;c;" in p.stdout


def test_list_and_show_make_recorded_text_inert() -> None:
    record("demo", ["demo", HOSTILE], 1)
    for args in (["list"], ["show", "last"]):
        p = subprocess.run([RAGE, *args], capture_output=True, timeout=60, check=False)
        assert p.returncode == 0 and no_controls(p.stdout), (args, p.stdout)


def test_colour_only_when_wanted() -> None:
    record("demo", ["demo"], 1)

    def listing(**env: str) -> str:
        p = pty_script("list", env=env)
        try:
            seen = p.expect("  demo")
            assert p.wait() == 0
            return seen
        finally:
            p.close()

    assert "\x1b[" in listing(TERM="xterm")  # the test can fail: colour is on by default
    assert "\x1b[" not in listing(TERM="xterm", NO_COLOR="1")
    assert "\x1b[" not in listing(TERM="dumb")


def test_piped_list_has_whole_lines_headers_dates_and_a_footer() -> None:
    long_arg = "x" * 300
    for i in range(3):
        record("demo", ["demo", f"run{i}", long_arg], i)
    p = rage("list", "--limit", "2", env={"COLUMNS": "80"})
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["ID", "STARTED", "STATUS", "EXIT", "TIME", "COMMAND"]
    assert len(lines) == 3 and all(ln.endswith(long_arg) for ln in lines[1:])
    assert "…" not in p.stdout
    assert all(re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", ln) for ln in lines[1:])
    assert "showing the newest 2; more with --limit" in p.stderr
    whole = rage("list")
    assert "more with" not in whole.stderr and len(whole.stdout.splitlines()) == 4


def test_help_texts_are_whole() -> None:
    p = rage("--help", env={"COLUMNS": "80"})
    commands = p.stdout.split("Commands:", 1)[1]
    assert "..." not in commands
    from rage.cli.main import COMMANDS, SUMMARIES

    rows = commands.strip().splitlines()
    assert [ln.split()[0] for ln in rows] == sorted(COMMANDS)
    for row in rows:
        name, summary = row.split(None, 1)
        assert summary == SUMMARIES.get(name, summary), row
    assert "Show at most N runs." in rage("list", "--help").stdout


def test_forget_all_needs_a_terminal_or_yes() -> None:
    record("demo", ["demo", "1"], 1)
    record("demo", ["demo", "2"], 1)
    p = rage("forget", "--all", "--app", "demo")  # stdin is /dev/null
    assert p.returncode == 2 and "--yes" in p.stderr
    assert len(rage("list", "--app", "demo").stdout.splitlines()) == 3
    ok = rage("forget", "--all", "--app", "demo", "--yes")
    assert ok.returncode == 0 and "forgot 2 run(s) of demo" in ok.stdout
    assert rage("list", "--app", "demo").stdout == ""


def test_show_gives_date_sizes_exception_and_truncation() -> None:
    tb = b"Traceback (most recent call last):\n  File \"x\", line 1\nValueError: bad value 42\n"
    record("demo", ["demo"], 1, output=b"o" * 5000,
           files={"traceback.txt": tb},
           extra={"truncation": [{"name": "output.log", "total_bytes": 10_000_000,
                                  "dropped_bytes": 2_000_000}]})
    p = rage("show", "last")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert re.search(r"started: \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", out)
    assert "exception: ValueError: bad value 42" in out
    assert "truncated: output.log: 1.9 MiB dropped from the middle" in out
    assert "output.log  (4.9 KiB)" in out
    log = rage("show", "last", "--output-log")
    assert "ValueError: bad value 42" in log.stdout and "==> traceback.txt <==" in log.stdout


def test_inspect_shows_redaction_counts_and_every_member() -> None:
    record("demo", ["demo", "--token=ghp_" + "a" * 36], 1, output=b"hello\n")
    home = Path(os.environ["RAGE_HOME"])
    out = home / "b.tar.zst"
    assert rage("report", "--last", "--yes", "--no-collect", "--output", str(out)).returncode == 0
    p = rage("inspect", str(out))
    assert p.returncode == 0, p.stderr
    assert re.search(r"Redacted before bundling: [1-9]\d* value\(s\)", p.stdout)
    listed = p.stdout.split("Members of", 1)[1]
    for name in ("manifest.json", "summary.md", "run/meta.json", "run/output.log"):
        assert name in listed


def test_a_broken_config_key_is_an_error(tmp_path: Path, config_file: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    config_file.write_text(f'[default]\nmax_runs = "abc"\nuplod_url = "x"\n'
                           f'upload_url = "{inbox.as_uri()}"\n')
    record("demo", ["demo"], 1)
    p = rage("report", "--last", "--yes", "--no-collect")
    assert p.returncode == 6  # as documented: a broken config is an error
    assert p.stderr == (f"rage: {config_file} [default]: max_runs: expected a whole number, "
                        "not 'abc'\n")
    assert list(inbox.iterdir()) == []
    q = rage("gc")
    assert q.returncode == 6 and "max_runs: expected a whole number" in q.stderr
    q = rage("list")  # listing needs no settings: it still lists, and says what is wrong
    assert q.returncode == 0 and "max_runs: expected a whole number" in q.stderr


def test_a_broken_config_key_does_not_drop_the_rest_when_recording(config_file: Path) -> None:
    config_file.write_text('[default]\nmax_runs = "abc"\nhint_on_failure = true\n')
    p = rage("run", "--", "sh", "-c", "exit 4")
    assert p.returncode == 4
    assert "max_runs: expected a whole number, not 'abc'" in p.stderr
    assert "failed (exit 4); to report it: rage report " in p.stderr  # hint_on_failure applied
