"""One deadline shared by all the API calls of a session, kept by the wall clock on every thread.

The upstream plugin gives a command 30 seconds for all its API calls together;
each call gets what is left. `--request-timeout` (kubectl's flag) or
AICR_DEADLINE_SECONDS changes the figure; 0 means no deadline, as in kubectl.

Socket timeouts alone cannot keep such a deadline: urllib3's read timeout
applies to each read, so a server that trickles a byte a second never trips
it, and the Kubernetes client runs credential plugins with no timeout at all.
So a `Deadline` has a watchdog (one daemon thread for the process) that, when
the deadline passes, shuts down every socket and kills (with its process
group) every process that is registered with it at that moment. Whatever
blocked on them returns with an error, on whichever thread it runs, and
`enforced()` turns that error into TIMEOUT naming what did not finish.
On the main thread of a process whose owner allows it (the command line's:
aicr_core.process_owner, `alarm_signal`) `enforced()` also arms a real-time
timer (SIGALRM), which interrupts what no socket shutdown reaches (a slow name
lookup, say). A server's main thread runs an event loop, where an `Alarm`
would land in the loop: there, as on every other thread, the watchdog alone
ends the block.

The API, for a session on any thread (the fleet runs one per cluster):

    deadline = Deadline(30.0, name="context gpu-1")  # or Deadline(): the configured figure
    with deadline.enforced("the API calls of this command"):
        ...  # TIMEOUT (AicrError) when the deadline passes inside the block
    with deadline.watching_process(lambda: subprocess.Popen(...)) as popen:  # killed with its group at the deadline
        popen.communicate(timeout=deadline.timeout())
    deadline.watch_socket(sock) / .unwatch_socket(sock)  # shut down at the deadline
    deadline.expire()        # end it now, as the watchdog does at its end time
    Deadline.current()       # the deadline of the innermost enforced() block on this thread
    in_background(fn, *args).result(deadline)  # a daemon worker; never ThreadPoolExecutor

The session (aicr_core.session.connections) registers each connection it takes
from its pool with `Deadline.current()` for as long as it holds it, so one
connection pool may serve sessions with different deadlines (the webhook's).
Sockets and processes are registered only while they are in use: a deadline
that passes after its calls are done harms nothing.

`ThreadPoolExecutor` is no place for such work: its exit, and the
interpreter's, wait for every worker, so a hung worker would hold the command
past SIGTERM. `in_background` runs a daemon thread instead, and at exit (SIGTERM
and Ctrl-C included) every live deadline is expired, so no credential plugin
outlives the command.
"""
from __future__ import annotations

import atexit
import heapq
import itertools
import math
import os
import signal
import socket
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Generic, TypeVar

from aicr_core import process_owner
from aicr_core.errors import AicrError, Code, shown

DEFAULT_SECONDS = 30.0
# About 31 years. The interval timer and socket timeouts overflow somewhere past 9e9 seconds
# (AICR_DEADLINE_SECONDS=1e300 ended in INTERNAL): a deadline further away than this is none.
MAX_SECONDS = 1e9
# How long a caller waits for a background worker past their shared deadline: the watchdog has
# by then shut down what the worker waited on, so it is about to raise TIMEOUT itself.
WORKER_GRACE_SECONDS = 0.5
API_CALLS = "the API calls of this command"

T = TypeVar("T")


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
        raise AicrError(Code.USAGE, f"AICR_DEADLINE_SECONDS={shown(raw)} is not a number of seconds") from None
    if not seconds > 0:
        raise AicrError(Code.USAGE, "AICR_DEADLINE_SECONDS must be positive")
    return seconds


_local = threading.local()  # .stack: the deadlines of this thread's enforced() blocks, innermost last
_alarm_armed = False  # the SIGALRM timer is the main thread's only: one block arms it at a time


