"""The control plane is real: RBAC, CRD rules and the admission policy bite ordinary users."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import envtest
import pytest
from testfixtures import compare


def approval(user: str) -> str:
    return json.dumps({"spec": {"approval": {"user": user, "expires": "2099-01-01T00:00:00Z", "reason": "test"}}})


def patch(plane: envtest.ControlPlane, user: str, name: str, body: str, *extra: str):  # type: ignore[no-untyped-def]
    return plane.kubectl("patch", "runtimerollout", name, "--type=merge", f"-p={body}", *extra,
                         user=user, check=False)


def test_an_approver_can_approve_as_themselves(plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout()
    proc = patch(plane, "alice", name, approval("alice"))
    compare(proc.returncode, expected=0, suffix=proc.stderr)


def test_writing_another_users_name_is_denied_by_the_policy(plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    proc = patch(plane, "alice", seed.rollout(), approval("bob"))
    assert proc.returncode != 0
    assert "ValidatingAdmissionPolicy" in proc.stderr and "must be the requesting user alice" in proc.stderr


def test_a_viewer_cannot_patch(plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    proc = patch(plane, "victor", seed.rollout(), approval("victor"))
    assert proc.returncode != 0
    assert 'User "victor" cannot patch resource "runtimerollouts"' in proc.stderr, proc.stderr


def test_a_patcher_who_is_no_approver_is_stopped_by_the_authorizer_check(
        plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    proc = patch(plane, "pat", seed.rollout(), approval("pat"))
    assert proc.returncode != 0
    assert "may not approve, revoke or acknowledge" in proc.stderr, proc.stderr


def test_an_approval_can_be_neither_changed_nor_removed(plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout()
    compare(patch(plane, "alice", name, approval("alice")).returncode, expected=0)
    changed = json.dumps({"spec": {"approval": {"reason": "changed"}}})
    proc = patch(plane, "alice", name, changed)
    assert "spec.approval is set once" in proc.stderr, proc.stderr
    proc = patch(plane, "alice", name, json.dumps({"spec": {"approval": None}}))
    assert "spec.approval is set once" in proc.stderr, proc.stderr


def test_revoking_a_validating_rollout_is_denied(plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout(phase="Validating", approval={"user": "bob", "expires": "2099-01-01T00:00:00Z",
                                                      "reason": "ok"})
    body = json.dumps({"spec": {"revocation": {"user": "alice", "time": "2026-01-01T00:00:00Z", "reason": "no"}}})
    proc = patch(plane, "alice", name, body)
    assert "a rollout in Validating cannot be revoked" in proc.stderr, proc.stderr


@pytest.mark.parametrize("user,groups", [("alice", ["aicr:approvers"]), ("victor", ["aicr:viewers"])])
def test_whoami_reports_the_certificate_names(plane: envtest.ControlPlane, user: str, groups: list[str]) -> None:
    proc = plane.kubectl("auth", "whoami", "-o", "json", user=user)
    info = json.loads(proc.stdout)["status"]["userInfo"]
    compare((info["username"], sorted(info["groups"])), expected=(user, sorted(groups + ["system:authenticated"])))


def test_self_subject_review_through_the_python_client(plane: envtest.ControlPlane) -> None:
    from kubernetes import client
    review = client.AuthenticationV1Api(plane.api("bob")).create_self_subject_review(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    compare(review.status.user_info.username, expected="bob")


def test_short_name(plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout()
    proc = plane.kubectl("get", "aicrro", name, user="victor")
    assert name in proc.stdout and "AwaitingApproval" in proc.stdout


def test_system_masters_bypasses_the_authorizer_check(plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    """Why tests act as ordinary users: admin passes the approver check without being an approver."""
    proc = patch(plane, "admin", seed.rollout(), approval("admin"))
    compare(proc.returncode, expected=0, suffix=proc.stderr)


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_stop_leaves_no_process_behind(plane: envtest.ControlPlane) -> None:
    own = envtest.ControlPlane().start()
    pids = [p.pid for p in own.procs]
    compare([_alive(pid) for pid in pids], expected=[True, True])
    own.stop()
    compare([_alive(pid) for pid in pids], expected=[False, False])
    assert not own.workdir.exists()


def test_a_killed_parent_takes_the_control_plane_with_it(plane: envtest.ControlPlane) -> None:
    script = ("import sys, time; sys.path.insert(0, 'tools'); import envtest; p = envtest.ControlPlane().start(); "
              "print(p.workdir, ' '.join(str(x.pid) for x in p.procs), flush=True); time.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              cwd=envtest.ROOT)
    workdir, *words = parent.stdout.readline().split()  # type: ignore[union-attr]
    pids = [int(x) for x in words]
    compare(len(pids), expected=2)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    ends = time.monotonic() + 20
    while any(_alive(pid) for pid in pids) and time.monotonic() < ends:
        time.sleep(0.2)
    compare([_alive(pid) for pid in pids], expected=[False, False])
    shutil.rmtree(workdir, ignore_errors=True)  # the killed parent could not
