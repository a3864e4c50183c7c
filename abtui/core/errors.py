"""Every exception abtui raises on purpose: one line for the user, and the exit code with it.

All but two (ProfileError and Invalid, which the profile loader turns into a BadInput line that
names the file, line and field) are AbtuiErrors, so a caller that only needs "it failed, say why"
catches AbtuiError once instead of converting one kind into another."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
# the regression gate could not tell: neither a pass nor a regression shown (docs/contracts.md)
EXIT_INCONCLUSIVE = 3


class AbtuiError(Exception):
    """An error the CLI prints as one line (no traceback) and exits with `exit_code`."""

    exit_code = EXIT_FAILED


class BadInput(AbtuiError):
    """Bad input: a profile, an argument or a file; exit code 2."""

    exit_code = EXIT_BAD_INPUT


class MissingPrerequisite(AbtuiError):
    """Not root, or a program is missing: says what and how to get it; exit code 2."""

    exit_code = EXIT_BAD_INPUT


class CannotWrite(AbtuiError):
    """An output file (a report, a plot, a saved copy, a profile) could not be written: no
    such folder, a folder in its place, the disk full. Nothing under its name changed; exit
    code 2, as bad input."""

    exit_code = EXIT_BAD_INPUT


class WriteFailed(AbtuiError):
    """The session (or the undo journal) could not be written: the disk full, an I/O error,
    its folder gone. What it was part of stops, hosts set back; exit code 1."""


class RemoteError(AbtuiError):
    """A host refused or failed something; the message names the host."""

    exit_code = EXIT_FAILED

    def __init__(self, host: str, message: str) -> None:
        super().__init__(f"{host}: {message}")
        self.host = host
        self.reason = message


class LeaseHeld(RemoteError):
    """Another controller holds the host's lease (abtui.remote.lease): `holder` names it."""

    def __init__(self, host: str, holder: str) -> None:
        super().__init__(host, f"driven by {holder}")
        self.holder = holder


class LeaseRefused(RemoteError):
    """Something else than a lease file is at the host's lease's name (a link, a FIFO,
    another user's file: abtui.remote.lease): the host is not driven."""


def lease_not_asked(host: str, why: str) -> LeaseRefused:
    """A host before this one in the hosts' one order of leasing was refused (abtui.remote.
    lease.LeaseOrder): this host's lease was not asked for, so another controller that needs
    it gets it."""
    return LeaseRefused(host, f"its lease not asked for: {why}")


class KnobRefused(AbtuiError):
    """A knob change was refused (and rolled back everywhere); str() is the one-line reason.
    `invalid`: abtui itself refused the value (not a value of that knob's kind, a key or
    device it will not send) before any host was asked: bad input, exit code 2."""

    def __init__(self, message: str, *, invalid: bool = False) -> None:
        super().__init__(message)
        if invalid:
            self.exit_code = EXIT_BAD_INPUT


class RunFailed(AbtuiError):
    """A run could not start; str() is the one-line message for the user."""

    def __init__(self, message: str, run_id: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.run_id = run_id


class LabError(AbtuiError):
    """A lab step failed; the message names the step."""


class ProfileError(Exception):
    """A problem at a key path; the loader turns it into `FILE:LINE: FIELD: message`."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


class Invalid(ValueError):
    """A value is wrong. str() is "what was wrong; what was expected"."""
