"""Where the policy file comes from: only the cluster's admins decide it, never an approver's flag or environment.

An approver who may read ConfigMaps in a team namespace must not get past the
cluster's strict policy by pointing `kubectl aicr` there (issue 14, item 1):
not with `--operator-namespace`, not with a kubeconfig context whose default
namespace is that one, not with environment variables. Every write records
which file decided it, and describe shows that record.
"""
from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import envtest
import pytest
import yaml
from testfixtures import compare

from support.harness import Aicr, error_line
from support.windows import windows_except_now

HEAD = {"apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicy"}
CLUSTER_FILE = "ConfigMap aicr-system/aicr-approval-policy (key policy.yaml)"
TEAM_FILE = "ConfigMap team/aicr-approval-policy (key policy.yaml)"
LOCATION = "aicr.run/policy-namespace"  # on the ClusterRuntime: set by cluster admins only
BOB_APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "CHG-1 maintenance"}


def policy_configmap(namespace: str, policies: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "aicr-approval-policy", "namespace": namespace},
            "data": {"policy.yaml": yaml.safe_dump({**HEAD, "policies": policies})}}


@pytest.fixture
def strict_cluster(plane: envtest.ControlPlane) -> Iterator[None]:
    """A strict policy where the cluster keeps it, and a lenient one in a team namespace approvers may read."""
    strict = {"change-window": {"windows": windows_except_now()}, "four-eyes": {}}
    team_reader = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "team-configmaps", "namespace": "team"},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "team-configmaps", "namespace": "team"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "team-configmaps"},
         "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "aicr:approvers"}]},
        policy_configmap("team", {}),
    ]
    plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
    plane.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                        "items": [policy_configmap("aicr-system", strict),
                                                                  *team_reader]}))
    yield
    plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
    plane.kubectl("annotate", "clusterruntime", "cluster", f"{LOCATION}-", check=False)
    plane.kubectl("delete", "namespace", "team", "--ignore-not-found", "--wait=false")


def kubeconfig_in_namespace(plane: envtest.ControlPlane, user: str, namespace: str, path: Path) -> Path:
    """The user's kubeconfig, its context's default namespace set to `namespace` (as `kubens` would)."""
    config = json.loads(plane.kubeconfig_for(user).read_text())
    for context in config["contexts"]:
        context["context"]["namespace"] = namespace
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


def refused_by_the_clusters_file(proc: subprocess.CompletedProcess[str], policy: str) -> None:
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    assert error_line(proc).startswith("error: [POLICY_DENIED] "), proc.stderr
    assert f"  {policy}: " in proc.stderr, proc.stderr


def spec(plane: envtest.ControlPlane, name: str) -> dict[str, Any]:
    return json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["spec"]  # type: ignore[no-any-return]


def test_no_flag_context_or_environment_of_the_approver_moves_the_policy_file(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, strict_cluster: None, tmp_path: Path) -> None:
    name = seed.rollout()
    alice = plane.kubeconfig_for("alice")
    in_team = kubeconfig_in_namespace(plane, "alice", "team", tmp_path / "alice-in-team")
    approve = ("approve", name, "--reason", "CHG-1 upgrade")
    attempts = {
        "--operator-namespace": aicr(*approve, "--operator-namespace", "team", kubeconfig=alice),
        "context namespace": aicr(*approve, kubeconfig=in_team),
        "environment": aicr(*approve, kubeconfig=in_team, AICR_OPERATOR_NAMESPACE="team", POD_NAMESPACE="team",
                            KUBECTL_NAMESPACE="team", AICR_POLICY_NAMESPACE="team"),
    }
    for how, proc in attempts.items():
        refused_by_the_clusters_file(proc, "change-window")
        assert TEAM_FILE not in proc.stderr, (how, proc.stderr)
    compare(spec(plane, name).get("approval"), expected=None)
    check = json.loads(aicr("policy", "check", name, "--reason", "x", "--operator-namespace", "team", "-o", "json",
                            kubeconfig=in_team).stdout)
    compare((check["allowed"], check["policyFile"]["source"]), expected=(False, CLUSTER_FILE))

    # Four eyes: bob approved, so bob may not acknowledge, wherever he points.
    waiting = seed.rollout(phase="AwaitingAcknowledgement", approval=BOB_APPROVED, awaiting_release="nvsentinel")
    bob_in_team = kubeconfig_in_namespace(plane, "bob", "team", tmp_path / "bob-in-team")
    proc = aicr("acknowledge", waiting, "--operator-namespace", "team", kubeconfig=bob_in_team)
    refused_by_the_clusters_file(proc, "four-eyes")
    compare(spec(plane, waiting).get("acknowledgements"), expected=None)


