"""The ``environment`` collector: every variable name; values unless they look secret.

A value is hidden (shown as ``[set, N chars, hidden]``) when the variable's name looks
secret (rage.sensitive) or the value itself does: a known token prefix, a URL carrying a
password, or a long high-entropy token. Path lists (PATH, PYTHONPATH, ...) are split.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from collectors.base import Collector, Context
from rage.sensitive import HIDDEN, looks_id_value, looks_secret_name, working_dir

# Prefixes of well-known credential formats.
_TOKEN_RE = re.compile(
    r"^(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|xox[abposr]-[\w-]{10,}"
    r"|(AKIA|ASIA)[A-Z0-9]{16}|sk-[\w-]{16,}|sk_(live|test)_\w{16,}|rk_(live|test)_\w{16,}"
    r"|glpat-[\w-]{16,}|npm_\w{30,}|pypi-[\w-]{50,}|AIza[\w-]{30,}|hf_\w{30,}"
    r"|eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]*)"
)
_URL_CREDENTIALS_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@")
_TOKENISH_RE = re.compile(r"^[A-Za-z0-9_+/=.-]{24,}$")
MIN_ENTROPY_BITS = 3.6  # per character; English words and paths score lower


def _entropy(s: str) -> float:
    counts = Counter(s)
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_secret_value(value: str) -> bool:
    """True for values that look like credentials whatever the variable is called."""
    v = value.strip()
    if _TOKEN_RE.match(v) or _URL_CREDENTIALS_RE.search(v):
        return True
    if looks_id_value(v):  # GIT_COMMIT=<sha>, BUILD_ID=<uuid>: evidence, not secrets
        return False
    if not _TOKENISH_RE.match(v) or v.startswith(("/", ".", "~")):
        return False
    classes = sum(bool(re.search(p, v)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    return classes >= 2 and _entropy(v) >= MIN_ENTROPY_BITS


def is_path_list(name: str, value: str) -> bool:
    """Variables that hold os.pathsep-separated directory lists."""
    upper = name.upper()
    listy = upper.endswith(("PATH", "_DIRS")) or upper in {"PERL5LIB", "CLASSPATH"}
    return listy and (os.pathsep in value or os.sep in value)


_MASKED = re.compile(re.escape(HIDDEN).replace(re.escape("{}"), r"\d+"))


def hidden(value: str) -> str:
    return HIDDEN.format(len(value))


def describe_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    """``{"variables": {name: value | [entries]}, "hidden": [...], "missing_dirs": {...}}``."""
    variables: dict[str, Any] = {}
    hidden_names: list[str] = []
    missing: dict[str, list[str]] = {}
    for name in sorted(environ):
        value = environ[name]
        if (looks_secret_name(name) and not working_dir(name, value)) or looks_secret_value(value):
            # a recorder may have masked it already (rage.sensitive.masked_environ)
            variables[name] = value if _MASKED.fullmatch(value) else hidden(value)
            hidden_names.append(name)
        elif is_path_list(name, value):
            entries = value.split(os.pathsep)
            if any(looks_secret_value(e) for e in entries):
                variables[name] = hidden(value)
                hidden_names.append(name)
                continue
            variables[name] = entries
            gone = [e for e in entries if e and not os.path.isdir(e) and not os.path.isfile(e)]
            if gone:
                missing[name] = gone
        else:
            variables[name] = value
    return {"count": len(variables), "variables": variables, "hidden": hidden_names,
            "missing_entries": missing}


class EnvironmentCollector(Collector):
    name = "environment"
    description = "Environment variables (secret-looking values hidden), PATH lists split"
    timeout = 3.0

    def collect(self, ctx: Context) -> Any:
        # the recorded run's environment when the recorder kept it, else this process's
        data = describe_environment(os.environ if ctx.environ is None else ctx.environ)
        data["source"] = "reporting process" if ctx.environ is None else "run"
        return data
