"""Errors that carry one clear line for the user, and the exit code that goes with it."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class AbtuiError(Exception):
    """An error the CLI prints as one line (no traceback) and exits with `exit_code`."""

    exit_code = EXIT_FAILED


class BadInput(AbtuiError):
    """Bad input: a profile, an argument or a file; exit code 2."""

    exit_code = EXIT_BAD_INPUT


class MissingPrerequisite(AbtuiError):
    """Not root, or a program is missing: says what and how to get it; exit code 2."""

    exit_code = EXIT_BAD_INPUT


class RemoteError(AbtuiError):
    """A host refused or failed something; the message names the host."""

    exit_code = EXIT_FAILED

    def __init__(self, host: str, message: str) -> None:
        super().__init__(f"{host}: {message}")
        self.host = host
        self.reason = message
