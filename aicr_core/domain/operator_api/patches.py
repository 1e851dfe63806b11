"""The writes: conditional JSON merge patches, each with the resourceVersion read, so a lost race is a 409."""


import json
from collections.abc import Mapping
from typing import Any

from aicr_core.clock import format_time
from aicr_core.domain.operator_api.records import ANNOTATION_DECISIONS, ANNOTATION_OVERRIDES, Override, PolicyDecision
from aicr_core.domain.operator_api.rollout_object import Acknowledgement, Approval, Revocation, Rollout


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
