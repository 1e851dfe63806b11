"""The ClusterRuntime and its plans: the runtime's plans and `Ready` condition, where its policy file lives,
the plan ConfigMaps."""


from collections.abc import Mapping
from typing import Any, NamedTuple

from aicr_core.domain.operator_api.object_reader import ObjectReader
from aicr_core.domain.operator_api.paths import GROUP, RUNTIME_NAME
from aicr_core.domain.operator_api.rollout_object import Condition
from aicr_core.errors import AicrError, Code
from aicr_core.session import bounded_json

ANNOTATION_DIGEST = f"{GROUP}/digest"
ANNOTATION_SOURCE = f"{GROUP}/source"
SOURCE_APPLICATIONS = "applications"

# Where the cluster's policy file lives: an annotation of ours on the ClusterRuntime, set by whoever may
# annotate it (the operator and cluster admins), naming the namespace (docs/policies.md).
ANNOTATION_POLICY_NAMESPACE = "aicr.run/policy-namespace"


class Runtime(NamedTuple):
    uid: str
    active_plan: str | None
    candidate_plan: str | None


def parse_runtime(obj: Mapping[str, Any]) -> Runtime:
    r = ObjectReader(obj, f"clusterruntime {RUNTIME_NAME}")
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
    value = ObjectReader(obj, "plan ConfigMap").mapping("metadata.annotations").get(ANNOTATION_DIGEST)
    return value if isinstance(value, str) else ""


def parse_plan(obj: Mapping[str, Any]) -> Plan:
    r = ObjectReader(obj, f"plan ConfigMap {ObjectReader(obj, '').text('metadata.name')}")
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


def _str_or(value: Any) -> str:
    return value if isinstance(value, str) else ""