class Deadline:
    """`seconds` from now; `math.inf` never expires; None: the configured figure.

    `name` (a cluster's context, say) starts every TIMEOUT message, so that one
    deadline of several can be told apart.
    """

    def __init__(self, seconds: float | None = None, *, name: str = "") -> None:
        self.seconds = configured_seconds() if seconds is None else seconds
        if self.seconds > MAX_SECONDS:
            self.seconds = math.inf
        self.name = name
        self._ends = time.monotonic() + self.seconds
        self._lock = threading.Lock()
        self._fired = threading.Event()
        self._sockets: dict[int, socket.socket] = {}
        self._processes: dict[int, subprocess.Popen[Any]] = {}
        self._watched = False  # handed to the watchdog (on first use, so idle deadlines cost nothing)

    @property
    def bounded(self) -> bool:
        return not math.isinf(self.seconds)

    @property
    def fired(self) -> bool:
        """True once the deadline has passed (or `expire()` was called): every call now ends in TIMEOUT."""
        return self._fired.is_set()

    def remaining(self) -> float:
        """Seconds left (inf when unbounded); TIMEOUT when none are."""
        if self._fired.is_set():
            raise self.expired()
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

    def expired(self, what: str = API_CALLS) -> AicrError:
        prefix = f"{self.name}: " if self.name else ""
        return AicrError(Code.TIMEOUT, f"{prefix}{what} did not finish within {self.seconds:g}s")

    @staticmethod
    def current() -> Deadline | None:
        """The deadline of this thread's innermost `enforced()` block, if any."""
        stack: list[Deadline] = getattr(_local, "stack", [])
        return stack[-1] if stack else None

    # -- what blocks ------------------------------------------------------------------------------
    def watch_socket(self, sock: socket.socket) -> None:
        """Shut `sock` down when the deadline passes (until `unwatch_socket`); at once if it has."""
        with self._lock:
            if not self._fired.is_set():
                self._sockets[id(sock)] = sock
                self._watch()
                return
        _shutdown(sock)

    def unwatch_socket(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.pop(id(sock), None)

    @contextmanager
    def watching_process(self, start: Callable[[], subprocess.Popen[Any]],
                         what: str = API_CALLS) -> Iterator[subprocess.Popen[Any]]:
        """The process `start()` starts, killed (its whole group when it leads one) if the deadline passes inside
        the block. It is started under the deadline's lock: an expiry (the watchdog's, or every deadline's at
        the process's exit, SIGINT and SIGTERM included) waits for a start in progress and kills what it
        started, so no process is ever left running unwatched; an expired deadline starts nothing (TIMEOUT)."""
        with self._lock:
            _live(self)  # before the start: the exit's expiry either sees this deadline or is seen by it
            if self._fired.is_set() or _EXITING.is_set():
                raise self.expired(what)
            process = start()
            self._processes[process.pid] = process
            self._watch()
        try:
            yield process
        finally:
            with self._lock:
                self._processes.pop(process.pid, None)

    def expire(self) -> None:
        """End the deadline now: shut down its sockets, kill its processes; later calls get TIMEOUT."""
        with self._lock:
            if self._fired.is_set():
                return
            self._fired.set()
            sockets, processes = list(self._sockets.values()), list(self._processes.values())
            self._sockets.clear()
            self._processes.clear()
        for sock in sockets:
            _shutdown(sock)
        for process in processes:
            _kill(process)

    def _watch(self) -> None:
        """(Under the lock.) Hand a bounded deadline to the watchdog, once."""
        if not self._watched and self.bounded:
            self._watched = True
            _WATCHDOG.add(self, self._ends)
        _live(self)

    # -- the bound --------------------------------------------------------------------------------
    @contextmanager
    def enforced(self, what: str = API_CALLS) -> Iterator[None]:
        """Run the block with a wall-clock bound: TIMEOUT naming `what` when the deadline passes inside it.

        Works on any thread, nested or not. Connections the session takes inside the block are
        registered with this deadline (see `current()`).
        """
        global _alarm_armed
        left = self.remaining()
        with self._lock:
            self._watch()
        stack: list[Deadline] | None = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self)
        arm = (self.bounded and not _alarm_armed and threading.current_thread() is threading.main_thread()
               and process_owner.current().alarm_signal)
        previous: Any = None
        if arm:
            def fire(_signum: int, _frame: FrameType | None) -> None:
                # The watchdog fires at the same moment, and usually first: then a socket it shut down is
                # already ending the block, and an Alarm now could land in its cleanup, outside any handler.
                if _alarm_armed and not self._fired.is_set():
                    raise Alarm()

            previous = signal.signal(signal.SIGALRM, fire)
            _alarm_armed = True
            signal.setitimer(signal.ITIMER_REAL, left)
        try:
            yield
        except Alarm:
            raise self.expired(what) from None
        except AicrError as err:
            if self._fired.is_set() and err.code != Code.TIMEOUT:
                raise self.expired(what) from None  # the watchdog shut a socket: that is why it failed
            raise
        except Exception:
            if self._fired.is_set():
                raise self.expired(what) from None
            raise
        finally:
            if arm:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
                _alarm_armed = False
            stack.pop()
        if self._fired.is_set():  # a read cut short by the watchdog may have returned what it had
            raise self.expired(what)


