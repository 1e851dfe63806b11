"""One command over many clusters: running a function per cluster, each with its own session and deadline.

A `Fleet` is the selection, as a value: the fleet's source (aicr_core.fleet.sources), its
members, the members chosen (aicr_core.fleet.selection), the connection overrides every cluster
shares and how many clusters are worked on at once. A command line builds it from its flags
(aicr_core.fleet.flags); any other program builds it itself (`Fleet.chosen`). Each cluster gets a
session of its own (its source connects it: its own kubeconfig entry or ClusterProfile, exec
plugin run inside its turn) and a deadline of its own.

This module knows contexts and sessions, not rollouts: an operation hands `Fleet.run` a function
of one `Turn`, and gets back one `Outcome` per context, its value or its error.

The deadline: each cluster's `Deadline` (aicr_core.session.deadline) starts when its turn does and is
named after its context. It holds on the worker thread: when it passes, the session's watchdog
shuts that cluster's sockets and kills its credential plugin with its children, and the calls
end in `TIMEOUT` for that cluster alone. The thread that waits for the workers keeps each
deadline too: a cluster still running `GRACE_SECONDS` past it (in what no socket shutdown
reaches, a name lookup say) is reported `TIMEOUT` and left behind on its daemon thread, and a
new worker takes its place, so a cluster that hangs never delays the others.

Interrupted (the `Interruption` an operation hands to `run` or `events`, as each turn gets its
`Turn`; aicr_core.framework.interruption: on the command line, the one of `deferred()`): once it is
requested no turn begins and no session sends a new write (`hold_writes`); each turn not
begun, and each begun that has sent no write, ends at once as INTERRUPTED; a turn whose write
was sent finishes, bounded by its deadline. At the second signal (`hurried`), those are left
too, their outcome INTERRUPTED with `write_unanswered`: the write may be stored.

Imported only where a fleet runs (its dataclasses cost `help` a few milliseconds): command
modules import `flags` at module level and this module inside the functions that run.
"""
from __future__ import annotations

import collections
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from aicr_core.errors import AicrError, Code
from aicr_core.fleet.selection import DEFAULT_PARALLEL, chosen_members

if TYPE_CHECKING:
    from aicr_core.fleet.sources import Members, Source
    from aicr_core.framework.interruption import Interruption
    from aicr_core.session.connection_flags import Overrides
    from aicr_core.session.deadline import Deadline
    from aicr_core.session.kube import KubeSession
    from aicr_core.session.kubeconfig import Settings

T = TypeVar("T")

GRACE_SECONDS = 0.2  # how long past its deadline a cluster's worker may take to report before it is left behind
CLUSTER_CALLS = "the API calls of this command"  # what a TIMEOUT names after `context NAME: `, as the session does


# -- running one function per cluster -------------------------------------------------------------

@dataclass
class Outcome(Generic[T]):
    """What one cluster gave: its value, or its error (never both).

    `write_unanswered`: its turn was left (a second signal) after its session had sent a write
    that had no answer yet: the write may be stored.
    """

    context: str
    value: T | None = None
    error: AicrError | None = None
    write_unanswered: bool = False


@dataclass(frozen=True)
class Note:
    """A line of progress from a cluster's work, as it happens."""

    context: str
    message: str


@dataclass
class Turn:
    """What a cluster's work gets: its context, its session (deadline included), and a way to report progress."""

    context: str
    session: KubeSession
    note: Callable[[str], None]


@dataclass(frozen=True)
class Tally:
    """How far an operation's clusters have got, for a progress callback: DONE of ALL done, FAILED of them
    failed, in wave WAVE (None outside the waves)."""

    done: int
    all: int
    failed: int
    wave: str | None = None


def tallied(events: Iterator[Outcome[T] | Note], total: int, progress: Callable[[Tally], None] | None,
            failed: Callable[[Outcome[T]], bool], wave: str | None = None) -> Iterator[Outcome[T] | Note]:
    """`events` as they come, with `progress` told the tally at the start and after each outcome (on the
    thread that reads them)."""
    if progress is None:
        yield from events
        return
    done = bad = 0
    progress(Tally(0, total, 0, wave))
    for event in events:
        if isinstance(event, Outcome):
            done += 1
            bad += bool(failed(event))
            progress(Tally(done, total, bad, wave))
        yield event


def errored(outcome: Outcome[Any]) -> bool:
    """A read's failure: the cluster gave an error, not a value."""
    return outcome.error is not None


@dataclass
class _Job(Generic[T]):
    context: str
    work: Callable[[Turn], T]
    seconds: float | None
    started: float | None = None
    deadline: Deadline | None = None
    session: Any = None  # its session, once made: how many writes it has sent (writes_sent)
    done: bool = False


