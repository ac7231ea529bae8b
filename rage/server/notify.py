"""Telling maintainers about a new signature or a regression: JSON webhooks, Slack.

Never in the upload's way: :meth:`Notifier.notify` only puts the event on a bounded queue
(dropping it, with a log line, when the queue is full) and one daemon thread posts it,
retrying a few times with a growing pause. Two payloads:

- ``json``: a generic webhook, ``{"event": "new_signature" | "regression", "signature":
  {...}, "url": ..., "bundle_url": ...}``;
- ``slack``: a Slack-compatible incoming-webhook body (``text`` plus one ``section`` block;
  Mattermost and Rocket.Chat accept the same), with ``&``, ``<`` and ``>`` escaped as Slack
  requires so a crafted crash text cannot forge links or mentions.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

log = logging.getLogger("rage.server.notify")

Kind = Literal["json", "slack"]
EVENTS = {"new": "new_signature", "regression": "regression"}
_SIG_FIELDS = ("hash", "app", "kind", "text", "exception", "count", "first_seen", "last_seen",
               "first_version", "last_version", "status", "fixed_in")


@dataclass(frozen=True)
class Target:
    url: str
    kind: Kind = "json"


def json_payload(event: str, sig: dict[str, Any], url: str, bundle_url: str) -> dict[str, Any]:
    return {"event": EVENTS.get(event, event),
            "signature": {k: sig.get(k) for k in _SIG_FIELDS},
            "url": url, "bundle_url": bundle_url,
            "sent_at": datetime.now(UTC).isoformat(timespec="seconds")}


def slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_payload(event: str, sig: dict[str, Any], url: str, bundle_url: str) -> dict[str, Any]:
    what = "Regression" if event == "regression" else "New crash"
    version = sig.get("last_version") or "unknown version"
    extra = f" (fixed in {sig.get('fixed_in')})" if event == "regression" else ""
    line = (f"{what} in {sig.get('app')} {version}{extra}: "
            f"<{url}|{slack_escape(str(sig.get('text', ''))[:300])}>")
    return {"text": slack_escape(f"{what} in {sig.get('app')}: {sig.get('text', '')}")[:300],
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": line}},
                       {"type": "context", "elements": [{
                           "type": "mrkdwn", "text": f"<{bundle_url}|the report>"}]}]}


class Notifier:
    """Posts events to ``targets`` from a background thread."""

    def __init__(self, targets: list[Target], *, timeout: float = 10.0, retries: int = 3,
                 queue_size: int = 1000) -> None:
        self.targets = list(targets)
        self.timeout = timeout
        self.retries = retries
        self._queue: queue.Queue[tuple[Target, dict[str, Any]] | None] = queue.Queue(
            queue_size)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def notify(self, event: str, sig: dict[str, Any], url: str, bundle_url: str) -> None:
        """Queue the event for every target; returns at once."""
        for target in self.targets:
            build = slack_payload if target.kind == "slack" else json_payload
            try:
                self._queue.put_nowait((target, build(event, sig, url, bundle_url)))
            except queue.Full:
                log.warning("notification queue full: dropped %s for %s", event, sig.get("hash"))
                return
        self._ensure_thread()

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="rage-notify",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        import requests

        session = requests.Session()
        while (item := self._queue.get()) is not None:
            target, payload = item
            for attempt in range(self.retries):
                try:
                    r = session.post(target.url, json=payload, timeout=self.timeout)
                    if r.status_code < 400:
                        break
                    problem = f"HTTP {r.status_code}"
                except requests.RequestException as e:
                    problem = type(e).__name__
                log.warning("notification to %s failed (%s), attempt %d of %d",
                            _host(target.url), problem, attempt + 1, self.retries)
                time.sleep(0.5 * 2 ** attempt)
            self._queue.task_done()
        self._queue.task_done()

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every queued event was sent (or given up); False on timeout."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def close(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(5)


def _host(url: str) -> str:
    """Logs name the host only: a webhook URL's path is its secret (Slack's are)."""
    from urllib.parse import urlsplit

    return urlsplit(url).netloc or "?"
