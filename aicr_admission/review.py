"""One AdmissionReview in, one verdict out: the hook calls `kubectl aicr` makes, from the request.

What the CLI passes to a policy, the webhook builds from the request:

- `rollout`: the stored object (`oldObject`), as the CLI reads it before writing;
- the approval, revocation or acknowledgement the update adds (`object`
  compared with `oldObject`), as the CLI builds it before writing;
- `user`: the username and groups the API server reports (`userInfo`), as the
  CLI's SelfSubjectReview reports them;
- `context`: command `admission`, no flags, and the one instant of the decision;
- overrides the write records for that user and action (`kubectl aicr
  --override` records them in the same write, in the annotation
  `aicr.run/overrides`), applied exactly as the CLI applies `--override`;
- `assessment`: read and verified as the CLI does, and only when an active
  policy asks for it.

It enforces what no CRD rule can, the record annotations being the
plugin's, not the operator's: each only grows, its entries never change, an
override names the requester and goes only with the write it overrides. It
also checks with the server's clock what CEL cannot: an approval must
expire in the future, a revocation's and an acknowledgement's time must be
within a minute of now. Everything fails closed: a policy file that cannot be
read or does not validate, a policy that did not load, raises or returns junk,
an object that cannot be parsed all deny, saying why.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from aicr_core import clock
from aicr_core.domain import operator_api as api
from aicr_core.domain import rollouts
from aicr_core.domain.action_rules import approval_expiry_problem
from aicr_core.domain.actions import ACTIONS, Action
from aicr_core.domain.hookspecs import Identity, PolicyContext
from aicr_core.domain.policy_engine import PolicyEngine
from aicr_core.domain.write_decision import decide_write, wants_assessment
from aicr_core.errors import AicrError, Code, VerdictWord
from aicr_core.session import bounded_json

COMMAND = "admission"
CLOCK_SKEW = timedelta(minutes=1)  # how far a revocation's or acknowledgement's time may be from now

ReadAssessment = Callable[[api.Rollout], api.Assessment]


@dataclass
class Answer:
    """The verdict on one request, and what the decision log line says about it."""

    uid: str
    allowed: bool
    message: str = ""
    code: str | None = None
    user: str = ""
    rollout: str = ""
    actions: list[str] = field(default_factory=list)
    violated: list[str] = field(default_factory=list)  # policies that refused (or failed)
    decided: list[str] = field(default_factory=list)  # policies that gave a verdict (those set up for the action)
    overridden: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    dry_run: bool = False
    policy_file: str | None = None  # digest of the policy file the decision followed
    malformed: bool = False  # the review itself could not be decided (no object): an error, not a policy's denial

    def response(self) -> dict[str, Any]:
        """The AdmissionReview sent back to the API server."""
        body: dict[str, Any] = {"uid": self.uid, "allowed": self.allowed}
        if not self.allowed:
            # The API server shows the user: admission webhook "<name>" denied the request: <message>
            body["status"] = {"code": 403, "reason": "Forbidden", "message": self.message}
        if self.warnings:
            body["warnings"] = [w if len(w) <= 256 else w[:253] + "..." for w in self.warnings]
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": body}

    def log_fields(self) -> dict[str, Any]:
        """The decision log line: never a token, the user's extra attributes or the object."""
        return {"uid": self.uid, "user": self.user, "rollout": self.rollout, "actions": self.actions,
                "verdict": (VerdictWord.ALLOW if self.allowed else VerdictWord.DENY).value,
                "code": self.code, "violated": self.violated,
                "overridden": self.overridden, "dryRun": self.dry_run, "policyFile": self.policy_file,
                "message": self.message or None}


class BadReview(Exception):
    """The body is not an AdmissionReview request: answered 400 (the API server then applies failurePolicy)."""


