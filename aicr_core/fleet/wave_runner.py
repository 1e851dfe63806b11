"""The wave runner (`approve --plan DIGEST --waves FILE`): approve wave by wave, follow, soak, check Ready.

Per wave: approve the plan's open rollout in each of its clusters (the single-cluster approval,
as `approve --plan` does), follow each approved rollout with the watch API until it ends (or
its deadline is a minute past), wait the soak, then require each approved cluster's
ClusterRuntime to be Ready. More failures in a wave than maxFailures stops the fleet: no
approval in any later wave; so does a wave whose clusters were all skipped (it proved nothing),
unless the file marks it `optional`. Running it again resumes: a cluster whose newest rollout to
the plan Succeeded is done, one already approved is followed, not approved again.

Called with values (`approve_in_waves`): a `Fleet` of the waves' members, their assignment to the
waves, the one approval request (built once: aicr_core.domain.write_flags), the plan's digest, the
`Interruption` handed in, a callback that confirms and one that reports progress (`Tally`, with the
wave's name). It yields its events as they happen (`WaveLine`: a line of progress, or a warning)
and, last, its items (`FleetWritten`, each item with `wave`), whose exit code is the command's: 0,
1 when any cluster failed or the fleet stopped, 130 on Ctrl-C and 143 on SIGTERM (what was approved
stays approved). A signal stops the waiting at once, but a write already sent finishes
(aicr_core.framework.interruption; the fan-out keeps that rule). The command line's side (the
stream, the terminal's prompt) is aicr_core.fleet.flags'.
"""
from __future__ import annotations

import signal
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, Union

from aicr_core import clock
from aicr_core.domain.actions import APPROVE
from aicr_core.errors import AicrError, Code
from aicr_core.fleet import fan_out, plan_write
from aicr_core.fleet.fan_out import Turn
from aicr_core.fleet.gathering import one_line
from aicr_core.fleet.write_items import (
    ALREADY_APPROVED,
    FAILED,
    INTERRUPTED,
    REFUSED,
    SKIPPED,
    Confirmation,
    FleetWritten,
    item,
    no_open_rollout,
    outcome_item,
    refusal_item,
    shared_clusters,
    with_server,
)
from aicr_core.framework.interruption import POLL_SECONDS, Interruption

if TYPE_CHECKING:
    from aicr_core.domain import operator_api as api
    from aicr_core.domain.rollout_write import WriteRequest
    from aicr_core.fleet.fan_out import Tally
    from aicr_core.fleet.waves_file import Wave, Waves

SUCCEEDED, NOT_STARTED = "succeeded", "not-started"
# Why a wave whose clusters were all skipped stops the fleet (unless the file marks it optional).
PROVED_NOTHING = "every cluster was skipped, so it proved nothing"
OPTIONAL_HINT = " (none had a rollout to the plan to approve, follow or see succeed; optional: true in the waves " \
                "file lets such a wave pass)"
PAST_DEADLINE = timedelta(minutes=1)  # how long past its spec.deadline a rollout is followed


class WaveLine(NamedTuple):
    """An event of the waves, as it happens: a line of progress (with its time), or a warning (`warning`)."""

    text: str
    warning: bool = False


WaveEvent = Union[WaveLine, FleetWritten]


def approve_in_waves(fleet: fan_out.Fleet, plan: Waves, assignment: list[tuple[Wave, list[str]]],
                     request: WriteRequest, digest: str, *, confirm: Callable[[Confirmation], bool],
                     ask: bool = True, interruption: Interruption | None = None,
                     progress: Callable[[Tally], None] | None = None) -> Iterator[WaveEvent]:
    """The waves of `plan` (their members: `assignment`, aicr_core.fleet.waves_file.assign), run as the
    iterator is read: each event as it happens, then the items (`FleetWritten`, last).

    `fleet` holds the waves' members in the assignment's order; `request` is the approval (a dry run:
    each wave's state, the first wave's approvals tried, nothing written). With `ask` (and no dry run),
    each cluster's state is listed first and `confirm` asked (`Confirmation`, its question); False
    writes nothing ([USAGE] "not confirmed"). `interruption` (a new one when None) stops the waves as a
    signal does; `progress` is told how far each step of a wave has got (`Tally` with the wave's name).
    """
    run = _Run(fleet, plan, assignment, request, digest, confirm, ask, progress,
               interruption or Interruption())
    return run.events()


