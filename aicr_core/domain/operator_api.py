"""The AICR operator API (operator.aicr.run/v1alpha1), as docs/operator-api.md fixes it.

This is the only module that spells a field name, a label, an annotation or an
API path of the operator. It turns raw objects (JSON dicts) into typed values
and domain writes into patches; if the operator renames a field, this file
changes and nothing else does. It does not talk to the API server.
"""


import hashlib
import json
import re
from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from datetime import datetime
from typing import Any, NamedTuple

from aicr_core.clock import format_time, parse_time
from aicr_core.errors import AicrError, Code, shown
from aicr_core.session import bounded_json

GROUP = "operator.aicr.run"
VERSION = "v1alpha1"
RUNTIME_NAME = "cluster"
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
PLAN_CONFIGMAP = re.compile(r"^aicr-plan-([0-9a-f]{16})$")

PHASE_AWAITING_APPROVAL = "AwaitingApproval"
PHASE_AWAITING_ACKNOWLEDGEMENT = "AwaitingAcknowledgement"
PHASE_ENDED = "Ended"
PHASES = ("Pending", PHASE_AWAITING_APPROVAL, "Progressing", PHASE_AWAITING_ACKNOWLEDGEMENT, "Validating",
          PHASE_ENDED)

ROLLOUTS = "runtimerollouts"
ROLLOUT_RESOURCE = f"runtimerollout.{GROUP}"  # how kubectl names the kind: `-o name` prints <this>/<name>
LABEL_ROLE = f"{GROUP}/role"
ASSESSMENT_SELECTOR = f"{LABEL_ROLE}=assessment"
PLAN_SELECTOR = f"{LABEL_ROLE}=plan"

ANNOTATION_DIGEST = f"{GROUP}/digest"
ANNOTATION_SOURCE = f"{GROUP}/source"
SOURCE_APPLICATIONS = "applications"

# This plugin's records on a rollout. The operator's API has no field for them, and a tool must
# not extend an API it does not own: they are annotations, each one JSON list that only grows
# (the admission webhook enforces that; without it they are best effort, see docs/policies.md).
ANNOTATION_OVERRIDES = "aicr.run/overrides"
ANNOTATION_DECISIONS = "aicr.run/policy-decisions"  # which policy file decided each approval, revocation, ack
RECORD_ANNOTATIONS = (ANNOTATION_OVERRIDES, ANNOTATION_DECISIONS)
# Where the cluster's policy file lives: an annotation of ours on the ClusterRuntime, set by whoever may
# annotate it (the operator and cluster admins), naming the namespace (docs/policies.md).
ANNOTATION_POLICY_NAMESPACE = "aicr.run/policy-namespace"
DEFAULT_OPERATOR_NAMESPACE = "aicr-system"  # the operator's own namespace: its reports, plans and policy file
MAX_RECORD_ENTRIES = 200  # far above what a rollout sees (one approval, one revocation, 64 acknowledgements)


# -- paths -------------------------------------------------------------------------

def group_version_path() -> str:
    """The discovery document of operator.aicr.run/v1alpha1: which resources the server serves."""
    return f"/apis/{GROUP}/{VERSION}"


def rollouts_path() -> str:
    return f"/apis/{GROUP}/{VERSION}/{ROLLOUTS}"


def rollout_path(name: str) -> str:
    return f"{rollouts_path()}/{name}"


def rollout_reference(name: str) -> str:
    return f"{ROLLOUT_RESOURCE}/{name}"


def configmaps_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps"


def runtime_path() -> str:
    return f"/apis/{GROUP}/{VERSION}/clusterruntimes/{RUNTIME_NAME}"


def configmap_path(namespace: str, name: str) -> str:
    return f"{configmaps_path(namespace)}/{name}"


def metadata_name(obj: Mapping[str, Any]) -> str:
    """An object's metadata.name as read (INVALID_OBJECT when it is not a string)."""
    return _Reader(obj, "object").text("metadata.name")


def serves_rollouts(discovery: Mapping[str, Any]) -> bool:
    """Whether a group-version discovery document (APIResourceList) lists runtimerollouts."""
    resources = _Reader(discovery, "discovery document")._raw("resources")
    return isinstance(resources, list) and any(
        isinstance(r, Mapping) and r.get("name") == ROLLOUTS for r in resources)


