"""`rage report` as a user meets it: non-UTF-8 runs, the interactive flow on a terminal,
the chooser, and what to do when no upload target is configured."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from pathlib import Path

from rage.bundle import open_bundle
from tests.test_cli_exit_codes import RAGE, pty_script, rage
from tests.test_select import Pty, record


def test_non_utf8_argv_cwd_and_environment_are_reportable(tmp_path: Path) -> None:
    latin1 = os.fsencode(tmp_path) + b"/caf\xe9"
    os.mkdir(latin1)
    env = {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
    env.update({b"LANG": b"C", b"LC_ALL": b"C", b"OLDPWD": b"/tmp/r\xe9sum\xe9"})
    run = subprocess.run([os.fsencode(RAGE), b"run", b"--", b"sh", b"-c", b"exit 3", b"\xff"],
                         cwd=latin1, env=env, capture_output=True, timeout=60, check=False)
    assert run.returncode == 3, run.stderr
    for args in (["list"], ["show", "last"]):
        p = subprocess.run([RAGE, *args], capture_output=True, timeout=60, check=False,
                           env={**os.environ, "LANG": "C", "LC_ALL": "C"})
        assert p.returncode == 0 and b"Traceback" not in p.stderr, (args, p.stderr)
    preview = rage("report", "--last", "--preview", env={"LANG": "C", "LC_ALL": "C"})
    assert preview.returncode == 0, preview.stderr
    assert "caf\\xe9" in preview.stdout and "'\\xff'" in preview.stdout
    out = tmp_path / "b.tar.zst"
    made = rage("report", "--last", "--yes", "--output", str(out))
    assert made.returncode == 0, made.stderr
    reader = open_bundle(out)
    assert reader.verify() == []
    assert reader.manifest["run"]["argv"] == ["sh", "-c", "exit 3", "\\xff"]
    assert reader.manifest["run"]["cwd"].endswith("/caf\\xe9")
    environment = reader.read("collectors/environment.json").decode()
    assert "r\\\\xe9sum\\\\xe9" in environment  # JSON-escaped backslash: the bytes survive


class SplitPty(Pty):
    """stdin and stderr on a pseudo-terminal, stdout a pipe: `rage report | cat`."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=subprocess.PIPE, stderr=slave,
                                     env=env, start_new_session=True, close_fds=True)
        os.close(slave)
        self.seen = b""

    def close(self) -> None:
        super().close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@contextlib.contextmanager
def split_pty(*args: str) -> Iterator[SplitPty]:
    env = {**os.environ, "PAGER": "cat", "TERM": "dumb", "COLUMNS": "120"}
    p = SplitPty([RAGE, *args], env)
    try:
        yield p
    finally:
        p.close()


def test_report_piped_to_cat_still_asks_on_the_terminal() -> None:
    record("demo", ["demo", "x"], 1, output=b"boom\n")
    with split_pty("report", "--app", "demo", "--no-collect") as p:
        p.expect("q to quit]")
        p.send("1\n")
        p.expect("What went wrong?")
        p.send("it broke\n")
        p.expect("Create the bundle? [Y/n, p to preview]")
        p.send("\n")
        assert p.wait() == 0
        assert p.proc.stdout is not None
        piped = p.proc.stdout.read().decode()
    assert piped.startswith("bundle written: ")  # results on stdout, questions on stderr
    assert "Create the bundle?" not in piped


def test_overview_then_preview_summary_first_and_written_after_writing() -> None:
    record("demo", ["demo", "x"], 1, output=b"boom\n")
    p = pty_script("report", "--last", "--no-collect")
    try:
        p.expect("What went wrong?")
        p.send("\n")
        overview = p.expect("Create the bundle? [Y/n, p to preview]")
        assert "it will be written to a new file in " in overview
        assert "bundle written" not in overview
        p.send("p\n")
        shown = p.expect("Create the bundle? [Y/n, p to preview]")
        assert shown.index("===== summary.md") < shown.index("===== run/output.log") \
            < shown.index("===== manifest.json")
        p.send("y\n")
        p.expect("bundle written: ")
        assert p.wait() == 0
    finally:
        p.close()


