"""The wave runner (`approve --plan DIGEST --waves FILE`): approve wave by wave, follow, soak, check Ready.

Per wave: approve the plan's open rollout in each of its clusters (the single-cluster approval,
as `approve --plan` does), follow each approved rollout with the watch API until it ends (or
its deadline is a minute past), wait the soak, then require each approved cluster's
ClusterRuntime to be Ready. More failures in a wave than maxFailures stops the fleet: no
approval in any later wave; so does a wave whose clusters were all skipped (it proved nothing),
unless the file marks it `optional`. Running it again resumes: a cluster whose newest rollout to
the plan Succeeded is done, one already approved is followed, not approved again.

Progress goes to stderr as it happens (the stream's Progress lines); the summary (FleetWrite,
each item with `wave`) is the stream's last result, and its exit code the command's: 0, 1 when
any cluster failed or the fleet stopped, 130 on Ctrl-C and 143 on SIGTERM (what was approved
stays approved). A signal stops the waiting at once, but a write already sent finishes
(aicr_core.framework.interruption; the fan-out keeps that rule).
"""
from __future__ import annotations

import argparse
import signal
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Union

from aicr_core import clock
from aicr_core.domain.actions import APPROVE
from aicr_core.errors import EXIT_INTERRUPTED, AicrError, Code
from aicr_core.fleet import fan_out, plan_write
from aicr_core.fleet.fan_out import Turn
from aicr_core.fleet.gathering import one_line
from aicr_core.fleet.plan_write import ALREADY_APPROVED, FAILED, INTERRUPTED, SKIPPED, item
from aicr_core.framework import interruption
from aicr_core.framework.result import Progress, Result, Stream

if TYPE_CHECKING:
    from aicr_core.domain import operator_api as api
    from aicr_core.fleet.waves_file import Wave, Waves
    from aicr_core.framework.command import AicrCommand

SUCCEEDED, NOT_STARTED = "succeeded", "not-started"
# Why a wave whose clusters were all skipped stops the fleet (unless the file marks it optional).
PROVED_NOTHING = "every cluster was skipped, so it proved nothing"
OPTIONAL_HINT = " (none had a rollout to the plan to approve, follow or see succeed; optional: true in the waves " \
                "file lets such a wave pass)"
PAST_DEADLINE = timedelta(minutes=1)  # how long past its spec.deadline a rollout is followed


def approve_in_waves(command: AicrCommand, args: argparse.Namespace) -> Stream:
    """Everything that can be refused is refused here, before any call; the waves run as the stream is read."""
    from aicr_core.fleet import sources, waves_file

    plan = waves_file.load(args.waves)
    source = sources.chosen(args)
    waves_file.check_selectors(plan, source.LABELLED, args.waves)
    plan_write.check_inputs(args, APPROVE)
    plan_write.check_confirmation(args, APPROVE)
    members = source.members(args)  # a hub is read here (a call): after every check that needs none
    assignment = waves_file.assign(plan, members.names, members.labels, kind=source.KIND, among=members.among)
    contexts = [context for _, members_of_wave in assignment for context in members_of_wave]
    run = _Run(command, args, plan, assignment, fan_out.Fleet.from_args(args, contexts, members))
    return Stream(run.events())


@dataclass
class _Start:
    """What a cluster's turn at the start of its wave found or did."""

    item: dict[str, Any]
    follow: api.Rollout | None = None   # approved (now or before): to be followed
    warnings: tuple[str, ...] = ()