def approver_access(rollout_name: str) -> dict[str, str]:
    """The permission the admission policy checks before an approval, revocation or acknowledgement
    (for a SelfSubjectAccessReview: `KubeSession.can_i(**approver_access(name))`)."""
    return {"verb": "update", "group": GROUP, "resource": ROLLOUTS, "subresource": "approve",
            "name": rollout_name}


def short_hex(digest: str) -> str:
    """sha256:3f9a1c0d2b7e4a51... -> 3f9a1c0d2b7e4a51"""
    return digest.removeprefix("sha256:")[:16]


def sha256_digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def plan_configmap_name(digest: str) -> str:
    return f"aicr-plan-{short_hex(digest)}"


def assessment_configmap_name(digest: str) -> str:
    return f"aicr-assessment-{short_hex(digest)}"


# -- reading raw objects defensively --------------------------------------------------

def _is_mapping(node: Any) -> bool:
    # JSON objects are dicts: test that first, since an ABC check costs ten times more (list at scale).
    return isinstance(node, dict) or isinstance(node, Mapping)


_KEYS: dict[str, tuple[str, ...]] = {}  # "spec.to.digest" -> ("spec", "to", "digest"), split once


class _Reader:
    """Typed access to an untrusted object; a wrong type is INVALID_OBJECT, not a traceback."""

    def __init__(self, obj: Any, what: str) -> None:
        self.obj, self.what = obj if _is_mapping(obj) else {}, what

    def _raw(self, path: str) -> Any:
        keys = _KEYS.get(path)
        if keys is None:
            keys = _KEYS[path] = tuple(path.split("."))
        node: Any = self.obj
        for key in keys:
            if not _is_mapping(node):
                return None
            node = node.get(key)
        return node

    def _typed(self, path: str, kind: type | tuple[type, ...], default: Any) -> Any:
        value = self._raw(path)
        if value is None:
            return default
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise AicrError(Code.INVALID_OBJECT, f"{self.what}: {path} has an unexpected type")
        return value

    def text(self, path: str, default: str = "") -> str:
        return self._typed(path, str, default)

    def opt_text(self, path: str) -> str | None:
        return self._typed(path, str, None) or None

    def integer(self, path: str, default: int = 0) -> int:
        return self._typed(path, int, default)

    def flag(self, path: str, default: bool = False) -> bool:
        return self._typed(path, bool, default)

    def items(self, path: str) -> list[Any]:
        return self._typed(path, list, [])

    def mapping(self, path: str) -> Mapping[str, Any]:
        return self._typed(path, (dict, Mapping), {})

    def time(self, path: str) -> datetime | None:
        text = self.opt_text(path)
        if text is None:
            return None
        try:
            return parse_time(text)
        except (ValueError, OverflowError):  # OverflowError: year 1 or 9999 moved into another year by its offset
            raise AicrError(Code.INVALID_OBJECT, f"{self.what}: {path} is not a time: {shown(text)}") from None

    def sub(self, path_or_item: str | Any, what: str) -> "_Reader":
        node = self._raw(path_or_item) if isinstance(path_or_item, str) else path_or_item
        return _Reader(node, what)


# -- rollouts ---------------------------------------------------------------------------

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


class Override(NamedTuple):
    """Policies a user overrode (`--override`), recorded in the write of the action they overrode."""

    user: str
    action: str  # approve | revoke | acknowledge
    policies: tuple[str, ...]
    time: datetime


class PolicyDecision(NamedTuple):
    """Which policy file decided a write: recorded by kubectl aicr in the write itself."""

    user: str
    action: str  # approve | revoke | acknowledge
    time: datetime
    location: str  # the policy file, in words: ConfigMap <namespace>/aicr-approval-policy (key policy.yaml)
    digest: str | None  # sha256 of its text; None when there was no file there


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


def parse_rollout(obj: Mapping[str, Any], records: bool = True, actions: Collection[str] | None = None) -> Rollout:
    """The rollout; `records=False` leaves the transition records out (a listing shows none of them,
    and they are most of the parsing). `actions`: the names a record's `action` may hold (the domain's
    `rollouts.parse_rollout` passes the Action table's); a record annotation with an entry naming
    another is left out, as a malformed one is."""
    r = _Reader(obj, f"runtimerollout {_Reader(obj, '').text('metadata.name')}")
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
        approval = Approval(a.text("user"), _required_time(a, "expires"), a.text("reason"))
    revocation = None
    if spec.mapping("revocation"):
        v = spec.sub("revocation", f"{r.what}: spec.revocation")
        revocation = Revocation(v.text("user"), _required_time(v, "time"), v.text("reason"))
    acks = []
    for item in spec.items("acknowledgements"):
        k = r.sub(item, f"{r.what}: spec.acknowledgements[]")
        acks.append(Acknowledgement(k.text("release"), k.text("user"), _required_time(k, "time")))
    overrides = []
    for item in spec.items("overrides"):  # 0.1.0's record, on a cluster whose CRD had that field
        o = r.sub(item, f"{r.what}: spec.overrides[]")
        names = tuple(n for n in o.items("policies") if isinstance(n, str))
        overrides.append(Override(o.text("user"), o.text("action"), names, _required_time(o, "time")))
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