def _shutdown(sock: socket.socket) -> None:
    """shutdown(2), not close: a thread blocked on the socket wakes up, and the fd stays its owner's to close.
    The plain socket's method, even for a TLS socket, whose own shutdown would drop its TLS state under a reader."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # already closed, or never connected


def _kill(process: subprocess.Popen[Any]) -> None:
    """SIGKILL the process's group when it leads one (started with start_new_session), else the process."""
    if process.poll() is not None:
        return  # reaped: its pid may be another process's by now
    try:
        if os.getpgid(process.pid) == process.pid:
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass  # it has exited (and may be reaped)


class _Watchdog:
    """One daemon thread for the process: expires each deadline at its end time."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, weakref.ref[Deadline]]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, deadline: Deadline, ends: float) -> None:
        with self._wake:
            heapq.heappush(self._heap, (ends, next(self._order), weakref.ref(deadline)))
            if self._thread is None or not self._thread.is_alive():  # after a fork, too
                self._thread = threading.Thread(target=self._run, name="aicr-deadline-watchdog", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._heap:
                    self._wake.wait()
                ends, _, ref = self._heap[0]
                wait = ends - time.monotonic()
                if wait > 0:
                    self._wake.wait(wait)
                    continue
                heapq.heappop(self._heap)
            deadline = ref()
            if deadline is not None:
                deadline.expire()


_WATCHDOG = _Watchdog()
_LIVE: weakref.WeakSet[Deadline] = weakref.WeakSet()  # deadlines that have held something
_LIVE_LOCK = threading.Lock()  # taken inside a deadline's lock, never around one
# Set at the exit: no process starts after it. A worker whose cluster's turn began as the command was
# interrupted made a new deadline after the expiry below had run, and its plugin outlived the command.
_EXITING = threading.Event()


def _live(deadline: Deadline) -> None:
    with _LIVE_LOCK:
        _LIVE.add(deadline)


@atexit.register
def expire_all() -> None:
    """At exit (SIGTERM and Ctrl-C included): no worker's credential plugin outlives the command.

    First no start may begin (`_EXITING`), then every deadline that holds something is expired: a
    start in progress is waited for and what it started killed (`watching_process`)."""
    _EXITING.set()
    with _LIVE_LOCK:
        live = list(_LIVE)
    for deadline in live:
        deadline.expire()


class Background(Generic[T]):
    """A function running on a daemon thread: the command never waits for it past its deadline."""

    def __init__(self, function: Callable[..., T], *args: Any) -> None:
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(function, *args), daemon=True,
                                        name=f"aicr-{getattr(function, '__name__', 'worker')}")
        self._thread.start()

    def _run(self, function: Callable[..., T], *args: Any) -> None:
        try:
            self._value = function(*args)
        except BaseException as err:  # noqa: BLE001 - handed to the thread that asks for the result
            self._error = err
        finally:
            self._done.set()

    def result(self, deadline: Deadline | None = None, what: str = API_CALLS) -> T:
        """The function's value (or its exception), waiting at most until `deadline` passes (plus a grace)."""
        wait = None
        if deadline is not None and deadline.bounded:
            wait = max(0.0, deadline._ends - time.monotonic()) + WORKER_GRACE_SECONDS
        if not self._done.wait(wait):
            assert deadline is not None
            deadline.expire()
            raise deadline.expired(what)
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def in_background(function: Callable[..., T], *args: Any) -> Background[T]:
    """Start `function(*args)` on a daemon thread; `.result(deadline)` waits for it within the deadline."""
    return Background(function, *args)
