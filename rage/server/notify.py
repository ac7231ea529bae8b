"""Telling maintainers about a new signature or a regression: JSON webhooks, Slack.

Never in the upload's way: :meth:`Notifier.notify` only puts the event on a bounded queue
(dropping it, with a log line, when the queue is full) and one daemon thread posts it,
retrying a few times with a growing pause. Two payloads:

- ``json``: a generic webhook, ``{"event": "new_signature" | "regression", "signature":
  {...}, "url": ..., "bundle_url": ...}``;
- ``slack``: a Slack-compatible incoming-webhook body (``text`` plus one ``section`` block;
  Mattermost and Rocket.Chat accept the same), with ``&``, ``<`` and ``>`` escaped as Slack
  requires in every uploaded value so a crafted upload cannot forge links or mentions.

Links are built from the receiver's configured public URL (``rage serve`` requires one with
notifications: a forged Host header must not put its host in a maintainer's chat), and
each client address causes at most :data:`PER_CLIENT` notifications an hour (the rest are
indexed as usual, and logged).
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
PER_CLIENT = 10  # notifications one address can cause per PER_CLIENT_WINDOW seconds
PER_CLIENT_WINDOW = 3600.0
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
    """Every value a stranger's upload chose (app, versions, the crash text) is escaped
    wherever it appears, text and blocks alike: ``<!channel>`` or ``<https://x|label>`` in
    an app name once made a live mention and a phishing link. The only links are the
    receiver's own (``url``, ``bundle_url``: built from its configured public URL)."""
    what = "Regression" if event == "regression" else "New crash"
    app = _field(sig.get("app"), 100)
    version = _field(sig.get("last_version"), 60) or "unknown version"
    extra = f" (fixed in {_field(sig.get('fixed_in'), 60)})" if event == "regression" else ""
    text = _field(sig.get("text"), 300)
    line = f"{what} in {app} {version}{extra}: <{_link(url)}|{text}>"
    return {"text": f"{what} in {app}: {text}",
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": line}},
                       {"type": "context", "elements": [{
                           "type": "mrkdwn", "text": f"<{_link(bundle_url)}|the report>"}]}]}


def _field(value: Any, limit: int) -> str:
    """An uploaded value for Slack's mrkdwn: cut first (an entity is never cut in two),
    then escaped; ``None`` is empty."""
    return slack_escape(" ".join(str(value).split())[:limit]) if value is not None else ""


def _link(url: str) -> str:
    # Slack ends a link at "|" or ">"; the receiver's URLs hold neither, but never trust it
    return url.replace("|", "%7C").replace(">", "%3E").replace("<", "%3C")


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