def _parse_condition(c: _Reader) -> Condition:
    return Condition(c.text("type"), c.text("status"), c.text("reason"), c.text("message"),
                     c.time("lastTransitionTime"))


def _required_time(reader: _Reader, path: str) -> datetime:
    moment = reader.time(path)
    if moment is None:
        raise AicrError(Code.INVALID_OBJECT, f"{reader.what}: {path} is missing")
    return moment


def _parse_record(r: _Reader) -> TransitionRecord:
    def steps(path: str) -> tuple[RecordedStep, ...]:
        return tuple(RecordedStep(s.text("id"), s.text("description"))
                     for s in (r.sub(item, f"{r.what}.{path}[]") for item in r.items(path)))
    return TransitionRecord(r.text("release"), r.text("summary"), r.text("precondition"),
                            steps("beforeApply"), steps("afterApply"))


# -- what one update adds (an admission webhook compares the object before and after) ----------

class Added(NamedTuple):
    """What an update of a rollout adds that people write: its approval, revocation, acknowledgements, overrides.

    "Added" as the CRD's rules and the admission policy count it: an approval
    or a revocation that was not there before, list entries that are not in the
    old list (entries never change, so an entry is compared as a whole).
    """

    approval: Approval | None = None
    revocation: Revocation | None = None
    acknowledgements: tuple[Acknowledgement, ...] = ()
    overrides: tuple[Override, ...] = ()
    policy_decisions: tuple[PolicyDecision, ...] = ()


def added(before: Rollout, after: Rollout, actions: Collection[str]) -> Added:
    """What `after` (the object an update would store) adds to `before` (the stored object).

    Overrides are the entries of `after`'s annotation beyond `before`'s, each checked for its shape and
    that its action is one of `actions`, the known names (INVALID_OBJECT); whether the annotation only
    grew is `record_growth`'s question (ask it first).
    """
    def new(parsed: tuple[Any, ...], stored: tuple[Mapping[str, Any], ...],
            old: tuple[Mapping[str, Any], ...]) -> tuple[Any, ...]:
        return tuple(value for value, raw in zip(parsed, stored, strict=True) if raw not in old)

    return Added(
        approval=after.approval if before.approval is None else None,
        revocation=after.revocation if before.revocation is None else None,
        acknowledgements=new(after.acknowledgements, after.stored_acknowledgements, before.stored_acknowledgements),
        overrides=tuple(parse_override(e, actions) for e in _new_entries(before, after, ANNOTATION_OVERRIDES)),
        policy_decisions=tuple(parse_policy_decision(e, actions)
                               for e in _new_entries(before, after, ANNOTATION_DECISIONS)),
    )


def _new_entries(before: Rollout, after: Rollout, key: str) -> tuple[Mapping[str, Any], ...]:
    """The entries `after`'s record annotation `key` has beyond `before`'s, read strictly (INVALID_OBJECT)."""
    old = record_entries(before.annotations.get(key), key)
    return record_entries(after.annotations.get(key), key)[len(old):]


# -- this plugin's records (annotations) ---------------------------------------------------------

def record_entries(text: str | None, key: str) -> tuple[Mapping[str, Any], ...]:
    """The entries of record annotation `key` (absent: none); INVALID_OBJECT unless a JSON list of objects."""
    if text is None:
        return ()
    try:
        value = bounded_json.loads(text)
    except ValueError:  # TooDeep too
        raise AicrError(Code.INVALID_OBJECT, f"annotation {key} is not JSON") from None
    if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
        raise AicrError(Code.INVALID_OBJECT, f"annotation {key} is not a JSON list of objects")
    if len(value) > MAX_RECORD_ENTRIES:
        raise AicrError(Code.INVALID_OBJECT, f"annotation {key} holds more than {MAX_RECORD_ENTRIES} entries")
    return tuple(value)


