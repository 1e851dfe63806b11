"""One command over many clusters: the fleet flags, choosing the contexts, and running per cluster.

`--contexts LIST` (names and shell-style globs, `!` excludes) or `--all-contexts` chooses
kubeconfig contexts, taken in the merged kubeconfig's order; `--parallel N` bounds how many
clusters are worked on at once. Each cluster gets a session of its own (its own kubeconfig
entry: server, CA, credentials, exec plugin run inside its turn) and a deadline of its own.

This module knows contexts and sessions, not rollouts: a command hands `Fleet.run` a function
of one session, and gets back one `Outcome` per context, its value or its error.

The deadline: each cluster's `Deadline` (aicr_core.session.deadline) starts when its turn does and is
named after its context. It holds on the worker thread: when it passes, the session's watchdog
shuts that cluster's sockets and kills its credential plugin with its children, and the calls
end in `TIMEOUT` for that cluster alone. The thread that waits for the workers keeps each
deadline too: a cluster still running `GRACE_SECONDS` past it (in what no socket shutdown
reaches, a name lookup say) is reported `TIMEOUT` and left behind on its daemon thread, and a
new worker takes its place, so a cluster that hangs never delays the others.

Module-level imports stay light: `help` imports the command modules that call `add_*_flags`.
"""
from __future__ import annotations

import argparse
import fnmatch
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from aicr_core.errors import AicrError, Code, UsageError

if TYPE_CHECKING:
    from aicr_core.fleet.cluster_profiles import Inventory
    from aicr_core.session.connection_flags import Overrides
    from aicr_core.session.deadline import Deadline
    from aicr_core.session.kube import KubeSession
    from aicr_core.session.kubeconfig import Settings

T = TypeVar("T")

DEFAULT_PARALLEL = 16
GRACE_SECONDS = 0.2  # how long past its deadline a cluster's worker may take to report before it is left behind
CLUSTER_CALLS = "the API calls of this command"  # what a TIMEOUT names after `context NAME: `, as the session does
PLAN_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
# The connection flags each cluster's own kubeconfig entry decides (argparse dest, flag name).
PER_CLUSTER_FLAGS = (("server", "--server"), ("token", "--token"), ("user", "--user"), ("cluster", "--cluster"),
                     ("certificate_authority", "--certificate-authority"),
                     ("client_certificate", "--client-certificate"), ("client_key", "--client-key"),
                     ("tls_server_name", "--tls-server-name"),
                     ("insecure_skip_tls_verify", "--insecure-skip-tls-verify"))
FLEET_DESTS = (("contexts", "--contexts"), ("all_contexts", "--all-contexts"), ("parallel", "--parallel"),
               ("plan", "--plan"), ("waves", "--waves"), ("yes", "--yes"), ("cluster_profiles", "--cluster-profiles"),
               ("profile_namespace", "--profile-namespace"), ("profile_selector", "--profile-selector"),
               ("cluster_profile_providers", "--cluster-profile-providers"))
# The flags that choose the clusters from a hub's ClusterProfiles (aicr_core.fleet.cluster_profiles).
PROFILE_DESTS = ("cluster_profiles", "profile_namespace", "profile_selector", "cluster_profile_providers")


# -- the flags ----------------------------------------------------------------------------------

def parallel_count(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"invalid --parallel {text!r}: a whole number of clusters, at least 1")
    return int(text)


def plan_digest(text: str) -> str:
    if not PLAN_DIGEST.fullmatch(text):
        raise argparse.ArgumentTypeError(f"invalid --plan {text!r}: a full plan digest, sha256: and 64 "
                                         "lowercase hex digits")
    return text


def add_selection_flags(parser: argparse.ArgumentParser) -> None:
    """--contexts, --all-contexts, --parallel, and the ClusterProfile flags: for the commands that may run
    across clusters."""
    group = parser.add_argument_group("fleet: one command across the kubeconfig's clusters")
    action = group.add_argument("--contexts", metavar="LIST",
                                help="comma-separated context names and globs (gpu-prod-*); !PATTERN excludes; "
                                     "with --cluster-profiles, NAMESPACE/NAME of profiles")
    action.completer = complete_contexts  # type: ignore[attr-defined]
    group.add_argument("--all-contexts", action="store_true", help="every context of the kubeconfig")
    group.add_argument("--parallel", metavar="N", type=parallel_count,
                       help=f"at most N clusters at once (default {DEFAULT_PARALLEL})")
    inventory = parser.add_argument_group("fleet: the clusters of a hub's ClusterProfiles (Cluster Inventory API)")
    inventory.add_argument("--cluster-profiles", action="store_true",
                           help="the clusters are the ClusterProfiles the hub (the current context, or --context) "
                                "lists; each named NAMESPACE/NAME")
    action = inventory.add_argument("--profile-namespace", metavar="NS",
                                    help="only the ClusterProfiles of this namespace (default: all)")
    action.completer = complete_profile_namespaces  # type: ignore[attr-defined]
    inventory.add_argument("--profile-selector", metavar="SELECTOR",
                           help="only the ClusterProfiles whose labels match (the syntax of -l)")
    inventory.add_argument("--cluster-profile-providers", metavar="FILE",
                           help="the provider file (KEP-5339's JSON): which credentials plugin reaches a member")


