"""The RuntimeRollout: its phases, the values it holds, and the parse of the raw object."""


from collections import Counter
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any, NamedTuple

from aicr_core.domain.operator_api.object_reader import ObjectReader, required_time
from aicr_core.domain.operator_api.records import (
    ANNOTATION_DECISIONS,
    ANNOTATION_OVERRIDES,
    RECORD_ANNOTATIONS,
    Override,
    PolicyDecision,
    parse_override,
    parse_policy_decision,
    record_entries,
)
from aicr_core.errors import AicrError

PHASE_AWAITING_APPROVAL = "AwaitingApproval"
PHASE_AWAITING_ACKNOWLEDGEMENT = "AwaitingAcknowledgement"
PHASE_ENDED = "Ended"
PHASES = ("Pending", PHASE_AWAITING_APPROVAL, "Progressing", PHASE_AWAITING_ACKNOWLEDGEMENT, "Validating",
          PHASE_ENDED)


class Approval(NamedTuple):
    user: str
    expires: datetime
    reason: str


class Revocation(NamedTuple):
    user: str
    time: datetime
    reason: str


class Acknowledgement(NamedTuple):
    release: str
    user: str
    time: datetime


class Step(NamedTuple):
    """A step of the rollout: what the spec plans, with the state the status reports."""

    release: str
    operation: str
    verdict: str
    changes_crds: bool
    state: str = "Pending"
    message: str = ""


class Condition(NamedTuple):
    """A `metav1.Condition` of the rollout's status (`Ready`, `Stalled`, ...), as the operator reports it."""

    type: str
    status: str
    reason: str
    message: str
    last_transition: datetime | None


class RecordedStep(NamedTuple):
    id: str
    description: str


class TransitionRecord(NamedTuple):
    release: str
    summary: str
    precondition: str
    before_apply: tuple[RecordedStep, ...]
    after_apply: tuple[RecordedStep, ...]


class Rollout(NamedTuple):
    name: str
    resource_version: str
    runtime_name: str
    runtime_uid: str
    from_digest: str | None
    to_digest: str
    deadline: datetime | None
    approval_required: bool
    inventory_releases: int
    inventory_digest: str
    assessment_digest: str | None
    steps: tuple[Step, ...]
    records: tuple[TransitionRecord, ...]
    approval: Approval | None
    revocation: Revocation | None
    acknowledgements: tuple[Acknowledgement, ...]
    phase: str
    outcome: str
    message: str
    awaiting_release: str
    # The acknowledgement entries exactly as stored: a merge patch replaces the
    # whole list, and the CRD rule requires existing entries to stay unchanged.
    stored_acknowledgements: tuple[Mapping[str, Any], ...] = ()
    created: datetime | None = None  # metadata.creationTimestamp
    # Overrides: those of the annotation, after any a 0.1.0 plugin wrote into `spec.overrides` (a field
    # only an extended copy of the CRD had); `stored_overrides` are the annotation's entries as stored.
    overrides: tuple[Override, ...] = ()
    stored_overrides: tuple[Mapping[str, Any], ...] = ()
    annotations: Mapping[str, str] = {}  # this plugin's record annotations only (RECORD_ANNOTATIONS), as stored
    policy_decisions: tuple[PolicyDecision, ...] = ()
    stored_policy_decisions: tuple[Mapping[str, Any], ...] = ()
    conditions: tuple[Condition, ...] = ()  # status.conditions; parsed with the records only (describe's)

    @property
    def ended(self) -> bool:
        return self.phase == PHASE_ENDED

    @property
    def awaiting_acknowledgement(self) -> bool:
        return self.phase == PHASE_AWAITING_ACKNOWLEDGEMENT