def _known(action: str, actions: Collection[str] | None) -> bool:
    """A record's `action`: a name, one of `actions` when they are given (this module knows no action's name:
    the Action table, aicr_core.domain.actions, is the domain's, which imports this module)."""
    return bool(action) and (actions is None or action in actions)


def parse_override(entry: Mapping[str, Any], actions: Collection[str] | None = None) -> Override:
    """One entry of the overrides annotation; INVALID_OBJECT unless it has exactly the documented shape and,
    when the known `actions` are given (the Action table's names), its `action` is one of them."""
    o = _Reader(entry, f"annotation {ANNOTATION_OVERRIDES}: an entry")
    policies = o.items("policies")
    if set(entry) != {"user", "action", "policies", "time"} or not o.text("user") \
            or not _known(o.text("action"), actions) or not policies \
            or not all(isinstance(n, str) and n for n in policies):
        raise AicrError(Code.INVALID_OBJECT, f"{o.what} is not {{user, action, policies[], time}}: {shown(entry, 200)}")
    return Override(o.text("user"), o.text("action"), tuple(policies), _required_time(o, "time"))


def parse_policy_decision(entry: Mapping[str, Any], actions: Collection[str] | None = None) -> PolicyDecision:
    """One entry of the policy-decisions annotation; INVALID_OBJECT unless it has exactly the documented shape
    and, when the known `actions` are given, its `action` is one of them."""
    d = _Reader(entry, f"annotation {ANNOTATION_DECISIONS}: an entry")
    digest = entry.get("digest")
    if set(entry) != {"user", "action", "time", "location", "digest"} or not d.text("user") \
            or not _known(d.text("action"), actions) or not d.text("location") \
            or not (digest is None or (isinstance(digest, str) and is_digest(digest))):
        raise AicrError(Code.INVALID_OBJECT, f"{d.what} is not {{user, action, time, location, digest}}: "
                        f"{shown(entry, 200)}")
    return PolicyDecision(d.text("user"), d.text("action"), _required_time(d, "time"), d.text("location"), digest)


def record_growth(before: Rollout, after: Rollout) -> list[str]:
    """What is wrong with how an update changes the record annotations: each may only grow, entries never change."""
    problems = []
    for key in RECORD_ANNOTATIONS:
        old_text, new_text = before.annotations.get(key), after.annotations.get(key)
        if old_text == new_text:
            continue
        try:
            old = record_entries(old_text, key)
        except AicrError as err:
            problems.append(f"{err.message} as stored; it cannot be changed")
            continue
        try:
            new = record_entries(new_text, key)
        except AicrError as err:
            problems.append(err.message)
            continue
        if new[:len(old)] != old:
            problems.append(f"annotation {key} only grows: existing entries never change, nor are removed")
    return problems



# -- writes: each carries the resourceVersion read, so a lost race is a 409 -------------

def _conditional(rollout: Rollout, spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rollout.resource_version}, "spec": spec}


def approval_patch(rollout: Rollout, approval: Approval) -> dict[str, Any]:
    return _conditional(rollout, {"approval": {
        "user": approval.user, "expires": format_time(approval.expires), "reason": approval.reason}})


def revocation_patch(rollout: Rollout, revocation: Revocation) -> dict[str, Any]:
    return _conditional(rollout, {"revocation": {
        "user": revocation.user, "time": format_time(revocation.time), "reason": revocation.reason}})


def acknowledgement_patch(rollout: Rollout, ack: Acknowledgement) -> dict[str, Any]:
    entry = {"release": ack.release, "user": ack.user, "time": format_time(ack.time)}
    return _conditional(rollout, {"acknowledgements": [*rollout.stored_acknowledgements, entry]})


def with_override(rollout: Rollout, patch: dict[str, Any], override: Override) -> dict[str, Any]:
    """`patch` (an approval, revocation or acknowledgement) that also records `override`: one write."""
    entry = {"user": override.user, "action": override.action, "policies": list(override.policies),
             "time": format_time(override.time)}
    return _with_annotation(patch, ANNOTATION_OVERRIDES, [*rollout.stored_overrides, entry])


def with_policy_decision(rollout: Rollout, patch: dict[str, Any], decision: PolicyDecision) -> dict[str, Any]:
    """`patch` that also records which policy file decided it: one write."""
    entry = {"user": decision.user, "action": decision.action, "time": format_time(decision.time),
             "location": decision.location, "digest": decision.digest}
    return _with_annotation(patch, ANNOTATION_DECISIONS, [*rollout.stored_policy_decisions, entry])


