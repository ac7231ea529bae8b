"""Errors that reach the user, each with its exit code.

Every failure a user can cause or meet (bad input, missing run, failed upload) is a
:class:`RageError`. The CLI boundary (``rage.cli.main``) prints ``rage: <message>`` and exits
with ``exit_code``; nothing else in the code base turns errors into exit codes.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes of rage's own commands (``rage run`` returns the child's status instead)."""

    OK = 0
    INTERNAL = 1
    USAGE = 2
    NOT_FOUND = 3
    UPLOAD_FAILED = 4
    DECLINED = 5
    BAD_INPUT = 6
    INTERRUPTED = 130  # ^C, as a shell reports a command killed by SIGINT
    # `rage run` only, shell conventions
    NOT_EXECUTABLE = 126
    COMMAND_NOT_FOUND = 127


class RageError(Exception):
    """Base class: a one-line message for the user and the exit code that goes with it."""

    exit_code: ExitCode = ExitCode.INTERNAL

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(RageError):
    """The command line or its combination of flags is wrong."""

    exit_code = ExitCode.USAGE


class NotFoundError(RageError):
    """Nothing to report: no such run, app, bundle or collector."""

    exit_code = ExitCode.NOT_FOUND


class UploadError(RageError):
    """The upload failed; the bundle is kept on disk (``bundle`` names it)."""

    exit_code = ExitCode.UPLOAD_FAILED

    def __init__(self, message: str, *, bundle: str | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.bundle = bundle


class DeclinedError(RageError):
    """The user said no at a confirmation prompt."""

    exit_code = ExitCode.DECLINED


class BadInputError(RageError):
    """A file rage was asked to read is invalid: a corrupt bundle, a broken config file."""

    exit_code = ExitCode.BAD_INPUT


class ConfigError(BadInputError):
    """The configuration file or a RAGE_* variable is invalid."""


class InterruptedByUser(RageError):
    """The user pressed ^C (at a prompt, or during an upload: the bundle is kept)."""

    exit_code = ExitCode.INTERRUPTED
