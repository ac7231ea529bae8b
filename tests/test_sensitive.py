"""Which names count as secret."""

from __future__ import annotations

import pytest

from rage.sensitive import looks_secret_name, masked_environ


@pytest.mark.parametrize("name", [
    "GITHUB_TOKEN", "api_key", "API-KEY", "ApiKey", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
    "MYSQL_PWD", "Authorization", "cookie", "SESSION_ID", "SENTRY_DSN", "KEY", "x-api-key",
    "PRIVATE_KEY", "aws_access_key_id", "passwd", "HMAC_SIGNATURE", "id_key_file",
])
def test_secret_names(name: str) -> None:
    assert looks_secret_name(name)


@pytest.mark.parametrize("name", [
    "PATH", "HOME", "PWD", "OLDPWD", "SSH_AUTH_SOCK", "XDG_SESSION_TYPE", "LANG", "KEYBOARD",
    "MONKEY", "TERM", "EDITOR", "AUTHOR", "PYTHONPATH", "VIRTUAL_ENV", "HOSTNAME",
])
def test_harmless_names(name: str) -> None:
    assert not looks_secret_name(name)


def test_masked_environ_keeps_names_and_lengths() -> None:
    env = {"PATH": "/usr/bin:/bin", "GITHUB_TOKEN": "ghp_" + "a" * 36, "PWD": "/tmp"}
    masked = masked_environ(env)
    assert masked["PATH"] == env["PATH"] and masked["PWD"] == "/tmp"
    assert masked["GITHUB_TOKEN"] == "[set, 40 chars, hidden]"
