"""What looks secret by its name: shared by the redaction engine and the environment collector."""

from __future__ import annotations

import re

# Names (environment variables, config keys, JSON fields, headers) whose values are secrets.
SECRET_NAME_RE = re.compile(
    r"(?i)(token|secret|passw(or)?d|passwd|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|(^|[_-])key($|[_-])|auth|cookie|credential|session|signature|bearer|dsn|salt)"
)
# Names that contain a secret word but are known to hold harmless values.
_HARMLESS_NAMES = frozenset({
    "SSH_AUTH_SOCK", "XDG_SESSION_TYPE", "XDG_SESSION_ID", "XDG_SESSION_CLASS",
    "XDG_SESSION_DESKTOP", "DESKTOP_SESSION", "SESSION_MANAGER", "GPG_AGENT_INFO",
    "KEYTIMEOUT", "PYTHONHASHSEED", "TOKENIZERS_PARALLELISM", "AUTHOR", "AUTHORS", "PWD", "OLDPWD",
})


def looks_secret_name(name: str) -> bool:
    """True when a variable or key called ``name`` probably holds a secret."""
    if name.upper() in _HARMLESS_NAMES:
        return False
    return bool(SECRET_NAME_RE.search(name))
