"""The AICR operator API (operator.aicr.run/v1alpha1), as docs/operator-api.md fixes it.

This is the only package that spells a field name, a label, an annotation or an
API path of the operator. It turns raw objects (JSON dicts) into typed values
and domain writes into patches; if the operator renames a field, this package
changes and nothing else does. It does not talk to the API server.

One module a concept: `paths` (the group, API paths, labels, names made of digests),
`object_reader` (reading raw objects defensively), `rollout_object` (the rollout, its values and
its parse), `records` (this plugin's record annotations), `rollout_update` (what an update adds,
whether the records only grew), `patches` (the writes), `runtime` (the ClusterRuntime and its plans)
and `reports` (AICR's assessment reports). Callers import the package (`from aicr_core.domain import
operator_api as api`; `api.Rollout`): the names below are those used outside it.
"""


from aicr_core.domain.operator_api.object_reader import metadata_name, serves_rollouts
from aicr_core.domain.operator_api.patches import (
    acknowledgement_patch,
    approval_patch,
    revocation_patch,
    with_override,
    with_policy_decision,
)
from aicr_core.domain.operator_api.paths import (
    ASSESSMENT_SELECTOR,
    DEFAULT_OPERATOR_NAMESPACE,
    GROUP,
    PLAN_CONFIGMAP,
    PLAN_SELECTOR,
    ROLLOUTS,
    RUNTIME_NAME,
    VERSION,
    approver_access,
    assessment_configmap_name,
    configmap_path,
    configmaps_path,
    group_version_path,
    is_digest,
    plan_configmap_name,
    plan_names,
    rollout_path,
    rollout_reference,
    rollouts_path,
    runtime_path,
    sha256_digest,
    short_digest,
)
from aicr_core.domain.operator_api.records import ANNOTATION_DECISIONS, ANNOTATION_OVERRIDES, Override, PolicyDecision
from aicr_core.domain.operator_api.reports import (
    Assessment,
    AssessmentReport,
    ComponentVerdict,
    parse_report,
    report_text,
    report_verdicts,
)
from aicr_core.domain.operator_api.rollout_object import (
    PHASE_AWAITING_ACKNOWLEDGEMENT,
    PHASE_AWAITING_APPROVAL,
    PHASE_ENDED,
    PHASES,
    Acknowledgement,
    Approval,
    RecordedStep,
    Revocation,
    Rollout,
    Step,
    rollout_from_object,
)
from aicr_core.domain.operator_api.rollout_update import Added, added, record_growth
from aicr_core.domain.operator_api.runtime import (
    ANNOTATION_POLICY_NAMESPACE,
    Plan,
    parse_plan,
    parse_runtime,
    plan_digest,
    policy_namespace_annotation,
    runtime_ready_condition,
)

__all__ = [
    "ANNOTATION_DECISIONS", "ANNOTATION_OVERRIDES", "ANNOTATION_POLICY_NAMESPACE", "ASSESSMENT_SELECTOR",
    "DEFAULT_OPERATOR_NAMESPACE", "GROUP", "PHASES", "PHASE_AWAITING_ACKNOWLEDGEMENT", "PHASE_AWAITING_APPROVAL",
    "PHASE_ENDED", "PLAN_CONFIGMAP", "PLAN_SELECTOR", "ROLLOUTS", "RUNTIME_NAME", "VERSION",
    "Acknowledgement", "Added", "Approval", "Assessment", "AssessmentReport", "ComponentVerdict", "Override", "Plan",
    "PolicyDecision", "RecordedStep", "Revocation", "Rollout", "Step",
    "acknowledgement_patch", "added", "approval_patch", "approver_access", "assessment_configmap_name",
    "configmap_path", "configmaps_path", "group_version_path", "is_digest", "metadata_name", "parse_plan",
    "parse_report", "parse_runtime", "plan_configmap_name", "plan_digest", "plan_names",
    "policy_namespace_annotation", "record_growth", "report_text", "report_verdicts", "revocation_patch",
    "rollout_from_object", "rollout_path", "rollout_reference", "rollouts_path", "runtime_path",
    "runtime_ready_condition",
    "serves_rollouts", "sha256_digest", "short_digest", "with_override", "with_policy_decision",
]
