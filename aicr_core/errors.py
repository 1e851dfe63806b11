"""Errors a user sees: `error: [CODE] message`, exit 1, or 2 for usage errors.

Every failure the plugin knows about is an `AicrError` with a stable `Code`
(the table of docs/usage.md lists exactly the members of `Code`). Anything else
reaching the top is a bug and is reported as `INTERNAL`, never as a traceback
(unless AICR_DEBUG=1).
"""
from __future__ import annotations

import enum
from collections.abc import Sequence

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class Code(str, enum.Enum):
    """The stable CODE of every failure; a `str` enum, so `[CODE]` prints its value."""

    USAGE = "USAGE"
    KUBECONFIG = "KUBECONFIG"
    UNAUTHORIZED = "UNAUTHORIZED"
    FORBIDDEN = "FORBIDDEN"
    ADMISSION_DENIED = "ADMISSION_DENIED"
    NOT_FOUND = "NOT_FOUND"
    CONFLICT = "CONFLICT"
    TIMEOUT = "TIMEOUT"
    UNAVAILABLE = "UNAVAILABLE"
    ENDED = "ENDED"
    ALREADY_APPROVED = "ALREADY_APPROVED"
    APPROVAL_NOT_REQUIRED = "APPROVAL_NOT_REQUIRED"
    DEADLINE_PASSED = "DEADLINE_PASSED"
    NOT_APPROVED = "NOT_APPROVED"
    ALREADY_REVOKED = "ALREADY_REVOKED"
    NOT_AWAITING_ACKNOWLEDGEMENT = "NOT_AWAITING_ACKNOWLEDGEMENT"
    UNREACHABLE = "UNREACHABLE"
    POLICY_DENIED = "POLICY_DENIED"
    POLICY_ERROR = "POLICY_ERROR"
    NO_PLAN = "NO_PLAN"
    NO_RECIPE = "NO_RECIPE"
    NO_RENDER_FLAGS = "NO_RENDER_FLAGS"
    DIGEST_MISMATCH = "DIGEST_MISMATCH"
    INVALID_PLAN = "INVALID_PLAN"
    WRITE_FAILED = "WRITE_FAILED"
    INVALID_OBJECT = "INVALID_OBJECT"
    PLUGIN_ERROR = "PLUGIN_ERROR"
    INTERRUPTED = "INTERRUPTED"
    INTERNAL = "INTERNAL"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def exit_code(self) -> int:
        if self is Code.USAGE:
            return EXIT_USAGE
        if self is Code.INTERRUPTED:
            return EXIT_INTERRUPTED
        return EXIT_FAILED


class AicrError(Exception):
    """A failure with a stable `Code` and, optionally, indented detail lines."""

    def __init__(self, code: Code | str, message: str, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.code = Code(code)  # a string that is no Code is a bug: ValueError, reported as INTERNAL
        self.message = message
        self.details = list(details)

    @property
    def exit_code(self) -> int:
        return self.code.exit_code

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class UsageError(AicrError):
    """Unknown command or flag, missing argument, bad flag value: exit 2."""

    def __init__(self, message: str) -> None:
        super().__init__(Code.USAGE, message)


class HelpRequested(Exception):
    """Raised by `-h/--help` so that help goes through the `help` command."""

    def __init__(self, command: str | None) -> None:
        super().__init__(command or "")
        self.command = command
