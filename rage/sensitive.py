"""What looks secret by its name: shared by redaction, the environment collector and the
recorders (which mask such values before they reach the run store).

Plain string tests, no regular expressions: the shell wrapper calls this on every recorded
command, where importing ``re`` would cost start-up time.
"""

from __future__ import annotations

# Words that make a name (environment variable, config key, JSON field, header) secret.
_WORDS = (
    "token", "secret", "password", "passwd", "pwd", "auth", "cookie", "credential", "session",
    "signature", "bearer", "dsn", "salt",
)
# Compound words, matched with '_' and '-' removed (api_key, API-KEY, apikey...).
_JOINED = ("apikey", "accesskey", "privatekey")
# Names that contain a secret word but are known to hold harmless values.
_HARMLESS_NAMES = frozenset({
    "SSH_AUTH_SOCK", "XDG_SESSION_TYPE", "XDG_SESSION_ID", "XDG_SESSION_CLASS",
    "XDG_SESSION_DESKTOP", "DESKTOP_SESSION", "SESSION_MANAGER", "GPG_AGENT_INFO",
    "KEYTIMEOUT", "PYTHONHASHSEED", "TOKENIZERS_PARALLELISM", "AUTHOR", "AUTHORS", "PWD",
    "OLDPWD",
})
HIDDEN = "[set, {} chars, hidden]"


def looks_secret_name(name: str) -> bool:
    """True when a variable or key called ``name`` probably holds a secret."""
    if name.upper() in _HARMLESS_NAMES:
        return False
    low = name.lower()
    if any(w in low for w in _WORDS):
        return True
    squashed = low.replace("_", "").replace("-", "")
    if any(w in squashed for w in _JOINED):
        return True
    return "key" in low.replace("-", "_").split("_")


def masked_environ(environ: dict[str, str]) -> dict[str, str]:
    """A copy of ``environ`` whose secret-named values are replaced by a length marker."""
    return {k: (HIDDEN.format(len(v)) if looks_secret_name(k) else v)
            for k, v in environ.items()}
