"""Where the operator's objects are and what they are called: its API group, paths, labels, digests.

The group and version, the API paths of its kinds and of the ConfigMaps it writes (reports,
plans), the labels that select those, the names made of a digest, and the permission the
admission policy checks.
"""


import hashlib
import re

from aicr_core.errors import AicrError, Code, shown

GROUP = "operator.aicr.run"
VERSION = "v1alpha1"
RUNTIME_NAME = "cluster"
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
PLAN_CONFIGMAP = re.compile(r"^aicr-plan-([0-9a-f]{16})$")

ROLLOUTS = "runtimerollouts"
ROLLOUT_RESOURCE = f"runtimerollout.{GROUP}"  # how kubectl names the kind: `-o name` prints <this>/<name>
LABEL_ROLE = f"{GROUP}/role"
ASSESSMENT_SELECTOR = f"{LABEL_ROLE}=assessment"
PLAN_SELECTOR = f"{LABEL_ROLE}=plan"
DEFAULT_OPERATOR_NAMESPACE = "aicr-system"  # the operator's own namespace: its reports, plans and policy file


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


def approver_access(rollout_name: str) -> dict[str, str]:
    """The permission the admission policy checks before an approval, revocation or acknowledgement
    (for a SelfSubjectAccessReview: `KubeSession.can_i(**approver_access(name))`)."""
    return {"verb": "update", "group": GROUP, "resource": ROLLOUTS, "subresource": "approve",
            "name": rollout_name}


def sha256_digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def plan_configmap_name(digest: str) -> str:
    return f"aicr-plan-{short_digest(digest)}"


def assessment_configmap_name(digest: str) -> str:
    return f"aicr-assessment-{short_digest(digest)}"


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
    """sha256:3f9a1c0d2b7e4a51... -> 3f9a1c0d2b7e4a51: the 16 hex digits a rollout's name, a plan's and a
    report's ConfigMap are made of ("short hex", docs/operator-api.md). `none` when there is no digest."""
    if not digest:
        return "none"
    text = str(digest)
    return text.split(":", 1)[1][:16] if ":" in text else text[:16]