def request_of(review: Any) -> Mapping[str, Any]:
    """The `request` of an admission.k8s.io/v1 AdmissionReview, or BadReview."""
    if not isinstance(review, Mapping) or review.get("apiVersion") != "admission.k8s.io/v1" \
            or review.get("kind") != "AdmissionReview":
        raise BadReview("not an admission.k8s.io/v1 AdmissionReview")
    request = review.get("request")
    if not isinstance(request, Mapping) or not isinstance(request.get("uid"), str) or not request["uid"]:
        raise BadReview("the AdmissionReview has no request with a uid")
    return request


def answer_review(request: Mapping[str, Any], engine: PolicyEngine | AicrError, read_assessment: ReadAssessment,
                  now: datetime | None = None) -> Answer:
    """The verdict on `request`; `engine` is the policy engine, or why there is none (every write denied)."""
    now = now or clock.now()
    raw_info = request.get("userInfo")
    info: Mapping[str, Any] = raw_info if isinstance(raw_info, Mapping) else {}
    username = info["username"] if isinstance(info.get("username"), str) else ""
    groups = tuple(g for g in info.get("groups") or () if isinstance(g, str))
    answer = Answer(str(request["uid"]), False, user=username, rollout=str(request.get("name") or ""),
                    dry_run=request.get("dryRun") is True)
    if isinstance(engine, PolicyEngine):
        answer.policy_file = engine.digest
    missing = _missing_objects(request)
    if missing:  # `or {}` would read it as an empty rollout that adds nothing: allowed (fail open)
        answer.malformed = True
        return _deny(answer, AicrError(Code.INVALID_OBJECT, f"the AdmissionReview's {missing}: there is nothing "
                                       "to decide; refusing (fail closed)"))
    try:
        before = rollouts.parse_rollout(request.get("oldObject") or {})
        after = rollouts.parse_rollout(request.get("object") or {})
    except AicrError as err:
        return _deny(answer, err)
    problems = api.record_growth(before, after)
    if problems:
        return _deny(answer, AicrError(Code.ADMISSION_DENIED, "; ".join(problems)))
    try:
        adds = rollouts.added(before, after)
    except AicrError as err:
        return _deny(answer, err)
    proposals = _proposals(adds)
    answer.actions = [action.name for action, _ in proposals]
    if not proposals and not adds.overrides and not adds.policy_decisions:  # a record reformatted, say
        answer.allowed = True
        return answer
    if not username:
        return _deny(answer, AicrError(Code.ADMISSION_DENIED, "the request names no user"))
    misplaced = _misplaced_overrides(adds, username, answer.actions) or _misplaced_decisions(
        adds, username, answer.actions, engine)
    if misplaced:
        return _deny(answer, AicrError(Code.ADMISSION_DENIED, misplaced))
    stale = _clock_refusals(adds, now)
    if stale:
        return _deny(answer, AicrError(Code.ADMISSION_DENIED, "; ".join(stale)))
    user = Identity(username, groups)
    context = PolicyContext(COMMAND, {}, now=now)
    refusals: list[AicrError] = []
    for action, value in proposals:
        overrides = [name for o in adds.overrides if o.user == username and o.action == action.name
                     for name in o.policies]
        assessment: api.Assessment | AicrError | None = None
        if wants_assessment(engine, action):  # read only when an active policy asks for it
            try:
                assessment = read_assessment(before)
            except AicrError as err:  # its own deadline included: no answer is a refusal here (fail closed)
                assessment = err
        decision = decide_write(action, value, engine=engine, rollout=before, user=user, context=context,
                                overrides=overrides, assessment=assessment)
        answer.warnings += decision.warnings()
        answer.overridden += decision.overridden
        answer.violated += [o.policy for o in decision.outcomes if o.verdict.refuses]
        answer.decided = sorted({*answer.decided, *(o.policy for o in decision.outcomes)})
        if decision.error is not None and isinstance(engine, PolicyEngine):  # plugins that did not load
            answer.violated += sorted(engine.loaded.failures)
        refusal = decision.refusal()
        if refusal is not None:
            refusals.append(refusal)
    if refusals:
        worst = next((r for r in refusals if r.code == Code.POLICY_ERROR), refusals[0])
        return _deny(answer, worst, refusals)
    answer.allowed = True
    return answer


