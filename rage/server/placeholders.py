"""Values in an error line replaced by placeholders, so the same failure reads the same.

``Connection to 10.0.0.7:5432 timed out after 30s (pid 4242)`` and ``... 10.0.0.9:5432 ...
after 31s (pid 977)`` are one failure. The rules are a data table, applied in order (the
more specific first: a URL holds a path, a path may hold numbers, a UUID holds hex, an
address with its port looks like a time of day), each
with where the idea comes from. The patterns are written for rage; none is copied.

Sources:
- sentry: getsentry/sentry ``src/sentry/grouping/parameterization.py`` parameterises
  messages in this order: email, url, hostname, ip, uuid, sha1, md5, date, duration, hex,
  float, int, quoted string, bool.
- socorro: mozilla-services/socorro ``signature/rules.py`` normalises frames and signatures
  (drops addresses, anonymous-namespace and template arguments) before grouping.
- rage: rage's redaction already writes the home directory as ``~``; PIDs follow the shapes
  ``pid 123``, ``pid=123``, ``prog[123]:`` (syslog); ANSI colour codes are removed first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """``needs``: the rule can only match a line holding one of these (lowered) strings;
    checking that first skips most rules on most lines."""

    name: str
    pattern: re.Pattern[str]
    replacement: str
    source: str
    needs: tuple[str, ...] = ()


def _r(name: str, pattern: str, replacement: str, source: str, flags: int = 0, *,
       needs: str = "") -> Rule:
    return Rule(name, re.compile(pattern, flags), replacement, source,
                tuple(needs.split()) if needs else ())


_TIME = r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
_ISO_DATE = r"\d{4}-\d{2}-\d{2}"
_PATH_CHARS = r"[^\s'\"`:,;()\[\]{}<>|=]"

_DIGITS = "0 1 2 3 4 5 6 7 8 9"

RULES: tuple[Rule, ...] = (
    _r("ansi", r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)", "",
       "rage: terminal colours are not part of the message",
       needs="\x1b"),
    _r("url", r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+", "<url>", "sentry: url",
       needs="://"),
    _r("email", r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b", "<email>", "sentry: email",
       needs="@"),
    _r("uuid", r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
       r"[0-9a-fA-F]{12}\b", "<uuid>", "sentry: uuid",
       needs="-"),
    _r("hostname", r"\b(?:[A-Za-z0-9-]+\.)+(?:com|org|net|io|dev|app|cloud|local|internal|"
       r"lan|localdomain|edu|gov|eu|de|uk|fr|nl|jp|cn)\b", "<host>", "sentry: hostname",
       needs="."),
    _r("ip", r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|\b(?:[0-9a-fA-F]{1,4}:){2,7}"
       r"[0-9a-fA-F]{1,4}\b", "<ip>", "sentry: ip",
       needs=". :"),
    _r("datetime", rf"\b{_ISO_DATE}(?:[T ]{_TIME}(?:Z|[+-]\d{{2}}:?\d{{2}})?)?\b", "<time>",
       "sentry: date (ISO 8601, RFC 3339)",
       needs="-"),
    _r("calendar", r"\b(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,?\s+)?(?:\d{1,2}\s+)?"
       r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s+\d{1,2}\b(?:,?\s+\d{4})?"
       r"|\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),?\s+\d{1,2}\s+"
       r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*(?:\s+\d{4})?\b",
       "<time>", "sentry: date (RFC 2822 and syslog day/month forms)"),
    _r("clock", rf"\b{_TIME}\b(?:\s?[AP]M\b)?", "<time>", "sentry: date (times of day)",
       needs=":"),
    _r("path", rf"(?:~|\.{{1,2}}|\b[A-Za-z]:)?(?:[/\\]{_PATH_CHARS}+)+|~(?=\s|$)", "<path>",
       "socorro: file names normalised out of frames; rage: home redacted as ~",
       needs="/ \\ ~"),
    _r("relpath", r"\b[\w.-]+(?:/[\w.-]+)+/?", "<path>", "socorro: file names",
       needs="/"),
    _r("pid", r"\b(pid|process|thread|tid)([\s=:#]*)\d+\b", r"\1\2<pid>", "rage: PIDs",
       re.IGNORECASE,
       needs="pid process thread tid"),
    _r("syslog_pid", r"\[\d+\](?=:)", "[<pid>]", "rage: prog[PID]: (syslog)",
       needs="["),
    _r("hex", r"\b0[xX][0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])"
       r"[0-9a-fA-F]{7,}\b", "<hex>", "sentry: hex, sha1, md5; socorro: addresses", needs=_DIGITS),
    _r("duration", r"\b\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|sec|secs|seconds?|min|minutes?|h|"
       r"hours?|days?)\b", "<duration>", "sentry: duration", needs=_DIGITS),
    _r("size", r"\b\d+(?:\.\d+)?\s?(?:[KMGTP]i?B|[kKMGT]|bytes?)\b", "<size>",
       "rage: sizes vary with the input", needs=_DIGITS),
    _r("number", r"[-+]?\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b", "<num>", "sentry: float, int",
       needs=_DIGITS),
    _r("quoted", r"'[^'\n]{1,200}'|\"[^\"\n]{1,200}\"|`[^`\n]{1,200}`", "<str>",
       "sentry: quoted string",
       needs="' \" `"),
)


def parameterise(line: str) -> str:
    """``line`` with every value the rules recognise replaced by its placeholder."""
    low = line.lower()
    for rule in RULES:
        if not rule.needs or any(n in low for n in rule.needs):
            line = rule.pattern.sub(rule.replacement, line)
    return " ".join(line.split())
