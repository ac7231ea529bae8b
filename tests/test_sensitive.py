"""Which names count as secret, and which values are evidence whatever their name."""

from __future__ import annotations

import pytest

from rage.sensitive import (
    looks_harmless_value,
    looks_id_value,
    looks_secret_name,
    masked_environ,
    name_parts,
)


@pytest.mark.parametrize("name", [
    "GITHUB_TOKEN", "api_key", "API-KEY", "ApiKey", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
    "MYSQL_PWD", "Authorization", "cookie", "SESSION_ID", "SENTRY_DSN", "KEY", "x-api-key",
    "PRIVATE_KEY", "aws_access_key_id", "passwd", "HMAC_SIGNATURE",
    # issue 10: pass, passphrase, psk, _PAT, sig, camelCase ...Key/Secret/Token
    "DB_PASS", "db_pass", "dbPass", "PGPASS", "passphrase", "SSH_PASSPHRASE", "wifi_psk", "psk",
    "GITHUB_PAT", "AZURE_DEVOPS_PAT", "sig", "AccountKey", "storageAccountKey",
    "primaryMasterKey", "serverKey", "clientSecret", "refreshToken", "ClearTextPassword",
    # keys of a lock, not of data; an author's token
    "encryption_key", "signing_key", "hmac_key", "license_key", "access_key", "author_token",
    # "password" in other languages: German, Portuguese, French, Spanish, Dutch, Polish,
    # Swedish, Turkish
    "DB_PASSWORT", "Kennwort", "senha", "mot_de_passe", "MOTDEPASSE", "contrasena",
    "wachtwoord", "haslo", "losenord", "smtp_sifre",
    # abbreviations (gitleaks' `creds`), `pw` as a part, unseal keys, MFA backup codes
    "DB_CREDS", "client_creds", "DB_PW", "pw", "MYSQL_ROOT_PW", "smtp_pswd", "admin_pword",
    "VAULT_UNSEAL", "unseal_key", "recovery_codes", "BACKUP_CODE",
    # what sshpass -e and smbclient read from the environment
    "SSHPASS", "SMBPASS",
])
def test_secret_names(name: str) -> None:
    assert looks_secret_name(name)


@pytest.mark.parametrize("name", [
    "PATH", "HOME", "SSH_AUTH_SOCK", "XDG_SESSION_TYPE", "LANG", "KEYBOARD",
    "MONKEY", "TERM", "EDITOR", "AUTHOR", "PYTHONPATH", "VIRTUAL_ENV", "HOSTNAME",
    # names that describe a secret rather than hold one
    "MAX_TOKENS", "password_min_length", "token-file", "id_key_file", "AUTH_METHOD",
    "SESSION_TIMEOUT", "KEY_VAULT_NAME", "PUBLIC_KEY_PATH", "token_type", "WWW-Authenticate",
    "ExpiredSignatureError", "auth.c", "test_auth.py", "PASSED", "bypass", "pattern", "signal",
    "compass", "passport_number_format", "PW_FILE", "npw", "kpw", "pwm_fan", "upward",
    "token_accessor",
    # keys of data (databases, caches, S3), the id of a key, tokenizers, authors, domains
    "primary_key", "sort_key", "foreign_key", "partition_key", "cache_key", "idempotency_key",
    "object_key", "kms_key_id", "signing_key_id", "tokenizer", "book_author",
    "cookie_domain", "api_key_header", "oauth_callback", "cookiecutter_template",
    "cookie_samesite", "cookie_httponly", "session_cookie_secure", "pass-through",
])
def test_harmless_names(name: str) -> None:
    assert not looks_secret_name(name)


def test_name_parts_split_camel_case_and_separators() -> None:
    assert name_parts("storageAccountKey") == ["storage", "account", "key"]
    assert name_parts("DB_PASS") == ["db", "pass"]
    assert name_parts("x-api-key") == ["x", "api", "key"]
    assert name_parts("HTTPServerKey") == ["httpserver", "key"]


@pytest.mark.parametrize("value", [
    "4096", "12", "true", "False", "${DB_PASSWORD}", "$DB_PASSWORD", "%APPDATA%", "<your-token>",
    "{{ secrets.TOKEN }}", "/etc/app/signing.pub", "~/.ssh/id_ed25519", "***", "",
    # YAML's null, empty map and list, "unset"; SQL parameters
    "~", "{}", "[]", "-", "?", "%s", "$1",
    # what another tool already hid
    "[FILTERED]", "[MASKED]", "[HIDDEN]",
    # a shell variable named for the secret, as a script or make recipe is echoed
    "$password", "$storepass", "$db_pass",
])
def test_harmless_values(value: str) -> None:
    assert looks_harmless_value(value)


@pytest.mark.parametrize("value", [
    "hunter2", "ghp_abc", "s3cr3t/with/slash", "1234567890123456789", "$ecret!", "c2VjcmV0",
    "$ecret", "$unshine1", "$Tr0ub4dor", "$1password",
    "${DB_PASSWORD:-hunter2}", "${X:+abc}", "-x", "?abc", "%s%s",
])
def test_secret_values_are_not_harmless(value: str) -> None:
    assert not looks_harmless_value(value)


def test_ids_are_hashes_and_uuids() -> None:
    assert looks_id_value("0123456789abcdef0123456789abcdef01234567")
    assert looks_id_value("3f2a1b4c-1234-4abc-9def-0123456789ab")
    assert not looks_id_value("0123456789abcdefABCDEF")  # mixed case: not how hashes print
    assert not looks_id_value("hunter2")


def test_masked_environ_keeps_names_lengths_and_evidence() -> None:
    env = {"PATH": "/usr/bin:/bin", "GITHUB_TOKEN": "ghp_" + "a" * 36, "PWD": "/tmp",
           "MAX_TOKENS": "4096", "DB_PASSWORD": "${DB_PASSWORD}", "API_TOKEN": "true"}
    masked = masked_environ(env)
    assert masked["PATH"] == env["PATH"] and masked["PWD"] == "/tmp"
    assert masked["GITHUB_TOKEN"] == "[set, 40 chars, hidden]"
    assert masked["MAX_TOKENS"] == "4096" and masked["DB_PASSWORD"] == "${DB_PASSWORD}"
    assert masked["API_TOKEN"] == "true"


def test_the_working_directory_is_kept_by_its_value_not_its_name() -> None:
    """`PWD` is the shell's working directory, and `Pwd=` an ODBC connection string's
    password: a path there is kept (spaces and all), anything else is a secret."""
    env = {"PWD": "/Users/alice/My Projects/app", "OLDPWD": "~/src", "ODBC_PWD": "s3cr3tPw!"}
    masked = masked_environ(env)
    assert masked["PWD"] == env["PWD"] and masked["OLDPWD"] == "~/src"
    assert masked["ODBC_PWD"] != env["ODBC_PWD"]
    assert masked_environ({"PWD": "s3cr3tPw!"})["PWD"] != "s3cr3tPw!"