def test_chooser_pages_and_takes_a_run_id() -> None:
    runs = [record("demo", ["demo", f"n{i}"], 1) for i in range(20)]  # newest last
    p = pty_script("report", "--app", "demo", "--no-collect")
    try:
        first = p.expect("m for 5 more, q to quit]")
        assert "demo n19" in first and "demo n5" in first and "demo n4" not in first
        p.send("m\n")
        second = p.expect("[1-20, or a run id, q to quit]")
        assert " 20) ! " in second and "demo n0" in second
        p.send(runs[0].short_id + "\n")
        p.expect("What went wrong?")
        p.send("\n")
        p.expect("Create the bundle?")
        p.send("\n")
        p.expect("bundle written: ")
        assert p.wait() == 0
    finally:
        p.close()
    bundle = next((Path(os.environ["RAGE_HOME"]) / "demo" / "reports").glob("*.tar.zst"))
    assert open_bundle(bundle).manifest["run"]["id"] == runs[0].id


def test_without_an_upload_target_the_user_gets_real_choices(config_file: Path) -> None:
    record("demo", ["demo"], 1)
    p = rage("report", "--last", "--yes", "--no-collect", env={"PATH": "/usr/bin:/bin",
                                                             "GITHUB_TOKEN": ""})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    bundle = lines[0].split("bundle written: ", 1)[1].split(" (", 1)[0]
    assert lines[1] == "No upload target is configured. To share the bundle:"
    assert "attach the file to your bug report" in lines[2]
    assert f"rage send {bundle} --to gist" in p.stdout and "gh auth login" in p.stdout
    config_file.write_text('[app.demo]\nissues_url = "https://example.org/demo/issues/new"\n')
    with_issues = rage("report", "--last", "--yes", "--no-collect",
                       env={"GITHUB_TOKEN": "t0ken"})
    assert "attach it to a new issue: https://example.org/demo/issues/new" in with_issues.stdout
    assert "upload it as a private gist: rage send" in with_issues.stdout
    # a GitHub token is not a token for another gist API: the hint says what is missing
    config_file.write_text('[app.demo]\ngist_api_url = "https://ghe.example.org/api/v3"\n')
    elsewhere = rage("report", "--last", "--yes", "--no-collect", env={"GITHUB_TOKEN": "t0ken"})
    assert ("upload it as a private gist (after adding a token for "
            "https://ghe.example.org:443 under [tokens]): rage send") in elsewhere.stdout
    config_file.write_text('[app.demo]\ngist_api_url = "https://ghe.example.org/api/v3"\n'
                           '[tokens]\n"https://ghe.example.org" = "t1"\n')
    bound = rage("report", "--last", "--yes", "--no-collect", env={"GITHUB_TOKEN": ""})
    assert "upload it as a private gist: rage send" in bound.stdout, bound.stdout


def test_upload_prompt_needs_terminal_on_stdin_not_stdout(tmp_path: Path) -> None:
    record("demo", ["demo"], 1)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    with split_pty("report", "--last", "--no-collect", "--to", inbox.as_uri()) as p:
        p.expect("What went wrong?")
        p.send("\n")
        p.expect("Create the bundle?")
        p.send("\n")
        p.expect("? [Y/n]")
        p.send("\n")
        t0 = time.monotonic()
        while p.proc.poll() is None and time.monotonic() - t0 < 30:
            select.select([p.master], [], [], 0.1)
            with contextlib.suppress(OSError):
                os.read(p.master, 65536)
        assert p.proc.returncode == 0
    assert len(list(inbox.iterdir())) == 1


def test_crash_hint_names_the_run_and_works_as_printed() -> None:
    crash = subprocess.run([RAGE, "run", "--app", "crashy", "--", "sh", "-c", "kill -SEGV $$"],
                           capture_output=True, text=True, timeout=60, check=False)
    later = subprocess.run([RAGE, "run", "--app", "crashy", "--", "true"],
                           capture_output=True, text=True, timeout=60, check=False)
    assert later.returncode == 0  # a later run: `--last` would now name the wrong one
    hint = crash.stderr.strip().splitlines()[-1]
    command = hint.split("to report it: ", 1)[1]
    assert command.startswith("rage report ") and "--last" not in command
    out = Path(os.environ["RAGE_HOME"]) / "crash.tar.zst"
    p = rage(*command.split()[1:], "--yes", "--no-collect", "--output", str(out))
    assert p.returncode == 0, p.stderr
    assert open_bundle(out).manifest["run"]["status"] == "crashed"
