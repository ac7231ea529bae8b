"""Log lines a loaded receiver would write for nearly every request, let through once a while.

waitress warns "Task queue depth is N" whenever a request waits for a worker thread: under
load that is nearly every request (186 lines for 200 uploads from 20 clients to 8 threads),
written to stderr by the event loop's thread while it holds the dispatcher's lock. One line
per interval says the receiver is saturated as well, and says how many were left out.
"""

from __future__ import annotations

import logging
import threading
import time


class OncePer(logging.Filter):
    """Passes one record per ``seconds``; the next one passed tells how many were dropped."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self._next = 0.0
        self._dropped = 0
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        with self._lock:
            if now < self._next:
                self._dropped += 1
                return False
            self._next = now + self.seconds
            dropped, self._dropped = self._dropped, 0
        if dropped:
            record.msg = f"{record.msg} (and {dropped} such warnings since the last)"
        return True
