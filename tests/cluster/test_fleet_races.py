"""A fleet write's sessions set up at once: 16 contexts of one real cluster, client-certificate users.

Two races refused random clusters at `--parallel 16`: the table of which distribution declares
each policy plugin was published empty and then filled (a policy file's `required: [{name,
distribution}]` then failed closed, "comes from unknown"), and the client's key files were named
before they were written ("[SSL] PEM lib"). Each run is a new process, so the first look-ups race
again: the write is run many times, and every cluster must be approved (a dry run: nothing written).
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import envtest
import pytest
import yaml
from testfixtures import compare

from support.harness import Aicr

RUNS = 10
CONTEXTS = [f"c-{i:02d}" for i in range(16)]
USERS = ("alice", "bob", "carol")  # approvers; most contexts share a certificate (the client's file for its content)


@pytest.fixture
def required_policy(plane: envtest.ControlPlane) -> Iterator[None]:
    """The cluster's policy file requires a built-in policy from its documented distribution."""
    body = yaml.safe_dump({"apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicy",
                           "required": [{"name": "change-window", "distribution": "kubectl-aicr"},
                                        {"name": "four-eyes", "distribution": "kubectl-aicr"}],
                           "policies": {}})
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"policy.yaml": body},
                 "metadata": {"name": "aicr-approval-policy", "namespace": "aicr-system"}}
    plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
    plane.kubectl("create", "-f", "-", input=json.dumps(configmap))
    yield
    plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")


def sixteen_contexts(plane: envtest.ControlPlane, folder: Path) -> Path:
    cluster = {"name": "one", "cluster": {"server": plane.url,
                                          "certificate-authority-data": envtest.b64(plane.server_ca_pem)}}
    users, contexts = [], []
    for i, context in enumerate(CONTEXTS):
        pair = plane.users[USERS[i % len(USERS)]]
        users.append({"name": f"u-{context}", "user": {"client-certificate-data": envtest.b64(pair.cert_pem),
                                                       "client-key-data": envtest.b64(pair.key_pem)}})
        contexts.append({"name": context, "context": {"cluster": "one", "user": f"u-{context}"}})
    path = folder / "kubeconfig"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": [cluster], "users": users,
                                "contexts": contexts, "current-context": CONTEXTS[0]}))
    path.chmod(0o600)
    return path


def test_a_fleet_write_at_parallel_16_approves_every_cluster_every_time(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, required_policy: None, tmp_path: Path) -> None:
    digest = envtest.random_digest()
    seed.rollout(to=digest)
    kubeconfig = sixteen_contexts(plane, tmp_path)
    failures: list[str] = []
    for run in range(RUNS):
        proc = aicr("approve", "--plan", digest, "--contexts", "c-*", "--parallel", "16", "--dry-run=server",
                    "--reason", "CHG-28 race", "--yes", "-o", "json", kubeconfig=kubeconfig, timeout=120)
        document = json.loads(proc.stdout) if proc.stdout.strip() else {"items": [], "errors": []}
        results = {i["context"]: i["result"] for i in document["items"]}
        if proc.returncode != 0 or results != {c: "approved" for c in CONTEXTS}:
            failures.append(f"run {run}: exit {proc.returncode}, {sorted(set(results.values()))}, "
                            f"{proc.stderr.strip()[:600]}")
    compare(failures, expected=[])
