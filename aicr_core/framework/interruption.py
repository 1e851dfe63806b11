"""SIGINT and SIGTERM while a fleet write winds down: the first asks it to stop, the second to stop at once.

An `Interruption` is a value of one operation: a fleet write is handed its own (as each cluster's
work is handed its `Turn`), and asks it, never a module's state; two writes at once, on two
threads, each see only theirs. A program that is no command line makes one and `request()`s it
(a person pressed Cancel); the command line gets one from `deferred()`, which takes the signals over.

A single-cluster command ends at a signal as launch.py and app.py arrange it: Ctrl-C is
`error: [INTERRUPTED] interrupted` (exit 130), SIGTERM exits 143 (during a fleet read, inside
`terminated_as_interrupted()`, it is said as Ctrl-C is: `Terminated`). A fleet write cannot end so:
some clusters may be written already and one may have a write on the wire, and the approver must
see which. So inside `deferred()` (on the main thread) the two signals are taken over:

- the first sets `requested`: the fan-out (aicr_core.fleet.fan_out) begins no new turn, its
  sessions send no new write, every turn that has sent none is left at once, and a turn whose
  write is on the wire finishes (bounded by its cluster's deadline); the command prints its
  usual result and exits 128 + the signal's number (130, 143);
- the second sets `hurried`: every turn is left at once, and the result says what is known
  (a write that had no answer may be stored);
- a third ends the command the signal's usual way (the handlers found on entry are back): a way
  out should printing itself hang.

The handler only appends to a list (atomic under the GIL) and never takes a lock: the main
thread may hold that very lock (a queue's, an Event's) when the signal lands. Whoever waits
polls `requested` (the fan-out every POLL_SECONDS). At a prompt (`prompting()`) the first signal
also raises `Interrupted` there, so that the blocking read of the terminal ends.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

POLL_SECONDS = 0.1  # how soon a waiting fan-out sees a signal
SIGNAL_NAMES = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}


class Terminated(KeyboardInterrupt):
    """SIGTERM inside `terminated_as_interrupted()` (a fleet read): the read ends as at Ctrl-C, with
    `error: [INTERRUPTED]`, and its exit is 143 (128 + SIGTERM), as a shell reports a command it ended."""

    exit_code = 128 + signal.SIGTERM


@contextmanager
def terminated_as_interrupted() -> Iterator[None]:
    """Inside the block, SIGTERM raises `Terminated` on the main thread, as SIGINT raises KeyboardInterrupt:
    a fleet read stopped by either says so (`error: [INTERRUPTED]`) instead of ending without a word. Its
    cleanups run as at any exception; off the main thread, or with SIGTERM ignored, nothing changes."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        yield
        return

    def terminated(_signum: int, _frame: FrameType | None) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Interrupted(BaseException):
    """Raised at a prompt (inside `prompting()`) by the first signal; a BaseException, as KeyboardInterrupt is."""


class Interruption:
    """The signals received inside `deferred()`, in order."""

    def __init__(self) -> None:
        self.signals: list[int] = []
        self._previous: dict[int, Any] = {}
        self._prompting = False

    def request(self, signum: int = signal.SIGINT) -> None:
        """Ask the operation to stop, as that signal would (called again: to stop at once). Safe from any
        thread: it only appends to a list."""
        self.signals.append(signum)

    @property
    def requested(self) -> bool:
        """A first signal came: begin nothing new, send no new write."""
        return bool(self.signals)

    @property
    def hurried(self) -> bool:
        """A second signal came: wait for nothing."""
        return len(self.signals) >= 2

    @property
    def name(self) -> str:
        """The first signal, as a person calls it (Ctrl-C, SIGTERM); empty before any."""
        return self._named(0)

    @property
    def names(self) -> str:
        """The first two signals: `Ctrl-C`, `Ctrl-C, then SIGTERM`."""
        return ", then ".join(self._named(i) for i in range(min(2, len(self.signals))))

    def _named(self, i: int) -> str:
        if i >= len(self.signals):
            return ""
        signum = self.signals[i]
        return SIGNAL_NAMES.get(signal.Signals(signum), f"signal {signum}")

    @property
    def exit_code(self) -> int:
        """128 + the first signal's number, as a shell reports a command that the signal ended."""
        return 128 + self.signals[0] if self.signals else 0

    @contextmanager
    def prompting(self) -> Iterator[None]:
        """A blocking read of the terminal: a signal raises `Interrupted` inside the block (and is recorded)."""
        if self.requested:
            raise Interrupted()
        self._prompting = True
        try:
            yield
        finally:
            self._prompting = False

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.signals.append(signum)
        if len(self.signals) >= 2:
            self._restore()  # a third signal ends the command the usual way
        elif self._prompting:
            raise Interrupted()

    def _take_over(self) -> None:
        for signum in SIGNAL_NAMES:
            previous = signal.getsignal(signum)
            if previous is signal.SIG_IGN:
                continue  # started with it ignored (nohup, a background job): it stays ignored
            self._previous[signum] = signal.SIG_DFL if previous is None else previous
            signal.signal(signum, self._handle)

    def _restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()


@contextmanager
def deferred() -> Iterator[Interruption]:
    """A new Interruption that SIGINT and SIGTERM request inside the block, instead of raising (see the
    module's doc); the operation run inside is handed it.

    Off the main thread (no signal is delivered there) nothing is taken over: it is requested only by
    `request()`. When a signal came, the handler stays in place after the block, while the command
    prints its result: a second signal then changes nothing, a third ends the command the usual way.
    """
    stop = Interruption()
    if threading.current_thread() is threading.main_thread():
        stop._take_over()
    try:
        yield stop
    finally:
        if not stop.requested:
            stop._restore()
