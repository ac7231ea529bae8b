"""The relay never blocks on the user's terminal, which it shares with the user's shell.

A ^Z that stops the user's job stops rage a moment after the shell that ran it: keys typed
then (`fg`) may be seen by rage's poll() and read by the shell first. rage, continued in
the foreground, then read an empty terminal and waited there for a key that never came,
deaf to its command's end (the hang of test_ctrl_z_in_a_script_stops_the_whole_job under
load). Here the shell's read is made to win on real pseudo-terminals.
"""

from __future__ import annotations

import os
import pty
import threading

import pytest

from rage.record.relay import _Relay
from rage.record.spawn import Child


@pytest.mark.parametrize("own_description", [True, False], ids=["own", "fallback"])
def test_keys_another_reader_took_leave_the_relay_free(own_description: bool) -> None:
    user_master, user_tty = pty.openpty()  # the user's terminal: rage reads user_tty
    cmd_master, cmd_tty = pty.openpty()  # the command's terminal
    wake_r, wake_w = os.pipe()
    child = Child(os.getpid(), "pty")
    child.master_fd = cmd_master
    child.streams = [(user_tty, cmd_master, None)]
    relay = _Relay(child, {}, wake_r, lambda e: None)
    assert relay.input is not None
    if not own_description:  # where the terminal cannot be opened again
        if relay.keys is not None:
            os.close(relay.keys)
        relay.keys = None
    done = threading.Event()
    try:
        os.write(user_master, b"fg\n")
        shell = os.open(os.ttyname(user_tty), os.O_RDONLY | os.O_NOCTTY)
        try:
            assert os.read(shell, 64) == b"fg\n"  # the shell read them first
        finally:
            os.close(shell)

        def read() -> None:
            relay._read_input()
            done.set()

        threading.Thread(target=read, daemon=True).start()
        blocked = not done.wait(5)
        if blocked:
            os.write(user_master, b"x\n")  # let the blocked read go, then fail
            done.wait(5)
        assert not blocked, "the relay blocked reading a terminal that had nothing left"
        assert relay.input is not None and not relay.input.pending
        # and keys typed later still reach the command
        os.write(user_master, b"ls\n")
        relay._read_input()
        assert bytes(relay.input.pending) == b"" and os.read(cmd_tty, 64) == b"ls\n"
    finally:
        relay._close_input()
        for fd in (user_master, user_tty, cmd_master, cmd_tty, wake_r, wake_w):
            os.close(fd)
