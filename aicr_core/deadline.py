"""One deadline shared by all the API calls of a command.

The upstream plugin gives a command 30 seconds for all its API calls together;
each call gets what is left. AICR_DEADLINE_SECONDS overrides the figure (tests
use it to prove the TIMEOUT path without waiting half a minute).
"""
from __future__ import annotations

import os
import time

from aicr_core.errors import AicrError, Code

DEFAULT_SECONDS = 30.0


def configured_seconds() -> float:
    raw = os.environ.get("AICR_DEADLINE_SECONDS")
    if raw is None:
        return DEFAULT_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        raise AicrError(Code.USAGE, f"AICR_DEADLINE_SECONDS={raw!r} is not a number of seconds") from None
    if seconds <= 0:
        raise AicrError(Code.USAGE, "AICR_DEADLINE_SECONDS must be positive")
    return seconds


class Deadline:
    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = configured_seconds() if seconds is None else seconds
        self._ends = time.monotonic() + self.seconds

    def remaining(self) -> float:
        """Seconds left; TIMEOUT when none are."""
        left = self._ends - time.monotonic()
        if left <= 0:
            raise self.expired()
        return left

    def expired(self) -> AicrError:
        return AicrError(Code.TIMEOUT, f"the API calls of this command did not finish within {self.seconds:g}s")