def rollout_from_object(obj: Mapping[str, Any], actions: Collection[str], *, records: bool = True) -> Rollout:
    """The rollout an object holds; INVALID_OBJECT when a field has another type or a required time is missing.

    `actions`: the names a record's `action` may hold, which this package does not know: the domain's
    `rollouts.parse_rollout`, the one parse every caller uses, hands it the Action table's. A record
    annotation with an entry naming another is left out, as a malformed one is. `records=False` leaves
    the transition records and conditions out (a listing shows none of them, and they are most of the
    parsing)."""
    r = ObjectReader(obj, f"runtimerollout {ObjectReader(obj, '').text('metadata.name')}")
    spec = r.sub("spec", r.what)
    status = r.sub("status", r.what)
    # A release may appear more than once (an Upgrade and a later Verify of gpu-operator): the n-th
    # step of a release in spec.steps has the state of the n-th entry of that release in status.steps.
    # When both lists hold the same releases in the same order, that is simply position by position.
    states: dict[str, list[tuple[str, str]]] = {}
    for item in status.items("steps"):
        s = r.sub(item, f"{r.what}: status.steps[]")
        states.setdefault(s.text("release"), []).append((s.text("state", "Pending"), s.text("message")))
    steps, seen = [], Counter[str]()
    for item in spec.items("steps"):
        s = r.sub(item, f"{r.what}: spec.steps[]")
        release = s.text("release")
        reported = states.get(release, [])
        state, message = reported[seen[release]] if seen[release] < len(reported) else ("Pending", "")
        seen[release] += 1
        steps.append(Step(release, s.text("operation"), s.text("verdict"), s.flag("changesCRDs"), state, message))
    approval = None
    if spec.mapping("approval"):
        a = spec.sub("approval", f"{r.what}: spec.approval")
        approval = Approval(a.text("user"), required_time(a, "expires"), a.text("reason"))
    revocation = None
    if spec.mapping("revocation"):
        v = spec.sub("revocation", f"{r.what}: spec.revocation")
        revocation = Revocation(v.text("user"), required_time(v, "time"), v.text("reason"))
    acks = []
    for item in spec.items("acknowledgements"):
        k = r.sub(item, f"{r.what}: spec.acknowledgements[]")
        acks.append(Acknowledgement(k.text("release"), k.text("user"), required_time(k, "time")))
    overrides = []
    for item in spec.items("overrides"):  # 0.1.0's record, on a cluster whose CRD had that field
        o = r.sub(item, f"{r.what}: spec.overrides[]")
        names = tuple(n for n in o.items("policies") if isinstance(n, str))
        overrides.append(Override(o.text("user"), o.text("action"), names, required_time(o, "time")))
    raw_annotations = r.mapping("metadata.annotations")
    annotations = {k: text for k in RECORD_ANNOTATIONS if isinstance(text := raw_annotations.get(k), str)}
    try:  # a record anyone may have edited (without the webhook) must not make the rollout unreadable
        stored_overrides = record_entries(annotations.get(ANNOTATION_OVERRIDES), ANNOTATION_OVERRIDES)
        overrides += [parse_override(e, actions) for e in stored_overrides]
    except AicrError:
        stored_overrides = ()
    try:
        stored_decisions = record_entries(annotations.get(ANNOTATION_DECISIONS), ANNOTATION_DECISIONS)
        decisions = tuple(parse_policy_decision(e, actions) for e in stored_decisions)
    except AicrError:
        stored_decisions, decisions = (), ()
    return Rollout(
        name=r.text("metadata.name"),
        resource_version=r.text("metadata.resourceVersion"),
        runtime_name=spec.text("runtime.name"),
        runtime_uid=spec.text("runtime.uid"),
        from_digest=spec.opt_text("from.digest"),
        to_digest=spec.text("to.digest"),
        deadline=spec.time("deadline"),
        approval_required=spec.flag("approvalRequired"),
        inventory_releases=spec.integer("startingInventory.releases"),
        inventory_digest=spec.text("startingInventory.digest"),
        assessment_digest=spec.opt_text("assessment.digest"),
        steps=tuple(steps),
        records=tuple(_parse_record(r.sub(item, f"{r.what}: spec.records[]"))
                      for item in spec.items("records")) if records else (),
        approval=approval,
        revocation=revocation,
        acknowledgements=tuple(acks),
        phase=status.text("phase", "Pending"),
        outcome=status.text("outcome"),
        message=status.text("message"),
        awaiting_release=status.text("awaitingRelease"),
        stored_acknowledgements=tuple(spec.items("acknowledgements")),
        created=r.time("metadata.creationTimestamp"),
        overrides=tuple(overrides),
        stored_overrides=stored_overrides,
        annotations=annotations,
        policy_decisions=decisions,
        stored_policy_decisions=stored_decisions,
        conditions=tuple(_parse_condition(r.sub(item, f"{r.what}: status.conditions[]"))
                         for item in status.items("conditions")) if records else (),
    )


def _parse_condition(c: ObjectReader) -> Condition:
    return Condition(c.text("type"), c.text("status"), c.text("reason"), c.text("message"),
                     c.time("lastTransitionTime"))


def _parse_record(r: ObjectReader) -> TransitionRecord:
    def steps(path: str) -> tuple[RecordedStep, ...]:
        return tuple(RecordedStep(s.text("id"), s.text("description"))
                     for s in (r.sub(item, f"{r.what}.{path}[]") for item in r.items(path)))
    return TransitionRecord(r.text("release"), r.text("summary"), r.text("precondition"),
                            steps("beforeApply"), steps("afterApply"))