def _with_annotation(patch: dict[str, Any], key: str, entries: list[Mapping[str, Any]]) -> dict[str, Any]:
    metadata = dict(patch.get("metadata", {}))
    metadata["annotations"] = {**metadata.get("annotations", {}), key: json.dumps(entries, separators=(",", ":"))}
    return {**patch, "metadata": metadata}


# -- the runtime and its plans ---------------------------------------------------------------

class Runtime(NamedTuple):
    uid: str
    active_plan: str | None
    candidate_plan: str | None


def parse_runtime(obj: Mapping[str, Any]) -> Runtime:
    r = _Reader(obj, f"clusterruntime {RUNTIME_NAME}")
    return Runtime(r.text("metadata.uid"), r.opt_text("status.activePlan.digest"),
                   r.opt_text("status.candidatePlan.digest"))


CONDITION_READY = "Ready"  # the ClusterRuntime's condition the waves require after their soak


def runtime_ready_condition(obj: Mapping[str, Any]) -> Condition | None:
    """The ClusterRuntime's `Ready` condition (status.conditions[type=Ready]), or None when it reports none.

    Read leniently, as a wave's health check needs it: a status or conditions of another shape is
    no Ready condition (the wave then fails that cluster, saying so), never a parse error.
    """
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for entry in conditions if isinstance(conditions, list) else []:
        if isinstance(entry, dict) and entry.get("type") == CONDITION_READY:
            reason, message = entry.get("reason"), entry.get("message")
            return Condition(CONDITION_READY, str(entry.get("status")), str(reason) if reason else "",
                             str(message) if message else "", None)
    return None


def policy_namespace_annotation(runtime: Any) -> tuple[bool, Any]:
    """Whether the ClusterRuntime carries the policy-namespace annotation, and its value as it is (unchecked)."""
    metadata = runtime.get("metadata") if isinstance(runtime, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict) or ANNOTATION_POLICY_NAMESPACE not in annotations:
        return False, None
    return True, annotations[ANNOTATION_POLICY_NAMESPACE]


class Plan(NamedTuple):
    configmap: str
    digest: str
    from_applications: bool
    recipe: str | None           # the exact text of recipe.json
    recipe_digest: str | None
    render_flags: tuple[str, ...] | None   # None: the plan does not record them
    aicr_image: str
    bundle: str


def plan_digest(obj: Mapping[str, Any]) -> str:
    """The digest a plan ConfigMap records (its annotation), without parsing the rest."""
    value = _Reader(obj, "plan ConfigMap").mapping("metadata.annotations").get(ANNOTATION_DIGEST)
    return value if isinstance(value, str) else ""


def parse_plan(obj: Mapping[str, Any]) -> Plan:
    r = _Reader(obj, f"plan ConfigMap {_Reader(obj, '').text('metadata.name')}")
    # Annotation and data keys contain dots, so they are read from the maps, not by path.
    annotations, data = r.mapping("metadata.annotations"), r.mapping("data")

    def value(key: str) -> str | None:
        item = data.get(key)
        if item is not None and not isinstance(item, str):
            raise AicrError(Code.INVALID_OBJECT, f"{r.what}: data.{key} has an unexpected type")
        return item

    flags_text = value("renderFlags")
    flags: tuple[str, ...] | None = None
    if flags_text is not None:
        try:
            parsed = bounded_json.loads(flags_text)
        except ValueError:  # TooDeep too (a RecursionError ended in INTERNAL)
            parsed = None
        if not isinstance(parsed, list):
            raise AicrError(Code.INVALID_PLAN, f"{r.what}: renderFlags is not a JSON array of strings")
        for i, flag in enumerate(parsed):
            if not isinstance(flag, str):
                raise AicrError(Code.INVALID_PLAN, f"{r.what}: renderFlags[{i}] is not a string")
        flags = tuple(parsed)
    return Plan(
        configmap=r.text("metadata.name"),
        digest=_str_or(annotations.get(ANNOTATION_DIGEST)),
        from_applications=annotations.get(ANNOTATION_SOURCE) == SOURCE_APPLICATIONS,
        recipe=value("recipe.json"),
        recipe_digest=value("recipeDigest") or None,
        render_flags=flags,
        aicr_image=value("aicrImage") or "",
        bundle=value("bundle") or "",
    )


# -- assessment reports ----------------------------------------------------------------------

