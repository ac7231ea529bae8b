"""summary.md rendering: escapes stripped, fences that hold, signals named, facts picked."""

from __future__ import annotations

import signal

from hypothesis import given, settings
from hypothesis import strategies as st

from rage.report.summary import SummaryInput, environment_facts, render, strip_ansi, tail_lines


def test_strip_ansi_removes_colours_titles_and_redraws() -> None:
    raw = "\x1b[1;31mred\x1b[0m \x1b]0;title\x07done\r\n10%\r50%\r100%\n"
    assert strip_ansi(raw) == "red done\n100%\n"


@given(st.text(alphabet=st.sampled_from("ab \n\x1b[;0123456789m\r"), max_size=200))
def test_strip_ansi_leaves_no_escape(text: str) -> None:
    assert "\x1b" not in strip_ansi(text + "\x1b[0m")


TOKEN = "ghp_" + "Zq8Lr2Vx9Kp4Tn6Wm1Hc3Bd5Fg7Js0Ya2Ue4"


@settings(deadline=None)  # a Redactor per example: slow on a loaded machine
@given(st.lists(st.sampled_from(["\x1b[32m", "\x1b[0m", "\x1b[01;31m\x1b[K", "\x1b[m",
                                 "\r", "\x08", "\x1b]0;t\x07"]), max_size=3),
       st.integers(min_value=0, max_value=len(TOKEN)))
def test_summary_of_redacted_output_never_rejoins_a_secret(escs: list[str], cut: int) -> None:
    """The summary is made from redacted bytes; whatever the terminal did to a token, the
    summary's plain-text view cannot put it back together."""
    from rage.redact import Redactor

    raw = ("before\n" + TOKEN[:cut] + "".join(escs) + TOKEN[cut:] + "\nafter\n").encode()
    redacted = Redactor(pseudonymize=False).bytes(raw)
    assert TOKEN not in tail_lines(redacted)
    assert TOKEN.encode() not in redacted


def test_tail_lines_keeps_the_last_n() -> None:
    data = b"".join(b"line %d\n" % i for i in range(100))
    tail = tail_lines(data, 5)
    assert tail.splitlines() == [f"line {i}" for i in range(95, 100)]


def test_fence_survives_backticks_in_output() -> None:
    out = render(SummaryInput(app="demo", meta={"status": "failed", "argv": ["demo"]},
                              rage_version="1", outputs=[("output", "```\ninjected\n```")]))
    assert "````\n```\ninjected\n```\n````" in out


def test_crash_names_the_signal_and_prefers_the_traceback() -> None:
    meta = {"status": "crashed", "argv": ["demo", "x y"], "signal": int(signal.SIGSEGV),
            "exit_code": None, "duration_s": 1.5, "cwd": "~/src"}
    out = render(SummaryInput(app="demo", meta=meta, rage_version="1",
                              traceback="Traceback...\nKeyError: 'x'\n",
                              outputs=[("output", "not shown")], note="it crashed"))
    assert out.startswith("# demo: crashed run\n")
    assert "- **Signal:** SIGSEGV" in out and "Exit code" not in out
    assert "`demo 'x y'`" in out and "`~/src`" in out
    assert "KeyError: 'x'" in out and "not shown" not in out
    assert "## What the user says\n\nit crashed" in out


def test_pipe_mode_shows_each_stream() -> None:
    out = render(SummaryInput(app="d", meta={"status": "failed", "exit_code": 2},
                              rage_version="1",
                              outputs=[("stderr", "err line"), ("stdout", "out line")]))
    assert out.index("Last 1 lines of stderr") < out.index("Last 1 lines of stdout")
    assert "- **Exit code:** 2" in out


def test_environment_facts_from_collector_data() -> None:
    facts = dict(environment_facts({
        "platform": {"os": {"pretty_name": "Debian GNU/Linux 12"}, "system": "Linux",
                     "kernel": "6.1.0", "machine": "aarch64", "libc": "glibc 2.36"},
        "python": {"version": "3.11.7", "implementation": "CPython"},
    }))
    assert facts == {"OS": "Debian GNU/Linux 12 (6.1.0)", "Arch": "aarch64",
                     "libc": "glibc 2.36", "Python": "CPython 3.11.7"}
    assert environment_facts({}) == []