def add_plan_flags(parser: argparse.ArgumentParser, plans: Callable[..., Any] | None = None, *,
                   waves: bool = False, yes: bool = True) -> None:
    """--plan DIGEST (completed by `plans`), --yes for writes, --waves FILE for approve: the fleet form of a command."""
    group = parser.add_argument_group("fleet writes")
    action = group.add_argument("--plan", metavar="DIGEST", type=plan_digest,
                                help="in place of ROLLOUT: the open rollout to this plan in each selected cluster")
    action.completer = plans  # type: ignore[attr-defined]
    if waves:
        group.add_argument("--waves", metavar="FILE",
                           help="approve wave by wave as FILE says (a Waves document), stopping at failures")
    if yes:
        group.add_argument("--yes", action="store_true",
                           help="write without asking (needed when stdin or stderr is no terminal)")


def selected(args: argparse.Namespace) -> bool:
    """Whether the command runs across clusters (--contexts, --all-contexts, --waves, or a ClusterProfile flag)."""
    return bool(getattr(args, "contexts", None) is not None or getattr(args, "all_contexts", False)
                or getattr(args, "waves", None) is not None
                or any(getattr(args, dest, None) not in (None, False) for dest in PROFILE_DESTS))


def from_profiles(args: argparse.Namespace) -> bool:
    """Whether the clusters are a hub's ClusterProfiles (--cluster-profiles)."""
    return bool(getattr(args, "cluster_profiles", False))


def given_flags(args: argparse.Namespace) -> list[str]:
    """The fleet flags given, by name."""
    given = []
    for dest, flag in FLEET_DESTS:
        value = getattr(args, dest, None)
        if value not in (None, False):
            given.append(flag)
    return given


def refuse_fleet_flags(args: argparse.Namespace, form: str) -> None:
    """A fleet flag on a form that does not take it: [USAGE], never ignored."""
    given = given_flags(args)
    if given:
        raise UsageError(f"{given[0]} cannot be used with {form}")


def check_selection(args: argparse.Namespace) -> None:
    """The [USAGE] rules of choosing clusters, before any call (the contexts themselves: `choose`)."""
    from aicr_core.fleet.cluster_profiles import check_flags

    check_flags(args)
    profiles = from_profiles(args)
    fleet_flag = "--cluster-profiles" if profiles else "--waves" if getattr(args, "waves", None) is not None else (
        "--all-contexts" if getattr(args, "all_contexts", False) else "--contexts")
    if getattr(args, "waves", None) is not None:
        for other in ("contexts", "all_contexts"):
            if getattr(args, other, None) not in (None, False):
                raise UsageError(f"--{other.replace('_', '-')} cannot be used with --waves: the waves choose the "
                                 "clusters")
    if getattr(args, "contexts", None) is not None and getattr(args, "all_contexts", False):
        raise UsageError("--contexts and --all-contexts cannot be used together")
    if getattr(args, "context", None) and not profiles:  # with --cluster-profiles it names the hub
        raise UsageError(f"--context cannot be used with {fleet_flag}: it chooses one cluster")
    decides = "each member's ClusterProfile and provider decide" if profiles else \
        "each cluster's own kubeconfig entry decides"
    for dest, flag in PER_CLUSTER_FLAGS:
        if getattr(args, dest, None):
            raise UsageError(f"{flag} cannot be used with {fleet_flag}: {decides} it (only --as, --as-group, "
                             "--as-uid and --request-timeout apply to all)")
    if getattr(args, "contexts", None) is not None:
        patterns(args.contexts)


def patterns(text: str) -> list[str]:
    """`a,gpu-*,!gpu-lab-*` -> its entries; an empty list or entry is [USAGE]."""
    entries = [entry.strip() for entry in text.split(",")]
    if not text.strip() or all(not entry for entry in entries):
        raise UsageError("--contexts needs at least one context name or pattern")
    if any(not entry or entry == "!" for entry in entries):
        raise UsageError(f"--contexts {text!r} has an empty entry")
    return entries


def matches(name: str, pattern: str) -> bool:
    return name == pattern or fnmatch.fnmatchcase(name, pattern)


