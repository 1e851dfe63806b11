"""The read model of a rollout: the documents `list`, `describe`, `wait` and the fleet print of it.

What a program that shows a rollout says of it (a command today, a dashboard or an exporter
tomorrow), as plain JSON data: describe's document, a listing's item, the approval's words,
"waits for a person" and the time format of them all. docs/output.md documents each.
The assessment of a rollout (its report, verified) is `assessments`'; reading the rollouts that
these documents are made of is `rollout_listing`'s, `rollout_description`'s and `live_listing`'s.
"""
from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from aicr_core import clock
from aicr_core.domain import operator_api as api

if TYPE_CHECKING:
    from aicr_core.domain.rollouts import ReportRead

ASSESSMENT_KEYS = ("status", "digest", "reportDigest", "configMap", "error", "summary", "components")


def time_or_none(moment: datetime | None) -> str | None:
    """A time as the documents carry it (RFC 3339 UTC), or null."""
    return clock.format_time(moment) if moment is not None else None


def waits_for_person(rollout: api.Rollout) -> bool:
    """AwaitingApproval with no approval yet, or AwaitingAcknowledgement of a release nobody acknowledged."""
    if rollout.phase == api.PHASE_AWAITING_APPROVAL:
        return rollout.approval_required and rollout.approval is None
    if rollout.awaiting_acknowledgement and rollout.awaiting_release:
        return not any(a.release == rollout.awaiting_release for a in rollout.acknowledgements)
    return False


def approval_data(r: api.Rollout) -> dict[str, Any]:
    """The `approval` object of describe's document (list's items carry the same)."""
    return {
        "required": r.approval_required,
        "user": r.approval.user if r.approval else None,
        "expires": time_or_none(r.approval.expires) if r.approval else None,
        "reason": r.approval.reason if r.approval else None,
        "revocation": {"user": r.revocation.user, "time": time_or_none(r.revocation.time),
                       "reason": r.revocation.reason} if r.revocation else None,
    }


def assessment(status: str, **known: Any) -> dict[str, Any]:
    """The `assessment` document: every key present in every status, null where unknown (docs/output.md)."""
    unknown = set(known) - set(ASSESSMENT_KEYS)
    if unknown:
        raise ValueError(f"not assessment keys: {sorted(unknown)}")
    return {"status": status, **{key: known.get(key) for key in ASSESSMENT_KEYS[1:]}}


def assessment_document(read: ReportRead) -> dict[str, Any]:
    """The `assessment` document of what the core read and verified (docs/output.md)."""
    known: dict[str, Any] = {"digest": read.digest, "configMap": read.configmap, "reportDigest": read.report_digest,
                             "error": read.error}
    if read.report is not None:
        known["summary"] = read.report.summary
        known["components"] = [
            {"component": c.component, "change": c.change, "from": c.from_version, "to": c.to_version,
             "verdict": c.verdict, "notes": c.notes, "explanation": c.explanation,
             "precondition": c.precondition, "steps": list(c.steps)} for c in read.report.components]
    elif read.status == "verified":  # verdicts only (a listing)
        known["components"] = [{"component": v.component, "verdict": v.verdict} for v in read.verdicts]
    return assessment(read.status, **known)


def describe(r: api.Rollout, assessment: dict[str, Any]) -> dict[str, Any]:
    """describe's document (RolloutDescription), without its events."""
    return {
        "rollout": r.name,
        "runtimeUID": r.runtime_uid,
        "transition": {"from": r.from_digest, "to": r.to_digest},
        "phase": r.phase,
        "outcome": r.outcome or None,
        "deadline": time_or_none(r.deadline),
        "approval": approval_data(r),
        "message": r.message,
        "inventory": {"releases": r.inventory_releases, "digest": r.inventory_digest},
        "steps": [{"release": s.release, "operation": s.operation, "assessment": s.verdict or None,
                   "changesCRDs": s.changes_crds, "state": s.state, "message": s.message} for s in r.steps],
        "assessment": assessment,
        "records": [{"release": rec.release, "summary": rec.summary, "precondition": rec.precondition,
                     "beforeApply": [{"id": s.id, "description": s.description} for s in rec.before_apply],
                     "afterApply": [{"id": s.id, "description": s.description} for s in rec.after_apply]}
                    for rec in r.records],
        "acknowledgements": [{"release": a.release, "user": a.user, "time": time_or_none(a.time)}
                             for a in r.acknowledgements],
        "overrides": [{"user": o.user, "action": o.action, "policies": list(o.policies), "time": time_or_none(o.time)}
                      for o in r.overrides],
        "policyDecisions": [{"user": d.user, "action": d.action, "time": time_or_none(d.time),
                             "location": d.location, "digest": d.digest} for d in r.policy_decisions],
        "conditions": [{"type": c.type, "status": c.status, "reason": c.reason or None, "message": c.message or None,
                        "lastTransitionTime": time_or_none(c.last_transition)} for c in r.conditions],
    }


def item(r: api.Rollout, assessment: dict[str, Any]) -> dict[str, Any]:
    """One item of a listing (RolloutList's items[]): the rollout in a row, its assessment verified."""
    return {
        "name": r.name,
        "created": time_or_none(r.created),
        "phase": r.phase,
        "outcome": r.outcome or None,
        "approval": approval_data(r),
        "deadline": time_or_none(r.deadline),
        "waitingOn": r.awaiting_release or None if r.awaiting_acknowledgement else None,
        "waitingForPerson": waits_for_person(r),
        "assessment": assessment,
        "transition": {"from": r.from_digest, "to": r.to_digest},
        "steps": len(r.steps),
    }
