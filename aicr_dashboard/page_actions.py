"""The writes, the Check and a rollout's description, each run on a worker thread as the CLI runs them.

Each has a session of its own (the cluster's watch session under a deadline of its own:
`KubeSession.with_deadline`, the connections kept, a count of writes of its own) and goes through
the core exactly as the command does:

- a write (approve, revoke, acknowledge): the form as the CLI's argv and flags (the core's
  `aicr_core.framework.write_form`: the write command's own parser, a site's declared inputs among them), the
  request `write_flags.write_request` makes of them, and `rollout_write.write` (who-am-I, the read,
  the refusals, the policies, the one conditional write); what comes back is the CLI's own text:
  the success line of the result's layout (found by entry point, `aicr.layouts`, as the text
  renderer finds it), or `error: [CODE] message` with its detail lines as the CLI prints them;
- the Check: `policy check`'s path (`rollout_write.decide_on_cluster`), nothing written;
- a description: `rollout_description.describe_rollout`, describe's document.

Text is made safe as the CLI makes it (`aicr_core.framework.terminal.safe`); the pages escape it again
as HTML.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aicr_core.errors import AicrError, Code
from aicr_core.framework.terminal import safe

if TYPE_CHECKING:
    from aicr_core.session.kube import KubeSession
    from aicr_dashboard.fleet_model import FleetModel

WRITES = ("approve", "revoke", "acknowledge")
STOP_WAIT_SECONDS = 120.0  # the longest the stop waits for writes on the wire (each is bounded by its deadline)


class InFlight:
    """The writes being made, for the stop: once it is asked no write begins, and those on the wire are
    waited for (each bounded by its own deadline), their outcome kept to be printed."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self.count = 0
        self.stopping = False
        self.outcomes: list[list[str]] = []

    def begin(self) -> bool:
        with self._lock:
            if self.stopping:
                return False
            self.count += 1
            return True

    def end(self, lines: list[str]) -> None:
        with self._lock:
            self.count -= 1
            if self.stopping:
                self.outcomes.append(lines)
            self._lock.notify_all()

    def stop(self) -> None:
        with self._lock:
            self.stopping = True

    def wait(self, seconds: float = STOP_WAIT_SECONDS) -> list[list[str]]:
        """Until no write is on the wire (at most `seconds`): the outcomes of those that finished during the stop."""
        with self._lock:
            self._lock.wait_for(lambda: self.count == 0, seconds)
            return list(self.outcomes)


IN_FLIGHT = InFlight()


@dataclass
class Done:
    """What a write or a Check gave: the CLI's lines, whether it went through, the argv it stands for."""

    lines: list[str]
    ok: bool
    argv: list[str] = field(default_factory=list)
    decision: dict[str, Any] | None = None  # the Check's PolicyDecision document


def error_lines(err: AicrError) -> list[str]:
    """`error: [CODE] message` and its detail lines, as the CLI prints them (aicr_core.framework.app)."""
    return [f"error: [{err.code}] {safe(err.message, allow_newlines=False)}",
            *(f"  {safe(line, allow_newlines=False)}" for line in err.details)]


def result_lines(kind: str, data: dict[str, Any], warnings: Sequence[str] = ()) -> list[str]:
    """The text the CLI prints of a result of `kind`: its layout, found by entry point as the text renderer finds it."""
    from aicr_core.framework.output_options import strip_marks
    from aicr_core.framework.text_layout import generic, registered_layout

    layout = registered_layout(kind)
    lines = layout(data) if layout is not None else generic(data)
    # As `--color never` prints them: the colour marks taken off (the page has no terminal colours).
    return [*(f"warning: {safe(w, allow_newlines=False)}" for w in warnings), *(strip_marks(line) for line in lines)]


def session_of(model: FleetModel, context: str) -> KubeSession:
    """The cluster's session under a deadline of its own (the command's: --request-timeout, else 30 s)."""
    from aicr_core.session.deadline import Deadline

    line = model.line(context)
    if line is None or line.session is None:
        raise AicrError(Code.UNAVAILABLE, f"context {context}: not connected yet")
    return line.session.with_deadline(Deadline(name=f"context {context}"))