def choose(names: Sequence[str], entries: Sequence[str], what: str = "--contexts", kind: str = "context",
           among: str = "of the kubeconfig") -> list[str]:
    """The members `entries` select, in their order (the kubeconfig's): names and globs, `!` excluding.

    Only exclusions: every member but those. Any entry that matches no member is [USAGE]
    (a typo must not shrink the fleet silently), and so is a selection left empty. `kind` and
    `among` say what the names are, for messages ("context" "of the kubeconfig").
    """
    include = [e for e in entries if not e.startswith("!")]
    exclude = [e[1:] for e in entries if e.startswith("!")]
    for entry in [*include, *exclude]:
        if not any(matches(name, entry) for name in names):
            raise UsageError(f"{what}: {entry!r} matches no {kind} {among}")
    chosen = [name for name in names if (not include or any(matches(name, e) for e in include))
              and not any(matches(name, e) for e in exclude)]
    if not chosen:
        raise UsageError(f"{what} selects no {kind}")
    return chosen


def context_names(kubeconfig: str | None) -> list[str]:
    """The contexts of the merged kubeconfig, in its order (as kubectl merges the files)."""
    from aicr_core.session.kubeconfig import merged_context_names

    return merged_context_names(kubeconfig)


def chosen_contexts(args: argparse.Namespace, profiles: Inventory | None = None) -> list[str]:
    """The members --contexts/--all-contexts choose: contexts of the kubeconfig, or of the kept ClusterProfiles."""
    if profiles is not None:
        if getattr(args, "contexts", None) is None:
            return profiles.names
        return choose(profiles.names, patterns(args.contexts), kind="ClusterProfile", among=profiles.among)
    names = context_names(getattr(args, "kubeconfig", None))
    if getattr(args, "all_contexts", False):
        if not names:
            raise UsageError("--all-contexts: the kubeconfig has no context")
        return list(names)
    return choose(names, patterns(args.contexts))


def inventory(args: argparse.Namespace) -> Inventory:
    """With --cluster-profiles: the provider file, then the hub's kept profiles (its read is a call)."""
    from aicr_core.fleet import cluster_profiles

    return cluster_profiles.read(args)


def parallel_of(args: argparse.Namespace) -> int:
    return int(getattr(args, "parallel", None) or DEFAULT_PARALLEL)


# -- running one function per cluster -------------------------------------------------------------

@dataclass
class Outcome(Generic[T]):
    """What one cluster gave: its value, or its error (never both)."""

    context: str
    value: T | None = None
    error: AicrError | None = None


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


@dataclass
class _Job(Generic[T]):
    context: str
    work: Callable[[Turn], T]
    seconds: float | None
    started: float | None = None
    deadline: Deadline | None = None
    done: bool = False


