"""One deadline shared by all the API calls of a command, kept by the wall clock.

The upstream plugin gives a command 30 seconds for all its API calls together;
each call gets what is left. `--request-timeout` (kubectl's flag) or
AICR_DEADLINE_SECONDS changes the figure; 0 means no deadline, as in kubectl.

Socket timeouts alone cannot keep such a deadline: urllib3's read timeout
applies to each read, so a server that trickles a byte a second never trips
it, and the Kubernetes client runs credential plugins with no timeout at all.
So, on the main thread, `Deadline.enforced()` also arms a real-time timer
(SIGALRM) for what is left: when it fires, whatever blocks is interrupted
and the command fails with TIMEOUT. Off the main thread (a server's worker),
only the socket timeouts apply.
"""
from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from aicr_core.errors import AicrError, Code

DEFAULT_SECONDS = 30.0
# About 31 years. The interval timer and socket timeouts overflow somewhere past 9e9 seconds
# (AICR_DEADLINE_SECONDS=1e300 ended in INTERNAL): a deadline further away than this is none.
MAX_SECONDS = 1e9


class Alarm(BaseException):
    """Raised by the timer inside whatever blocks; a BaseException so that no `except Exception` swallows it."""


def configured_seconds() -> float:
    """AICR_DEADLINE_SECONDS, else 30 s."""
    raw = os.environ.get("AICR_DEADLINE_SECONDS")
    if raw is None:
        return DEFAULT_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        raise AicrError(Code.USAGE, f"AICR_DEADLINE_SECONDS={raw!r} is not a number of seconds") from None
    if not seconds > 0:
        raise AicrError(Code.USAGE, "AICR_DEADLINE_SECONDS must be positive")
    return seconds


class Deadline:
    """`seconds` from now; `math.inf` never expires; None: the configured figure."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = configured_seconds() if seconds is None else seconds
        if self.seconds > MAX_SECONDS:
            self.seconds = math.inf
        self._ends = time.monotonic() + self.seconds
        self._armed = 0  # nesting depth of enforced(): only the outermost arms and disarms the timer

    @property
    def bounded(self) -> bool:
        return not math.isinf(self.seconds)

    def remaining(self) -> float:
        """Seconds left (inf when unbounded); TIMEOUT when none are."""
        if not self.bounded:
            return math.inf
        left = self._ends - time.monotonic()
        if left <= 0:
            raise self.expired()
        return left

    def timeout(self) -> float | None:
        """What is left, for a socket timeout: None when unbounded."""
        left = self.remaining()
        return None if math.isinf(left) else left

    def expired(self, what: str = "the API calls of this command") -> AicrError:
        return AicrError(Code.TIMEOUT, f"{what} did not finish within {self.seconds:g}s")

    @contextmanager
    def enforced(self, what: str = "the API calls of this command") -> Iterator[None]:
        """Run the block with a wall-clock bound: TIMEOUT when the deadline passes inside it."""
        left = self.remaining()
        if self._armed or not self.bounded or threading.current_thread() is not threading.main_thread():
            self._armed += 1
            try:
                yield
            finally:
                self._armed -= 1
            return

        def fire(_signum: int, _frame: FrameType | None) -> None:
            raise Alarm()

        previous = signal.signal(signal.SIGALRM, fire)
        self._armed += 1
        try:
            signal.setitimer(signal.ITIMER_REAL, left)
            yield
        except Alarm:
            raise self.expired(what) from None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            self._armed -= 1