def _missing_objects(request: Mapping[str, Any]) -> str | None:
    """What is wrong with the objects of an UPDATE's review (the only operation the webhook is sent), if anything:
    both the object written and the one stored must be JSON objects."""
    for key in ("object", "oldObject"):
        if key not in request:
            return f"request.{key} is missing"
        if not isinstance(request[key], Mapping):
            return f"request.{key} is {bounded_json.kind_of(request[key])}, not an object"
    return None


def _proposals(adds: api.Added) -> list[tuple[Action, Any]]:
    """(action, the value it writes) for each thing the write adds, in the CLI's terms."""
    return [(action, value) for action in ACTIONS.values() for value in action.added(adds)]


def _misplaced_overrides(adds: api.Added, username: str, actions: list[str]) -> str | None:
    """What the CRD rule and admission policy of 0.1.0 checked of `spec.overrides`, now of the annotation:
    the requester's own, and only in the write of the one approval, revocation or acknowledgement it overrides."""
    if any(o.user != username for o in adds.overrides):
        return f"an override must name the requesting user {username}"
    if len(adds.overrides) > 1 or any(o.action not in actions for o in adds.overrides):
        return "an override is recorded only in the write of the approval, revocation or acknowledgement it overrides"
    return None


def _misplaced_decisions(adds: api.Added, username: str, actions: list[str],
                         engine: PolicyEngine | AicrError) -> str | None:
    """A record of which policy file decided the write: the requester's, one per action the write adds, and
    naming the very file this webhook enforces (a decision taken under another file is no decision here)."""
    records = adds.policy_decisions
    if any(d.user != username for d in records):
        return f"a policy-decision record must name the requesting user {username}"
    if len(records) != len({d.action for d in records}) or any(d.action not in actions for d in records):
        return "a policy-decision record goes only with the approval, revocation or acknowledgement it decided"
    if isinstance(engine, PolicyEngine):
        for d in records:
            if (d.location, d.digest) != (engine.source, engine.digest):
                return (f"the write records that it was decided under {d.location} ({d.digest or 'no file'}), "
                        f"but the policy file in force is {engine.source} ({engine.digest or 'no file'})")
    return None


def _clock_refusals(adds: api.Added, now: datetime) -> list[str]:
    """What CEL cannot check, having no clock."""
    problems = []
    # The CLI's own bound on --expires, with the minute of clock skew allowed below: what passed it passes here.
    short = approval_expiry_problem(adds.approval.expires, now, clock_skew=CLOCK_SKEW) if adds.approval else None
    if adds.approval is not None and short:
        problems.append(f"the approval expires at {clock.format_time(adds.approval.expires)}, which is not in the "
                        f"future (the webhook's clock says {clock.format_time(now)}; {short})")
    moments = [("the revocation", adds.revocation.time)] if adds.revocation is not None else []
    moments += [(f"the acknowledgement of {ack.release}", ack.time) for ack in adds.acknowledgements]
    for what, moment in moments:
        if abs(moment - now) > CLOCK_SKEW:
            problems.append(f"{what} is dated {clock.format_time(moment)}, more than a minute from now "
                            f"({clock.format_time(now)} by the webhook's clock)")
    return problems


def _deny(answer: Answer, error: AicrError, all_errors: list[AicrError] | None = None) -> Answer:
    """Deny with the CLI's own words: `[CODE] message`, then one line per detail (a violated policy, say).

    The API server shows the user `admission webhook "..." denied the request: <message>`;
    `kubectl aicr` prints the lines after the first as indented details, as for its own check.
    """
    answer.allowed = False
    answer.code = str(error.code)
    lines: list[str] = []
    for err in all_errors or [error]:
        code = "" if err.code == Code.ADMISSION_DENIED else f"[{err.code}] "  # the webhook's own refusals: no code
        lines += [f"{code}{err.message}", *err.details]
    answer.message = "\n".join(dict.fromkeys(lines))
    answer.violated = sorted(set(answer.violated))
    return answer