@dataclass
class Fleet:
    """The selected clusters of one command: sessions made once per member, work run `parallel` at a time.

    The members are kubeconfig contexts, or (`profiles`) the ClusterProfiles of a hub, named
    NAMESPACE/NAME; `contexts` holds their names either way.
    """

    kubeconfig: str | None
    overrides: Overrides
    contexts: list[str]
    parallel: int = DEFAULT_PARALLEL
    _settings: dict[str, Settings] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    profiles: Inventory | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace, contexts: list[str] | None = None,
                  profiles: Inventory | None = None) -> Fleet:
        """The members the flags choose (with --cluster-profiles, the hub is read here, unless `profiles` is
        given), or `contexts` of them."""
        from aicr_core.session.connection_flags import Overrides

        overrides = Overrides.from_args(args)._replace(context=None)
        if profiles is None and from_profiles(args):
            profiles = inventory(args)
        return cls(getattr(args, "kubeconfig", None), overrides,
                   contexts if contexts is not None else chosen_contexts(args, profiles), parallel_of(args),
                   profiles=profiles)

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
        """A session with `context`'s own kubeconfig entry; its credentials are loaded once per command."""
        from aicr_core.session import kube

        with self._lock:
            settings = self._settings.get(context)
        if settings is None:
            if self.profiles is not None:
                cluster = self.profiles.connect(context, self.overrides, deadline)
            else:
                cluster = kube.connect(self.kubeconfig, context, deadline,
                                       overrides=self.overrides._replace(context=context))
            with self._lock:
                self._settings[context] = cluster.settings
            return cluster
        return kube.KubeSession(settings, deadline)

    def run(self, work: Callable[[Turn], T], contexts: Sequence[str] | None = None,
            seconds: Callable[[str], float | None] | None = None) -> list[Outcome[T]]:
        """`work` once per context, `parallel` at a time; the outcomes in the contexts' order."""
        outcomes = [event for event in self.events(work, contexts, seconds) if isinstance(event, Outcome)]
        order = {name: i for i, name in enumerate(contexts if contexts is not None else self.contexts)}
        return sorted(outcomes, key=lambda o: order[o.context])

    def events(self, work: Callable[[Turn], T], contexts: Sequence[str] | None = None,
               seconds: Callable[[str], float | None] | None = None) -> Iterator[Outcome[T] | Note]:
        """Each cluster's notes and outcome, as they happen (outcomes in the order clusters finish).

        A cluster's deadline starts with its turn; `seconds(context)` gives it (None: the command's).
        """
        self.new_deadline()  # a bad AICR_DEADLINE_SECONDS is [USAGE] here, before any cluster's turn
        jobs = [_Job(name, work, seconds(name) if seconds else None)
                for name in (contexts if contexts is not None else self.contexts)]
        if not jobs:
            return
        pending: queue.Queue[_Job[T]] = queue.Queue()
        for job in jobs:
            pending.put(job)
        reports: queue.Queue[Outcome[T] | Note] = queue.Queue()
        running: list[_Job[T]] = []
        guard = threading.Lock()

        def worker() -> None:
            while True:
                try:
                    job = pending.get_nowait()
                except queue.Empty:
                    return
                try:
                    deadline = self.new_deadline(job.seconds, job.context)
                except AicrError as err:
                    reports.put(Outcome(job.context, error=err))
                    continue
                with guard:
                    job.started, job.deadline = time.monotonic(), deadline
                    running.append(job)
                outcome = self._one(job, deadline, reports)
                with guard:
                    if job.done:  # already reported as timed out: this worker was replaced
                        return
                    job.done = True
                    running.remove(job)
                reports.put(outcome)

        def start_worker() -> None:
            threading.Thread(target=worker, name="aicr-fleet", daemon=True).start()

        for _ in range(min(self.parallel, len(jobs))):
            start_worker()
        left = len(jobs)
        while left:
            try:
                event = reports.get(timeout=self._next_wake(running, guard))
            except queue.Empty:
                for job in self._overdue(running, guard):
                    left -= 1
                    start_worker()  # the overdue one's worker is stuck: the others keep their turn
                    assert job.deadline is not None
                    job.deadline.expire()  # its sockets shut, its plugin killed, if the watchdog has not yet
                    yield Outcome(job.context, error=job.deadline.expired(CLUSTER_CALLS))
                continue
            if isinstance(event, Outcome):
                left -= 1
                if event.error is not None and event.error.code is Code.USAGE:
                    # A bad flag or environment value is the command's usage error, never one cluster's
                    # failure: `error: [USAGE] ...`, exit 2, without a context of its own.
                    raise event.error
            yield event

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

    def _one(self, job: _Job[T], deadline: Deadline, reports: queue.Queue[Any]) -> Outcome[T]:
        def note(message: str) -> None:
            reports.put(Note(job.context, message))

        try:
            with deadline.enforced(CLUSTER_CALLS):
                cluster = self.session(job.context, deadline)
                return Outcome(job.context, value=job.work(Turn(job.context, cluster, note)))
        except AicrError as err:
            return Outcome(job.context, error=err)
        except Exception as err:  # noqa: BLE001 - one cluster's bug is that cluster's error, not the fleet's end
            return Outcome(job.context, error=AicrError(Code.INTERNAL, f"{type(err).__name__}: {err} (a bug)"))


# -- completion ------------------------------------------------------------------------------------

def complete_contexts(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> Any:
    """`--contexts a,b<TAB>`: the context names not yet in the list, after what is typed (with
    --cluster-profiles: the NAMESPACE/NAME of the hub's profiles, as --profile-namespace and
    --profile-selector keep them)."""
    from aicr_core.framework.completion import NO_FILES, NO_SPACE, Candidates, kubeconfig_names

    done, _comma, current = prefix.rpartition(",")
    lead = f"{done}," if done else ""
    typed = {entry.lstrip("!") for entry in done.split(",") if entry}
    negate = "!" if current.startswith("!") else ""
    names: Sequence[str] | Candidates
    if from_profiles(parsed_args):
        from aicr_core.fleet.cluster_profiles import completion_profiles

        names = [profile.member for profile in completion_profiles(parsed_args)]
    else:
        names = kubeconfig_names("contexts")(parsed_args=parsed_args)
    assert not isinstance(names, Candidates)
    words = [f"{lead}{negate}{name}" for name in names
             if name not in typed and f"{negate}{name}".startswith(current)]
    return Candidates(words, NO_SPACE | NO_FILES)


def complete_profile_namespaces(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> Any:
    """`--profile-namespace <TAB>`: the hub's namespaces that hold ClusterProfiles."""
    from aicr_core.fleet.cluster_profiles import complete_namespaces

    return complete_namespaces(prefix, parsed_args)