def test_an_admin_moves_the_policy_file_and_every_write_records_which_file_decided_it(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, strict_cluster: None) -> None:
    name = seed.rollout()
    alice = plane.kubeconfig_for("alice")
    seed.runtime()
    plane.kubectl("annotate", "--overwrite", "clusterruntime", "cluster", f"{LOCATION}=team")
    proc = aicr("approve", name, "--reason", "CHG-1 upgrade", kubeconfig=alice)
    compare(proc.returncode, expected=0, suffix=proc.stderr)  # the team's lenient file decides now: the admin said so
    team_text = json.loads(plane.kubectl("get", "configmap", "-n", "team", "aicr-approval-policy", "-o",
                                         "json").stdout)["data"]["policy.yaml"]
    doc = json.loads(aicr("describe", name, "-o", "json", kubeconfig=alice).stdout)
    (record,) = doc["policyDecisions"]
    compare({k: record[k] for k in ("user", "action", "location", "digest")}, expected={
        "user": "alice", "action": "approve", "location": TEAM_FILE, "digest": envtest.digest_of(team_text)})
    text = aicr("describe", name, kubeconfig=alice).stdout
    assert f"Decided by:   approve by alice under {TEAM_FILE} {envtest.digest_of(team_text)[:23]}" in text, text

    # An approver cannot make the pointer say otherwise, nor remove it.
    for verb in (["annotate", "clusterruntime", "cluster", f"{LOCATION}-"],
                 ["annotate", "--overwrite", "clusterruntime", "cluster", f"{LOCATION}=elsewhere"],
                 ["delete", "clusterruntime", "cluster"]):
        denied = plane.kubectl(*verb, user="alice", check=False)
        assert denied.returncode != 0 and "forbidden" in denied.stderr, denied.stderr


def test_a_pointer_that_names_no_namespace_refuses_every_write(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, strict_cluster: None) -> None:
    seed.runtime()
    plane.kubectl("annotate", "--overwrite", "clusterruntime", "cluster", f"{LOCATION}=Team_A")
    proc = aicr("approve", seed.rollout(), "--reason", "CHG-1 upgrade", kubeconfig=plane.kubeconfig_for("alice"))
    compare(error_line(proc), expected="error: [POLICY_ERROR] the ClusterRuntime cluster's annotation "
                                       "aicr.run/policy-namespace is no namespace name ('Team_A'); refusing (fail "
                                       "closed)", suffix=proc.stderr)


def test_an_approver_who_cannot_read_the_runtime_is_refused(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, strict_cluster: None) -> None:
    """Not knowing where the rules are must not mean having none, nor reading them elsewhere."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "test-no-runtime"},
            "rules": [{"apiGroups": ["operator.aicr.run"], "resources": ["runtimerollouts"], "verbs": ["get", "patch"]},
                      {"apiGroups": ["operator.aicr.run"], "resources": ["runtimerollouts/approve"],
                       "verbs": ["update"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "test-no-runtime"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "test-no-runtime"},
               "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "test:no-runtime"}]}
    plane.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [role, binding]}))
    try:
        name = seed.rollout()
        proc = aicr("approve", name, "--reason", "CHG-1 upgrade", "--as", "carol", "--as-group", "test:no-runtime",
                    kubeconfig=plane.kubeconfig_for("admin"))
        compare(proc.returncode, expected=1, suffix=proc.stderr)
        assert error_line(proc).startswith("error: [POLICY_ERROR] cannot read the ClusterRuntime cluster, whose "
                                           "annotation aicr.run/policy-namespace says where the policy file lives: "), \
            proc.stderr
        compare(spec(plane, name).get("approval"), expected=None)
    finally:
        plane.kubectl("delete", "clusterrolebinding,clusterrole", "test-no-runtime", "--ignore-not-found")