@dataclass
class _Run:
    command: AicrCommand
    args: argparse.Namespace
    plan: Waves
    assignment: list[tuple[Wave, list[str]]]
    selection: fan_out.Fleet
    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    stop: interruption.Interruption = field(default_factory=interruption.Interruption)
    servers: dict[str, str | None] = field(default_factory=dict)  # an inventory member's HOST:PORT

    @property
    def dry(self) -> bool:
        return plan_write.dry_run(self.args) != "none"

    def events(self) -> Iterator[Union[Result, Progress]]:
        with interruption.deferred() as self.stop:  # a signal is recorded; the waves stop at their next step
            yield from self.waves()

    def waves(self) -> Iterator[Union[Result, Progress]]:
        for wave, members in self.assignment:
            for context in members:
                self.items[context] = {**item(context, NOT_STARTED), "wave": wave.name}
        stopped, exit_code = False, 0
        self.servers = {member: self.selection.members.server(member) for member in self.selection.contexts}
        plan_write.warn_shared(self.command, self.servers)
        try:
            if self.dry or (not self.args.yes and plan_write.interactive()):
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
            self.stop.signals.append(signal.SIGINT)
        if self.stop.requested:
            for entry in self.items.values():
                if entry["result"] == "started":
                    entry["result"] = INTERRUPTED
            yield self.progress(f"interrupted ({self.stop.name}): the waves stop here; approvals already written stay")
            exit_code = self.stop.exit_code or EXIT_INTERRUPTED
        for entry in self.items.values():
            if entry["result"] == "started":
                entry["result"] = INTERRUPTED
        ordered = [plan_write.with_server(self.items[context], self.selection) for context in self.selection.contexts]
        result = plan_write.fleet_result(self.command, ordered, self.warnings, stopped=stopped)
        if exit_code:
            result = Result(result.kind, result.data, exit_code, result.names, result.warnings)
        elif any(i["result"] == FAILED for i in ordered):
            result = Result(result.kind, result.data, 1, result.names, result.warnings)
        yield result

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

    def progress(self, message: str) -> Progress:
        return Progress(f"{clock.now():%H:%M:%S} {message}")

    # -- before the first wave: each cluster's state (dry run, or to ask) -----------------------------
    def survey(self) -> Iterator[Progress]:
        for wave, members in self.assignment:
            if self.stop.requested:
                return
            yield self.progress(f"wave {wave.name}: {', '.join(self.named(m) for m in members)}")
            for outcome in self.selection.run(lambda turn: plan_write.pick(turn, self.args.plan), members):
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
        return plan_write.confirm(self.command, f"{APPROVE.title} the rollouts of plan {self.args.plan} in "
                                                  f"{clusters} clusters, wave by wave ({len(self.assignment)} waves)?",
                                    self.stop)

    # -- one wave -------------------------------------------------------------------------------------
    def one_wave(self, wave: Wave, members: list[str]) -> Generator[Progress, None, int]:  # returns its failures
        yield self.progress(f"wave {wave.name}: started ({len(members)} cluster{'s' * (len(members) != 1)}: "
                            f"{', '.join(members)})")
        for context in members:
            self.items[context]["result"] = "started"
        followed: dict[str, api.Rollout] = {}
        for event in self.selection.events(lambda turn: self.start(turn), members):
            if isinstance(event, fan_out.Note):
                yield self.progress(f"wave {wave.name}: {event.context}: {event.message}")
                continue
            if event.value is None:
                assert event.error is not None
                if event.error.code == Code.INTERRUPTED:  # left at a signal: interrupted, or its write unanswered
                    entry = plan_write.outcome_item(event, None, plan_write.reach_of(self.args, event.context))
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
        found = plan_write.pick(turn, self.args.plan)
        rollout = found.open
        if rollout is None:
            if not found.rollouts:
                return _Start(item(turn.context, SKIPPED, message=plan_write.no_open_rollout(self.args.plan)))
            newest = found.rollouts[0]
            if newest.outcome == "Succeeded":
                return _Start(item(turn.context, SUCCEEDED, newest.name, None, f"{newest.name} ended Succeeded"))
            return _Start(item(turn.context, FAILED, newest.name, None,
                               f"{newest.name} ended {newest.outcome or 'with no outcome'} and no newer attempt "
                               "is open (the operator retries with a new rollout)"))
        refusal = plan_write.would_refuse(APPROVE, self.args, rollout)
        if refusal is not None and refusal.code == Code.ALREADY_APPROVED and self.dry:
            return _Start(plan_write.refusal_item(turn.context, rollout.name, refusal,
                                                  reach=plan_write.reach_of(self.args, turn.context)))
        if refusal is not None and refusal.code == Code.ALREADY_APPROVED:
            turn.note(f"{rollout.name} already approved: following it")
            return _Start(item(turn.context, "started", rollout.name, None, refusal.message), follow=rollout)
        if refusal is not None:
            entry = plan_write.refusal_item(turn.context, rollout.name, refusal,
                                            reach=plan_write.reach_of(self.args, turn.context))
            return _Start(entry if entry["result"] == SKIPPED else {**entry, "result": FAILED})
        entry, warnings = plan_write.write_one(self.command, self.args, APPROVE, turn, rollout.name)
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
    def follow(self, wave: Wave, followed: dict[str, api.Rollout]) -> Iterator[Progress]:
        def seconds(context: str) -> float | None:
            deadline = followed[context].deadline
            if deadline is None:
                return float("inf")
            return max(0.001, (deadline + PAST_DEADLINE - clock.now()).total_seconds())

        for event in self.selection.events(lambda turn: follow_rollout(turn, followed[turn.context]),
                                           list(followed), seconds):
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

    def soak(self, wave: Wave) -> Iterator[Progress]:
        if self.plan.soak_seconds <= 0:
            return
        yield self.progress(f"wave {wave.name}: soak started ({self.plan.soak_text})")
        ends = time.monotonic() + self.plan.soak_seconds
        while not self.stop.requested and (left := ends - time.monotonic()) > 0:
            time.sleep(min(left, interruption.POLL_SECONDS))  # a signal is only recorded: look at it often
        if not self.stop.requested:
            yield self.progress(f"wave {wave.name}: soak done")

    def ready(self, wave: Wave, contexts: list[str]) -> Iterator[Progress]:
        for outcome in self.selection.run(runtime_ready, contexts):
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