@dataclass
class _Start:
    """What a cluster's turn at the start of its wave found or did."""

    item: dict[str, Any]
    follow: api.Rollout | None = None   # approved (now or before): to be followed
    warnings: tuple[str, ...] = ()


@dataclass
class _Run:
    selection: fan_out.Fleet
    plan: Waves
    assignment: list[tuple[Wave, list[str]]]
    request: WriteRequest
    digest: str
    confirm: Callable[[Confirmation], bool]
    ask: bool
    report: Callable[[Tally], None] | None  # the progress callback
    stop: Interruption
    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    servers: dict[str, str | None] = field(default_factory=dict)  # an inventory member's HOST:PORT

    @property
    def dry(self) -> bool:
        return self.request.dry_run != "none"

    def events(self) -> Iterator[WaveEvent]:
        for wave, members in self.assignment:
            for context in members:
                self.items[context] = {**item(context, NOT_STARTED), "wave": wave.name}
        stopped = False
        self.servers = {member: self.selection.members.server(member) for member in self.selection.contexts}
        for warning in shared_clusters(self.servers):
            yield WaveLine(warning, warning=True)
        try:
            if self.dry or self.ask:
                yield from self.survey()
                confirmed = self.dry or self.stop.requested or self.confirmed()
                if not confirmed and not self.stop.requested:  # a signal at the prompt: the summary, not USAGE
                    raise AicrError(Code.USAGE, "not confirmed; nothing was written")
            for wave, members in self.assignment:
                if self.stop.requested:
                    break
                failures = yield from self.one_wave(wave, members)
                if self.stop.requested:
                    break
                why = self.stops_after(wave, members, failures)
                if why:
                    yield self.progress(f"wave {wave.name}: {why}: the fleet stops; no later wave is approved"
                                        + (OPTIONAL_HINT if why == PROVED_NOTHING else ""))
                    self.explain_stop(wave, members, why)
                    stopped = True
                    break
                if self.dry:
                    break
        except KeyboardInterrupt:  # no signal taken over (off the main thread), or a third one
            self.stop.request(signal.SIGINT)
        if self.stop.requested:
            yield self.progress(f"interrupted ({self.stop.name}): the waves stop here; approvals already written stay")
        for entry in self.items.values():
            if entry["result"] == "started":
                entry["result"] = INTERRUPTED
        ordered = [with_server(self.items[context], self.selection) for context in self.selection.contexts]
        yield FleetWritten(ordered, self.warnings, stopped=stopped, interruption=self.stop)

    def stops_after(self, wave: Wave, members: list[str], failures: int) -> str:
        """Why the fleet stops after this wave; empty: it goes on."""
        if failures > self.plan.max_failures:
            return f"{failures} failed, more than maxFailures {self.plan.max_failures}"
        if not wave.optional and all(self.items[context]["result"] == SKIPPED for context in members):
            return PROVED_NOTHING
        return ""

    def explain_stop(self, wave: Wave, members: list[str], why: str) -> None:
        """The summary says why the fleet stopped: on the wave's skipped clusters, and on those not started."""
        for context in members:
            entry = self.items[context]
            if entry["result"] == SKIPPED:
                entry["message"] = f"{entry['message'] or 'skipped'}; the fleet stopped here: wave {wave.name}: {why}"
        if self.dry:
            return  # a dry run's later waves keep their state (the survey's words)
        for entry in self.items.values():
            if entry["result"] == NOT_STARTED:
                entry["message"] = f"not started: the fleet stopped at wave {wave.name}: {why}"

    def progress(self, message: str) -> WaveLine:
        return WaveLine(f"{clock.now():%H:%M:%S} {message}")

    def counted(self, events: Iterator[Any], members: list[str], wave: Wave,
                failed: Callable[[fan_out.Outcome[Any]], bool] = fan_out.errored) -> Iterator[Any]:
        """A step's events, with the progress callback told how far the wave's clusters have got."""
        return fan_out.tallied(events, len(members), self.report, failed, wave.name)

    # -- before the first wave: each cluster's state (dry run, or to ask) -----------------------------
    def survey(self) -> Iterator[WaveLine]:
        for wave, members in self.assignment:
            if self.stop.requested:
                return
            yield self.progress(f"wave {wave.name}: {', '.join(self.named(m) for m in members)}")
            picks = self.counted(self.selection.events(lambda turn: plan_write.pick(turn, self.digest), members,
                                                       interruption=self.stop), members, wave)
            for outcome in plan_write.sorted_outcomes(self.selection, picks):
                if outcome.error is not None and outcome.error.code == Code.INTERRUPTED:
                    continue  # left at a signal: still not started
                state = (f"[{outcome.error.code}] {outcome.error.message}" if outcome.error is not None
                         else describe_state(outcome.value))
                yield self.progress(f"wave {wave.name}: {outcome.context}: {state}")
                if wave is self.assignment[0][0]:
                    continue  # the first wave's own turn says what happened there
                if outcome.error is not None and self.dry:  # a dry run ends here: the failure is this cluster's
                    self.settle(outcome.context, FAILED, None, str(outcome.error.code),
                                one_line(outcome.error, outcome.context))
                else:
                    self.items[outcome.context]["message"] = state

    def named(self, member: str) -> str:
        """A member as the survey lists it: with its server where the inventory chose it."""
        server = self.servers.get(member)
        return f"{member} ({server})" if server else member

    def confirmed(self) -> bool:
        clusters = sum(len(members) for _, members in self.assignment)
        return self.confirm(Confirmation([], [], f"{APPROVE.title} the rollouts of plan {self.digest} in "
                                                 f"{clusters} clusters, wave by wave ({len(self.assignment)} waves)?"))

    # -- one wave -------------------------------------------------------------------------------------
    def one_wave(self, wave: Wave, members: list[str]) -> Generator[WaveLine, None, int]:  # returns its failures
        yield self.progress(f"wave {wave.name}: started ({len(members)} cluster{'s' * (len(members) != 1)}: "
                            f"{', '.join(members)})")
        for context in members:
            self.items[context]["result"] = "started"
        followed: dict[str, api.Rollout] = {}
        started = self.selection.events(lambda turn: self.start(turn), members, interruption=self.stop)
        for event in self.counted(started, members, wave, started_badly):
            if isinstance(event, fan_out.Note):
                yield self.progress(f"wave {wave.name}: {event.context}: {event.message}")
                continue
            if event.value is None:
                assert event.error is not None
                if event.error.code == Code.INTERRUPTED:  # left at a signal: interrupted, or its write unanswered
                    entry = outcome_item(event, None, self.selection.reach(event.context))
                    self.settle(event.context, entry["result"], None, entry["code"], entry["message"])
                    if entry["result"] == INTERRUPTED:
                        continue
                    yield self.progress(f"wave {wave.name}: {event.context}: failed: {entry['message']}")
                    continue
                self.settle(event.context, FAILED, None, str(event.error.code), event.error.message)
                yield self.progress(f"wave {wave.name}: {event.context}: failed: [{event.error.code}] "
                                    f"{event.error.message}")
                continue
            start = event.value
            self.warnings += start.warnings
            self.items[event.context].update(start.item, wave=wave.name)
            if start.follow is not None and not self.dry:
                followed[event.context] = start.follow
                self.items[event.context]["result"] = "started"
            elif start.item["result"] == FAILED:
                code = f"[{start.item['code']}] " if start.item["code"] else ""
                yield self.progress(f"wave {wave.name}: {event.context}: failed: {code}{start.item['message']}")
        if followed and not self.stop.requested:
            yield from self.follow(wave, followed)
            ended_well = [c for c in followed if self.items[c]["result"] == "started"]
            if ended_well and not self.stop.requested:
                yield from self.soak(wave)
            if ended_well and not self.stop.requested:
                yield from self.ready(wave, ended_well)
        return sum(1 for context in members if self.items[context]["result"] == FAILED)

    def start(self, turn: Turn) -> _Start:
        """The cluster's newest rollout to the plan decides: done, failed, skipped, follow, or approve now."""
        found = plan_write.pick(turn, self.digest)
        rollout = found.open
        if rollout is None:
            if not found.rollouts:
                return _Start(item(turn.context, SKIPPED, message=no_open_rollout(self.digest)))
            newest = found.rollouts[0]
            if newest.outcome == "Succeeded":
                return _Start(item(turn.context, SUCCEEDED, newest.name, None, f"{newest.name} ended Succeeded"))
            return _Start(item(turn.context, FAILED, newest.name, None,
                               f"{newest.name} ended {newest.outcome or 'with no outcome'} and no newer attempt "
                               "is open (the operator retries with a new rollout)"))
        refusal = plan_write.would_refuse(self.request, rollout)
        if refusal is not None and refusal.code == Code.ALREADY_APPROVED and self.dry:
            return _Start(refusal_item(turn.context, rollout.name, refusal, reach=self.selection.reach(turn.context)))
        if refusal is not None and refusal.code == Code.ALREADY_APPROVED:
            turn.note(f"{rollout.name} already approved: following it")
            return _Start(item(turn.context, "started", rollout.name, None, refusal.message), follow=rollout)
        if refusal is not None:
            entry = refusal_item(turn.context, rollout.name, refusal, reach=self.selection.reach(turn.context))
            return _Start(entry if entry["result"] == SKIPPED else {**entry, "result": FAILED})
        entry, warnings = plan_write.write_one(turn, self.request, rollout.name, self.selection.reach(turn.context))
        if entry["result"] == INTERRUPTED:  # a signal came first: its write was not sent
            return _Start(entry, warnings=warnings)
        if self.dry:
            return _Start(entry, warnings=warnings)
        if entry["result"] == APPROVE.past:
            turn.note(f"approved {rollout.name}")
            return _Start(entry, follow=rollout, warnings=warnings)
        if entry["result"] == ALREADY_APPROVED:
            turn.note(f"{rollout.name} already approved: following it")
            return _Start(entry, follow=rollout, warnings=warnings)
        return _Start(entry if entry["result"] == SKIPPED else {**entry, "result": FAILED}, warnings=warnings)

    def settle(self, context: str, result: str, rollout: str | None, code: str | None, message: str | None) -> None:
        entry = self.items[context]
        entry.update(result=result, code=code, message=message)
        if rollout is not None:
            entry["rollout"] = rollout

    # -- following, soaking, Ready --------------------------------------------------------------------
    def follow(self, wave: Wave, followed: dict[str, api.Rollout]) -> Iterator[WaveLine]:
        def seconds(context: str) -> float | None:
            deadline = followed[context].deadline
            if deadline is None:
                return float("inf")
            return max(0.001, (deadline + PAST_DEADLINE - clock.now()).total_seconds())

        following = self.selection.events(lambda turn: follow_rollout(turn, followed[turn.context]),
                                          list(followed), seconds, interruption=self.stop)
        for event in self.counted(following, list(followed), wave, followed_badly):
            if isinstance(event, fan_out.Note):
                yield self.progress(f"wave {wave.name}: {event.context}: {event.message}")
                continue
            name = followed[event.context].name
            if event.value is None:
                assert event.error is not None
                if event.error.code == Code.INTERRUPTED:
                    continue  # left at a signal: still "started", so interrupted in the summary
                why = (f"{name} did not end within a minute past its deadline" if event.error.code == Code.TIMEOUT
                       else f"following {name}: {event.error.message}")
                self.settle(event.context, FAILED, name, str(event.error.code), why)
                yield self.progress(f"wave {wave.name}: {event.context}: {why}")
                continue
            yield self.progress(f"wave {wave.name}: {event.context}: {name} ended {event.value}")
            if event.value != "Succeeded":
                self.settle(event.context, FAILED, name, None, f"{name} ended {event.value}")

    def soak(self, wave: Wave) -> Iterator[WaveLine]:
        if self.plan.soak_seconds <= 0:
            return
        yield self.progress(f"wave {wave.name}: soak started ({self.plan.soak_text})")
        ends = time.monotonic() + self.plan.soak_seconds
        while not self.stop.requested and (left := ends - time.monotonic()) > 0:
            time.sleep(min(left, POLL_SECONDS))  # a signal is only recorded: look at it often
        if not self.stop.requested:
            yield self.progress(f"wave {wave.name}: soak done")

    def ready(self, wave: Wave, contexts: list[str]) -> Iterator[WaveLine]:
        checks = self.counted(self.selection.events(runtime_ready, contexts, interruption=self.stop), contexts, wave,
                              not_ready)
        for outcome in plan_write.sorted_outcomes(self.selection, checks):
            name = self.items[outcome.context].get("rollout")
            if outcome.error is not None and outcome.error.code == Code.INTERRUPTED:
                continue  # left at a signal: interrupted in the summary
            if outcome.error is not None:
                why = f"ClusterRuntime not checked: {outcome.error.message}"
                self.settle(outcome.context, FAILED, None, str(outcome.error.code), why)
            elif outcome.value:
                why = outcome.value
                self.settle(outcome.context, FAILED, None, None, why)
            else:
                self.settle(outcome.context, SUCCEEDED, None, None, f"{name} ended Succeeded; ClusterRuntime Ready")
                continue
            yield self.progress(f"wave {wave.name}: {outcome.context}: failed: {why}")


