"""The top level of manifests/ is the operator's API as its spec (operator-api.md) describes it: nothing added.

The field lists below are the spec's tables, transcribed: a field the project
adds to a CRD (as 0.1.0 added `spec.overrides`) fails here, and so does a
file at the top level that is not the operator's.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from testfixtures import compare

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"

CONDITION = ["type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"]  # metav1.Condition
RECORD_STEP = ["id", "description"]

# operator-api.md, "ClusterRuntime"
CLUSTER_RUNTIME = {
    "spec.validation.deployment",
    "status.activePlan.digest",
    "status.candidatePlan.digest",
    *(f"status.conditions[].{f}" for f in CONDITION),
}

# operator-api.md, "RuntimeRollout": spec written by the operator, spec written by people, status
RUNTIME_ROLLOUT = {
    "spec.runtime.name", "spec.runtime.uid", "spec.from.digest", "spec.to.digest", "spec.deadline",
    "spec.approvalRequired", "spec.startingInventory.releases", "spec.startingInventory.digest",
    "spec.assessment.digest",
    *(f"spec.steps[].{f}" for f in ("release", "operation", "verdict", "changesCRDs")),
    *(f"spec.records[].{f}" for f in ("release", "summary", "precondition")),
    *(f"spec.records[].{list_}[].{f}" for list_ in ("beforeApply", "afterApply") for f in RECORD_STEP),
    *(f"spec.approval.{f}" for f in ("user", "expires", "reason")),
    *(f"spec.revocation.{f}" for f in ("user", "time", "reason")),
    *(f"spec.acknowledgements[].{f}" for f in ("release", "user", "time")),
    "status.phase", "status.outcome", "status.message", "status.awaitingRelease",
    *(f"status.steps[].{f}" for f in ("release", "state", "message")),
    *(f"status.conditions[].{f}" for f in CONDITION),
}

OBJECT = {"apiVersion", "kind", "metadata"}


def fields(node: dict[str, Any], path: str = "") -> set[str]:
    """Every leaf of a structural schema, as a dotted path (`[]` for the items of a list)."""
    if node.get("type") == "object" and "properties" in node:
        return {f for key, child in node["properties"].items() for f in fields(child, f"{path}.{key}".lstrip("."))}
    if node.get("type") == "array":
        return fields(node["items"], f"{path}[]")
    return {path}


def crd(name: str) -> dict[str, Any]:
    with open(MANIFESTS / name, encoding="utf-8") as file:
        return yaml.safe_load(file)  # type: ignore[no-any-return]


def schema(name: str) -> set[str]:
    (version,) = crd(name)["spec"]["versions"]
    return fields(version["schema"]["openAPIV3Schema"])


def test_the_cluster_runtime_crd_has_exactly_the_specs_fields() -> None:
    compare(sorted(schema("10-crd-clusterruntimes.yaml")), expected=sorted(CLUSTER_RUNTIME | OBJECT))


def test_the_runtime_rollout_crd_has_exactly_the_specs_fields() -> None:
    compare(sorted(schema("11-crd-runtimerollouts.yaml")), expected=sorted(RUNTIME_ROLLOUT | OBJECT))


def test_the_field_walk_sees_an_added_field() -> None:
    """The check itself: a field like 0.1.0's spec.overrides is found, so the comparison above can fail."""
    version = crd("11-crd-runtimerollouts.yaml")["spec"]["versions"][0]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["overrides"] = {"type": "array", "items": {"type": "object", "properties": {
        "user": {"type": "string"}}}}
    compare(fields(version["schema"]["openAPIV3Schema"]) - RUNTIME_ROLLOUT - OBJECT,
            expected={"spec.overrides[].user"})


def test_no_rule_of_the_crds_or_the_admission_policy_names_a_field_the_spec_lacks() -> None:
    for name in ("11-crd-runtimerollouts.yaml", "20-admission-policy.yaml"):
        text = (MANIFESTS / name).read_text(encoding="utf-8")
        assert "overrides" not in text and "aicr.run/" not in text, name


def test_the_top_level_holds_only_the_operators_objects() -> None:
    """CRDs, admission policy, RBAC and the operator namespace; the project's own objects live in folders."""
    compare(sorted(p.name for p in MANIFESTS.iterdir() if p.is_file()), expected=[
        "00-namespace.yaml", "10-crd-clusterruntimes.yaml", "11-crd-runtimerollouts.yaml",
        "20-admission-policy.yaml", "30-rbac.yaml"])
    kinds = {doc["kind"] for p in MANIFESTS.glob("*.yaml")
             for doc in yaml.safe_load_all(p.read_text(encoding="utf-8")) if doc}
    compare(sorted(kinds), expected=sorted({
        "Namespace", "CustomResourceDefinition", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
        "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}))