def request_of(action_name: str, rollout: str, form: Mapping[str, Sequence[str]], namespace: str,
               checking: bool = False) -> tuple[list[str], Any]:
    """The argv the form stands for and the WriteRequest the CLI builds of it (`write_flags.write_request`)."""
    from aicr_core.domain.actions import ACTIONS
    from aicr_core.domain.write_flags import write_request
    from aicr_core.framework.write_form import flags_from_form

    argv, flags = flags_from_form(action_name, rollout, form)
    flags = {**flags, "operator_namespace": namespace}
    words = f"policy check --action {action_name}" if checking else None
    return argv, write_request(flags, ACTIONS[action_name], rollout, checking=words)


def run_write(model: FleetModel, context: str, rollout: str, action_name: str,
              form: Mapping[str, Sequence[str]], namespace: str) -> Done:
    from aicr_core.domain.actions import ACTIONS
    from aicr_core.domain.rollout_write import write

    if not IN_FLIGHT.begin():
        return Done(error_lines(AicrError(Code.INTERRUPTED, "the dashboard is stopping; nothing was written")), False)
    done = Done([], False)
    try:
        argv, request = request_of(action_name, rollout, form, namespace)
        done.argv = argv
        written = write(session_of(model, context), request)
        done.lines, done.ok = result_lines(ACTIONS[action_name].result_kind, written.data, written.warnings), True
    except AicrError as err:
        done.lines = error_lines(err)
    finally:
        IN_FLIGHT.end(done.lines or ["error: [INTERNAL] the write ended without an outcome"])
    return done


def run_check(model: FleetModel, context: str, rollout: str, action_name: str,
              form: Mapping[str, Sequence[str]], namespace: str) -> Done:
    """`policy check ROLLOUT --action ACTION` with the form's inputs: each policy's verdict, nothing written."""
    from aicr_core.domain.rollout_write import decide_on_cluster

    argv: list[str] = []
    try:
        argv, request = request_of(action_name, rollout, form, namespace, checking=True)
        decided = decide_on_cluster(session_of(model, context), request)
    except AicrError as err:
        return Done(error_lines(err), False, argv)
    decision = decided.decision
    if decision.own_refusal is not None:  # as `policy check` on one cluster: the command's own refusal, raised
        return Done(error_lines(decision.own_refusal), False, argv)
    record = decision.record()
    data = {"rollout": decided.rollout.name,
            "user": {"username": decided.me.username, "groups": list(decided.me.groups)},
            "withoutReason": request.action.takes_reason and request.reason is None, **record}
    return Done(result_lines("PolicyDecision", data), bool(record["allowed"]), argv, data)


class Reports:
    """The verified reports by (context, digest), read once: the digest a rollout records never changes, and
    a report that matches it never will either (one that is missing or unreadable is read again)."""

    def __init__(self) -> None:
        self._verified: dict[tuple[str, str], Any] = {}

    def read(self, session: KubeSession, context: str, namespace: str, digest: str | None) -> Any:
        from aicr_core.domain import rollouts

        key = (context, digest or "")
        if key in self._verified:
            return self._verified[key]
        report = rollouts.read_report(session, namespace, digest)
        if report.status == "verified":
            self._verified[key] = report
        return report


REPORTS = Reports()


def describe(model: FleetModel, context: str, rollout: str, namespace: str) -> dict[str, Any]:
    """describe's document of the rollout, as `kubectl aicr describe NAME --context CONTEXT -o json` prints it:
    made from the object the watch keeps and its report (read once), its recent Events read now (one
    LIST); a rollout the watch has not seen is read as describe reads it (`describe_rollout`)."""
    from aicr_core.domain import rollout_events, rollouts
    from aicr_core.domain.rollout_description import describe_rollout
    from aicr_core.domain.rollout_documents import assessment_document
    from aicr_core.domain.rollout_documents import describe as document

    session = session_of(model, context)
    obj = model.object_of(context, rollout)
    if obj is None:
        return {"kind": "RolloutDescription", **describe_rollout(session, rollout, namespace)}
    parsed = rollouts.parse_rollout(obj)
    report = REPORTS.read(session, context, namespace, parsed.assessment_digest)
    description = document(parsed, assessment_document(report))
    description["events"] = rollout_events.read_events(session, rollout)
    return {"kind": "RolloutDescription", **description}