def started_badly(outcome: fan_out.Outcome[_Start]) -> bool:
    """A wave's start that failed, for the progress: an error, or a cluster refused or failed."""
    return outcome.value is None or outcome.value.item["result"] in (REFUSED, FAILED)


def followed_badly(outcome: fan_out.Outcome[str]) -> bool:
    return outcome.value != "Succeeded"


def not_ready(outcome: fan_out.Outcome[str]) -> bool:
    return outcome.value != ""


def follow_rollout(turn: Turn, rollout: api.Rollout) -> str:
    """Watch the rollout until it ends; its outcome. Progress says when it waits for an acknowledgement."""
    from aicr_core.domain import operator_api as api
    from aicr_core.domain.rollout_documents import waits_for_person
    from aicr_core.domain.rollouts import parse_rollout
    from aicr_core.session.watch import follow

    told: set[str] = set()
    for obj in follow(turn.session, api.rollouts_path(), rollout.name, f"rollout {rollout.name}"):
        current = parse_rollout(obj, records=False)
        if current.ended:
            return current.outcome or "with no outcome"
        if current.awaiting_acknowledgement and waits_for_person(current) \
                and current.awaiting_release not in told:
            told.add(current.awaiting_release)
            turn.note(f"{rollout.name} waits for an acknowledgement of {current.awaiting_release} "
                      "(acknowledge it meanwhile; following on)")
    raise AicrError(Code.UNAVAILABLE, f"the watch of rollout {rollout.name} ended")  # follow never ends by itself


