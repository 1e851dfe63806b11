"""`kubectl aicr describe ROLLOUT`: everything an approver decides on."""
from __future__ import annotations

import argparse
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aicr_commands import _events
from aicr_commands import _rollout_args as _rollouts
from aicr_core import clock
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.flags import BoolFlag
from aicr_core.framework.result import Result, Stream

if TYPE_CHECKING:
    from aicr_core.domain import operator_api as api  # imported when the command runs, so `help` stays fast
    from aicr_core.domain.rollouts import ReportRead
    from aicr_core.session.kube import KubeSession


class Describe(AicrCommand):
    """Show a rollout: transition, approval, steps, AICR's assessment, recorded steps, acknowledgements.

    The assessment report is read from the operator namespace and shown only
    when its sha256 matches the digest the rollout records. With --watch the
    description is printed again after each change of the rollout (redrawn in
    place on a terminal, else after a `---` line) until the rollout ends.

    Examples:
      # Everything an approver decides on
      kubectl aicr describe rollout-3f9a1c0d2b7e4a51-1

      # Follow it until it ends
      kubectl aicr describe rollout-3f9a1c0d2b7e4a51-1 --watch

      # The same data for a script
      kubectl aicr describe rollout-3f9a1c0d2b7e4a51-1 -o json

    Codes:
      NOT_FOUND
      TIMEOUT      (without --watch, which runs until the rollout ends)
      API
    """

    uses_flags = ("operator_namespace",)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _rollouts.add_rollout_argument(parser)
        parser.add_argument("-w", "--watch", action="store_true",
                            help="print again after each change of the rollout, until it ends (Ctrl-C stops)")
        parser.add_argument("--show-events", action=BoolFlag, default=True,
                            help="end with the rollout's recent Events, as the admission webhook records them "
                                 "(default true; --show-events=false leaves them out; not with --watch)")

    def take_action(self, args: argparse.Namespace) -> Result | Stream:
        if args.watch:
            import math

            from aicr_core.session.deadline import Deadline

            return Stream(watch(_rollouts.session(args, Deadline(math.inf)), args))
        from aicr_core.domain import operator_api as api
        from aicr_core.domain import rollouts

        cluster = _rollouts.session(args)
        rollout = rollouts.read_rollout(cluster, args.rollout)
        events = _events.start_reading(cluster, args.rollout) if args.show_events else None  # beside the report
        report = rollouts.read_report(cluster, args.operator_namespace, rollout.assessment_digest)
        description = describe(rollout, assessment_document(report))
        description["events"] = events() if events is not None else None
        return Result("RolloutDescription", description, names=(api.rollout_reference(rollout.name),))



def watch(cluster: KubeSession, args: argparse.Namespace) -> Iterator[Result]:
    """The description now, then after each change of the rollout (watch API), until it has ended."""
    from aicr_core.domain import operator_api as api
    from aicr_core.domain import rollouts
    from aicr_core.session.watch import follow

    assessment: dict[str, Any] | None = None
    last = None
    for obj in follow(cluster, api.rollouts_path(), args.rollout, f"rollout {args.rollout}"):
        rollout = api.parse_rollout(obj)
        if assessment is None:  # the digest is immutable: one read serves the whole watch
            assessment = assessment_document(rollouts.read_report(cluster, args.operator_namespace,
                                                                   rollout.assessment_digest))
        description = {**describe(rollout, assessment), "events": None}  # not followed by a watch
        if description != last:
            yield Result("RolloutDescription", description, names=(api.rollout_reference(rollout.name),))
            last = description
        if rollout.ended:
            return


ASSESSMENT_KEYS = ("status", "digest", "reportDigest", "configMap", "error", "summary", "components")


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


def time_or_none(moment: datetime | None) -> str | None:
    """A time as the documents carry it (RFC 3339 UTC), or null."""
    return clock.format_time(moment) if moment is not None else None


def describe(r: api.Rollout, assessment: dict[str, Any]) -> dict[str, Any]:
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