class ComponentAssessment(NamedTuple):
    component: str
    change: str
    from_version: str
    to_version: str
    verdict: str
    notes: str
    explanation: str
    precondition: str
    steps: tuple[str, ...]


class AssessmentReport(NamedTuple):
    components: tuple[ComponentAssessment, ...]
    summary: str


class ComponentVerdict(NamedTuple):
    component: str
    verdict: str  # safe | manual | blocked | unknown | unversioned


class Assessment(NamedTuple):
    """AICR's report for a rollout, as far as it could be verified: what approval policies see.

    `status` is the one `describe -o json` shows: `none` (the rollout records
    no report), `verified`, `unverified` (the content does not match the
    recorded digest), `invalid` (matches, but is not a report), `missing`
    (recorded, not found) or `unavailable` (could not be read). `components`
    holds the verdicts of a verified report only.
    """

    status: str
    digest: str | None = None
    components: tuple[ComponentVerdict, ...] = ()


def report_text(configmap: Mapping[str, Any]) -> str | None:
    """The exact text of report.json in an assessment ConfigMap (what the digest covers)."""
    value = _Reader(configmap, "assessment ConfigMap").mapping("data").get("report.json")
    return value if isinstance(value, str) else None


def parse_report(text: str) -> AssessmentReport:
    """Parse AICR's upgrade-check JSON; INVALID_OBJECT when it is not valid JSON of that shape."""
    r = _report(text)
    components = []
    for c in _components(r):
        notes = c._raw("notes")
        components.append(ComponentAssessment(
            c.text("component"), c.text("change"), _text(c._raw("from")), _text(c._raw("to")), c.text("verdict"),
            "; ".join(str(n) for n in notes) if isinstance(notes, list) else _text(notes),
            _text(c._raw("explanation")), _text(c._raw("precondition")),
            tuple(_text(s.get("description", s.get("id", "")) if isinstance(s, Mapping) else s)
                  for s in c.items("steps"))))
    summary = r._raw("summary")
    return AssessmentReport(tuple(components), summary if isinstance(summary, str) else
                            (json.dumps(summary, sort_keys=True) if summary is not None else ""))


def report_verdicts(text: str) -> tuple[ComponentVerdict, ...]:
    """Each component's verdict only (what a listing shows), with exactly the checks of `parse_report`:
    a report is invalid for both or for neither."""
    return tuple(ComponentVerdict(c.text("component"), c.text("verdict")) for c in _components(_report(text)))


def _report(text: str) -> _Reader:
    try:
        doc = bounded_json.loads(text)
    except ValueError as err:  # TooDeep: arrays or objects nested too deeply
        raise AicrError(Code.INVALID_OBJECT, f"the assessment report is not valid JSON: {err}") from None
    if not _is_mapping(doc):  # _Reader reads anything else as {}: an array would pass for an empty report
        raise AicrError(Code.INVALID_OBJECT, f"the assessment report is a JSON {_json_type(doc)}, not an object")
    return _Reader(doc, "assessment report")


def _json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    return "null" if value is None else "number"


def _components(r: _Reader) -> Iterator[_Reader]:
    """The report's components, each with the fields that must have their types (or INVALID_OBJECT)."""
    for item in r.items("components"):
        if not _is_mapping(item):
            raise AicrError(Code.INVALID_OBJECT, "assessment report: components[] has an unexpected type")
        c = r.sub(item, "assessment report: components[]")
        for name in ("component", "change", "verdict"):
            c.text(name)  # the type check is the point: INVALID_OBJECT when it is not a string
        c.items("steps")
        yield c


def _str_or(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def is_digest(text: str) -> bool:
    return bool(DIGEST.fullmatch(text))


def plan_names(plan_ref: str) -> tuple[str, str | None]:
    """A PLAN argument -> (ConfigMap name, the full digest it must record, if known)."""
    if is_digest(plan_ref):
        return plan_configmap_name(plan_ref), plan_ref
    if PLAN_CONFIGMAP.fullmatch(plan_ref):
        return plan_ref, None
    raise AicrError(Code.USAGE, f"PLAN {shown(plan_ref)} is neither sha256:<64 hex> nor aicr-plan-<16 hex>")


def short_digest(digest: object) -> str:
    """sha256:3f9a1c0d2b7e4a51... -> 3f9a1c0d2b7e4a51: the 16 hex digits a rollout's name is made of.

    `none` when there is no digest."""
    if not digest:
        return "none"
    text = str(digest)
    return text.split(":", 1)[1][:16] if ":" in text else text[:16]