def runtime_ready(turn: Turn) -> str:
    """Empty when the ClusterRuntime's Ready condition is True; else why not."""
    from aicr_core.domain import operator_api as api
    from aicr_core.domain.rollouts import get_object

    runtime = get_object(turn.session, api.runtime_path(), f"clusterruntime {api.RUNTIME_NAME}")
    ready = api.runtime_ready_condition(runtime)
    if ready is not None and ready.status == "True":
        return ""
    if ready is None:
        return f"ClusterRuntime {api.RUNTIME_NAME} reports no Ready condition after the soak"
    detail = ": ".join(text for text in (ready.reason, ready.message) if text)
    return (f"ClusterRuntime {api.RUNTIME_NAME} is not Ready after the soak (Ready={ready.status}"
            + (f", {detail})" if detail else ")"))


def describe_state(found: Any) -> str:
    """A cluster's state for the plan, in words (the survey before the first wave)."""
    from aicr_core.domain.rollout_documents import waits_for_person

    if found is None or not found.rollouts:
        return "no rollout to the plan"
    rollout = found.open
    if rollout is None:
        newest = found.rollouts[0]
        return f"{newest.name} ended {newest.outcome or 'with no outcome'}"
    if rollout.approval is not None:
        return f"{rollout.name} {rollout.phase}, approved by {rollout.approval.user}"
    if waits_for_person(rollout):
        return f"{rollout.name} {rollout.phase}, waits for an approval"
    return f"{rollout.name} {rollout.phase}" + ("" if rollout.approval_required else ", needs no approval")