@dataclass
class Fleet:
    """The selection, as a value: the chosen members of a source, sessions made once per member, work run
    `parallel` at a time.

    The members are those of the fleet's source (aicr_core.fleet.sources: kubeconfig contexts, or
    the ClusterProfiles of a hub, named NAMESPACE/NAME); `contexts` holds the chosen ones' names
    either way. `overrides` apply to every cluster (impersonation, the request timeout); its context
    is never used (each member is its own).
    """

    source: Source
    members: Members
    overrides: Overrides
    contexts: list[str]
    parallel: int = DEFAULT_PARALLEL
    _settings: dict[str, Settings] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def chosen(cls, source: Source, members: Members, overrides: Overrides | None = None, *,
               contexts: str | None = None, parallel: int = DEFAULT_PARALLEL) -> Fleet:
        """The members that `contexts` (names, globs, `!` exclusions, comma-separated, as --contexts; None:
        every member) chooses of `members`, which `source` read (`source.members(values)`)."""
        from aicr_core.session.connection_flags import Overrides

        return cls(source, members, (overrides or Overrides())._replace(context=None),
                   chosen_members(contexts, members, source.KIND), parallel)

    def reach(self, member: str) -> str | None:
        """The flags by which a single-cluster command reaches this member (`--context NAME`), for the commands
        a message suggests; None where none does (an inventory's member)."""
        return self.members.single_cluster_flags(member)

    def new_deadline(self, seconds: float | None = None, context: str = "") -> Deadline:
        """A deadline of its own for one cluster: `seconds`, else --request-timeout, else the command's 30 s.

        It holds on the worker thread (the session's watchdog shuts its sockets and kills its
        credential plugin when it passes); its TIMEOUT messages start `context NAME: `.
        """
        import math

        from aicr_core.session import kube
        from aicr_core.session.deadline import Deadline

        figure = kube.command_deadline(self.overrides).seconds if seconds is None else (seconds or math.inf)
        return Deadline(figure, name=f"context {context}" if context else "")

    def session(self, context: str, deadline: Deadline) -> KubeSession:
        """A session with the member `context`, as its source connects it; its credentials load once a command."""
        from aicr_core.session import kube

        with self._lock:
            settings = self._settings.get(context)
        if settings is None:
            cluster = self.members.connect(context, self.overrides, deadline)
            with self._lock:
                self._settings[context] = cluster.settings
            return cluster
        return kube.KubeSession(settings, deadline)

    def run(self, work: Callable[[Turn], T], contexts: Sequence[str] | None = None,
            seconds: Callable[[str], float | None] | None = None, *,
            interruption: Interruption | None = None) -> list[Outcome[T]]:
        """`work` once per context, `parallel` at a time; the outcomes in the contexts' order."""
        outcomes = [event for event in self.events(work, contexts, seconds, interruption=interruption)
                    if isinstance(event, Outcome)]
        order = {name: i for i, name in enumerate(contexts if contexts is not None else self.contexts)}
        return sorted(outcomes, key=lambda o: order[o.context])

    def events(self, work: Callable[[Turn], T], contexts: Sequence[str] | None = None,
               seconds: Callable[[str], float | None] | None = None, *,
               interruption: Interruption | None = None) -> Iterator[Outcome[T] | Note]:
        """Each cluster's notes and outcome, as they happen (outcomes in the order clusters finish).

        A cluster's deadline starts with its turn; `seconds(context)` gives it (None: the command's).
        Interrupted (`interruption` requested: see the module's doc), every cluster still gets its outcome.
        """
        from aicr_core.framework.interruption import POLL_SECONDS

        stop = interruption
        self.new_deadline()  # a bad AICR_DEADLINE_SECONDS is [USAGE] here, before any cluster's turn
        jobs = [_Job(name, work, seconds(name) if seconds else None)
                for name in (contexts if contexts is not None else self.contexts)]
        if not jobs:
            return
        pending: collections.deque[_Job[T]] = collections.deque(jobs)  # taken under `guard`
        reports: queue.Queue[Outcome[T] | Note] = queue.Queue()
        running: list[_Job[T]] = []
        guard = threading.Lock()

        def take() -> _Job[T] | None:
            with guard:
                if not pending or (stop is not None and stop.requested):
                    return None
                job = pending.popleft()
                job.started = time.monotonic()
                running.append(job)
                return job

        def finish(job: _Job[T], outcome: Outcome[T]) -> bool:
            with guard:
                if job.done:  # already reported (timed out, or left at a signal): this worker was replaced
                    return False
                job.done = True
                running.remove(job)
            reports.put(outcome)
            return True

        def worker() -> None:
            while (job := take()) is not None:
                try:
                    deadline = self.new_deadline(job.seconds, job.context)
                except AicrError as err:
                    if not finish(job, Outcome(job.context, error=err)):
                        return
                    continue
                job.deadline = deadline
                if not finish(job, self._one(job, deadline, reports, stop)):
                    return

        def start_worker() -> None:
            threading.Thread(target=worker, name="aicr-fleet", daemon=True).start()

        for _ in range(min(self.parallel, len(jobs))):
            start_worker()
        left = len(jobs)
        longest_wait = 0.5 if stop is None else POLL_SECONDS
        while left:
            if stop is not None and stop.requested:
                for outcome in self._left_at_a_signal(stop, pending, running, guard):
                    left -= 1
                    yield outcome
                if not left:
                    return
            try:
                event = reports.get(timeout=min(longest_wait, self._next_wake(running, guard)))
            except queue.Empty:
                for job in self._overdue(running, guard):
                    left -= 1
                    start_worker()  # the overdue one's worker is stuck: the others keep their turn
                    assert job.deadline is not None
                    job.deadline.expire()  # its sockets shut, its plugin killed, if the watchdog has not yet
                    timeout = job.deadline.expired(CLUSTER_CALLS)
                    if int(getattr(job.session, "writes_sent", 0)) > 0:
                        timeout = AicrError(Code.TIMEOUT, f"{timeout.message}; a write it sent had no answer: it "
                                            "may be stored")
                    yield Outcome(job.context, error=timeout)
                continue
            if isinstance(event, Outcome):
                left -= 1
                if event.error is not None and event.error.code is Code.USAGE:
                    # A bad flag or environment value is the command's usage error, never one cluster's
                    # failure: `error: [USAGE] ...`, exit 2, without a context of its own.
                    raise event.error
            yield event

    @staticmethod
    def _left_at_a_signal(stop: Interruption, pending: collections.deque[_Job[T]], running: list[_Job[T]],
                          guard: threading.Lock) -> list[Outcome[T]]:
        """After a signal: the turns not begun, and those begun that have sent no write (every one, after a
        second signal), reported INTERRUPTED; their deadlines expire (sockets shut, plugins killed)."""
        left: list[Outcome[T]] = []
        ended: list[Deadline] = []
        with guard:
            while pending:
                job = pending.popleft()
                job.done = True
                left.append(Outcome(job.context, error=AicrError(
                    Code.INTERRUPTED, f"interrupted ({stop.name}) before its turn")))
            for job in list(running):
                sent = int(getattr(job.session, "writes_sent", 0)) > 0
                if sent and not stop.hurried:
                    continue  # its write is on the wire (or answered): it finishes, bounded by its deadline
                job.done = True
                running.remove(job)
                if job.deadline is not None:
                    ended.append(job.deadline)
                message = (f"interrupted twice ({stop.names}) while a write it sent had no answer: the write may "
                           "be stored" if sent
                           else f"interrupted ({stop.name}) during its turn, before it sent any write")
                left.append(Outcome(job.context, error=AicrError(Code.INTERRUPTED, message), write_unanswered=sent))
        for deadline in ended:
            deadline.expire()
        return left

    @staticmethod
    def _next_wake(running: list[_Job[Any]], guard: threading.Lock) -> float:
        with guard:
            ends = [job.started + job.deadline.seconds + GRACE_SECONDS for job in running
                    if job.started is not None and job.deadline is not None and job.deadline.bounded]
        return max(0.01, min(ends) - time.monotonic()) if ends else 0.5

    @staticmethod
    def _overdue(running: list[_Job[Any]], guard: threading.Lock) -> list[_Job[Any]]:
        now, late = time.monotonic(), []
        with guard:
            for job in list(running):
                if (job.started is not None and job.deadline is not None and job.deadline.bounded
                        and now > job.started + job.deadline.seconds + GRACE_SECONDS):
                    job.done = True
                    running.remove(job)
                    late.append(job)
        return late

    def _one(self, job: _Job[T], deadline: Deadline, reports: queue.Queue[Any],
             stop: Interruption | None) -> Outcome[T]:
        def note(message: str) -> None:
            reports.put(Note(job.context, message))

        try:
            with deadline.enforced(CLUSTER_CALLS):
                session = self.session(job.context, deadline)
                if stop is not None and hasattr(session, "hold_writes"):
                    session.hold_writes = lambda: stop.requested
                job.session = session
                return Outcome(job.context, value=job.work(Turn(job.context, session, note)))
        except AicrError as err:
            return Outcome(job.context, error=err)
        except Exception as err:  # noqa: BLE001 - one cluster's bug is that cluster's error, not the fleet's end
            return Outcome(job.context, error=AicrError(Code.INTERNAL, f"{type(err).__name__}: {err} (a bug)"))
