"""Errors a user sees: `error: [CODE] message`, exit 1, or 2 for usage errors.

Every failure the plugin knows about is an `AicrError` with a stable CODE (the
README lists them). Anything else reaching the top is a bug and is reported as
`INTERNAL`, never as a traceback (unless AICR_DEBUG=1).
"""
from __future__ import annotations

from collections.abc import Sequence

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class AicrError(Exception):
    """A failure with a stable CODE and, optionally, indented detail lines."""

    def __init__(self, code: str, message: str, details: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = list(details)

    @property
    def exit_code(self) -> int:
        return EXIT_USAGE if self.code == "USAGE" else EXIT_FAILED

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class UsageError(AicrError):
    """Unknown command or flag, missing argument, bad flag value: exit 2."""

    def __init__(self, message: str) -> None:
        super().__init__("USAGE", message)


class HelpRequested(Exception):
    """Raised by `-h/--help` so that help goes through the `help` command."""

    def __init__(self, command: str | None) -> None:
        super().__init__(command or "")
        self.command = command
