"""`--dry-run=none|client|server` on approve, revoke and acknowledge, on the real control plane."""
from __future__ import annotations

import json
from pathlib import Path

import envtest
import pytest
from testfixtures import compare

from support.harness import Aicr, error_line

APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "maintenance window"}


def stored(plane: envtest.ControlPlane, name: str) -> dict:  # type: ignore[type-arg]
    return json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)


@pytest.mark.parametrize("user,code", [("victor", "FORBIDDEN"), ("pat", "ADMISSION_DENIED")])
def test_server_dry_run_is_refused_exactly_as_the_real_write(aicr: Aicr, plane: envtest.ControlPlane,
                                                             seed: envtest.Seeder, user: str, code: str) -> None:
    name = seed.rollout()
    before = stored(plane, name)["metadata"]["resourceVersion"]
    kubeconfig = plane.kubeconfig_for(user)
    dry = aicr("approve", name, "--reason", "x", "--expires", "1h", "--dry-run=server", kubeconfig=kubeconfig)
    real = aicr("approve", name, "--reason", "x", "--expires", "1h", kubeconfig=kubeconfig)
    compare((dry.returncode, dry.stdout, dry.stderr), expected=(real.returncode, real.stdout, real.stderr))
    assert error_line(dry).startswith(f"error: [{code}] "), dry.stderr
    compare(stored(plane, name)["metadata"]["resourceVersion"], expected=before)


def test_server_dry_run_as_an_approver_stores_nothing(aicr: Aicr, plane: envtest.ControlPlane,
                                                      seed: envtest.Seeder, tmp_path: Path) -> None:
    name = seed.rollout()
    before = stored(plane, name)
    log = tmp_path / "requests"
    proc = aicr("approve", name, "--reason", "window", "--expires", "2h", "--dry-run", "server",
                kubeconfig=plane.kubeconfig_for("alice"), AICR_REQUEST_LOG=str(log))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    assert proc.stdout.startswith(f"rollout {name} approved by alice until ") and \
        proc.stdout.endswith(" (server dry run)\n"), proc.stdout
    after = stored(plane, name)
    compare((after["metadata"]["resourceVersion"], "approval" in after["spec"]),
            expected=(before["metadata"]["resourceVersion"], False))
    assert f"PATCH /apis/operator.aicr.run/v1alpha1/runtimerollouts/{name}?dryRun=All" in log.read_text()
    # The server's rules still decide: revoking in Validating is refused by the admission policy.
    validating = seed.rollout(phase="Validating", approval=APPROVED)
    proc = aicr("revoke", validating, "--reason", "x", "--dry-run=server", kubeconfig=plane.kubeconfig_for("alice"))
    assert "a rollout in Validating cannot be revoked" in error_line(proc), proc.stderr


def test_server_dry_run_of_revoke_and_acknowledge(aicr: Aicr, plane: envtest.ControlPlane,
                                                  seed: envtest.Seeder) -> None:
    approved = seed.rollout(phase="Progressing", approval=APPROVED)
    waiting = seed.rollout(phase="AwaitingAcknowledgement", approval=APPROVED, awaiting_release="nvsentinel")
    versions = {n: stored(plane, n)["metadata"]["resourceVersion"] for n in (approved, waiting)}
    alice = plane.kubeconfig_for("alice")
    proc = aicr("revoke", approved, "--reason", "stop", "--dry-run=server", "-o", "json", kubeconfig=alice)
    compare((proc.returncode, json.loads(proc.stdout)["dryRun"]), expected=(0, "server"), suffix=proc.stderr)
    proc = aicr("acknowledge", waiting, "--dry-run=server", kubeconfig=alice)
    compare(proc.stdout, expected=f"rollout {waiting}: nvsentinel acknowledged by alice (server dry run)\n")
    compare({n: stored(plane, n)["metadata"]["resourceVersion"] for n in versions}, expected=versions)


def test_client_dry_run_checks_permissions_and_sends_no_write(aicr: Aicr, plane: envtest.ControlPlane,
                                                              seed: envtest.Seeder, tmp_path: Path) -> None:
    name = seed.rollout()
    version = stored(plane, name)["metadata"]["resourceVersion"]
    log = tmp_path / "requests"
    proc = aicr("approve", name, "--reason", "window", "--dry-run=client", kubeconfig=plane.kubeconfig_for("alice"),
                AICR_REQUEST_LOG=str(log))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"rollout {name} approved by alice until ") and lines[0].endswith("(client dry run)")
    compare(lines[1], expected=f"  would send: PATCH /apis/operator.aicr.run/v1alpha1/runtimerollouts/{name}")
    body = json.loads(lines[2])
    (decided,) = json.loads(body["metadata"]["annotations"]["aicr.run/policy-decisions"])  # which file decided
    compare((body["metadata"]["resourceVersion"], body["spec"]["approval"]["user"], body["spec"]["approval"]["reason"],
             decided["location"], decided["digest"]),
            expected=(version, "alice", "window", "ConfigMap aicr-system/aicr-approval-policy (key policy.yaml)", None))
    requests = log.read_text().splitlines()
    compare([r.split("?")[0] for r in requests], expected=[
        "POST /apis/authentication.k8s.io/v1/selfsubjectreviews",
        f"GET /apis/operator.aicr.run/v1alpha1/runtimerollouts/{name}",
        "GET /apis/operator.aicr.run/v1alpha1/clusterruntimes/cluster",  # where the cluster keeps them,
        "GET /api/v1/namespaces/aicr-system/configmaps/aicr-approval-policy",  # the policies, as for real
        "POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        "POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews"])
    compare(stored(plane, name)["metadata"]["resourceVersion"], expected=version)


def test_client_dry_run_says_what_is_not_allowed(aicr: Aicr, plane: envtest.ControlPlane,
                                                 seed: envtest.Seeder) -> None:
    name = seed.rollout()
    proc = aicr("approve", name, "--reason", "x", "--dry-run=client", kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, proc.stdout), expected=(1, ""))
    compare(proc.stderr.splitlines(), expected=[
        f"error: [FORBIDDEN] (client dry run) victor may not write rollout {name}; the API server would refuse",
        "  not allowed: update runtimerollouts/approve (what approving, revoking and acknowledging need)",
        "  not allowed: patch runtimerollouts"])
    proc = aicr("approve", name, "--reason", "x", "--dry-run=client", kubeconfig=plane.kubeconfig_for("pat"))
    compare(proc.stderr.splitlines()[1:], expected=[
        "  not allowed: update runtimerollouts/approve (what approving, revoking and acknowledging need)"])
    # The plugin's own refusals come first, as without --dry-run.
    ended = seed.rollout(phase="Ended", outcome="Failed")
    proc = aicr("approve", ended, "--reason", "x", "--dry-run=client", kubeconfig=plane.kubeconfig_for("alice"))
    assert error_line(proc).startswith("error: [ENDED] "), proc.stderr


def test_bad_mode_is_a_usage_error(aicr: Aicr) -> None:
    proc = aicr("approve", "rollout-0000000000000000-1", "--reason", "x", "--dry-run=maybe")
    compare((proc.returncode, error_line(proc)),
            expected=(2, "error: [USAGE] argument --dry-run: invalid value 'maybe': use none, client or server"))
