"""What an approver meets (issue 14, items 9-11) through the real `kubectl aicr` on the real control plane."""
from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import envtest
from testfixtures import compare

from support.harness import Aicr, error_line


def as_user(aicr: Aicr, plane: envtest.ControlPlane, user: str, *args: str,
            **env: str) -> subprocess.CompletedProcess[str]:
    return aicr(*args, kubeconfig=plane.kubeconfig_for(user), **env)


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    return proc


# -- item 9: a report of the wrong shape is invalid, everywhere --------------------------------------

def test_a_report_that_is_a_json_array_is_invalid(aicr: Aicr, plane: envtest.ControlPlane,
                                                  seed: envtest.Seeder) -> None:
    name = seed.rollout(report="[]")
    described = json.loads(ok(as_user(aicr, plane, "victor", "describe", name, "-o", "json")).stdout)
    compare((described["assessment"]["status"], described["assessment"]["error"]),
            expected=("invalid", "the assessment report is a JSON array, not an object"))
    text = ok(as_user(aicr, plane, "victor", "describe", name)).stdout
    assert "(verified, but not valid JSON: the assessment report is a JSON array, not an object)" in text, text
    items = json.loads(ok(as_user(aicr, plane, "victor", "list", "-o", "json")).stdout)["items"]
    compare([i["assessment"]["status"] for i in items if i["name"] == name], expected=["invalid"])


def test_a_report_whose_components_are_no_objects_is_invalid(aicr: Aicr, plane: envtest.ControlPlane,
                                                             seed: envtest.Seeder) -> None:
    name = seed.rollout(report='{"components": ["gpu-operator"]}')
    items = json.loads(ok(as_user(aicr, plane, "victor", "list", "-o", "json")).stdout)["items"]
    compare([i["assessment"]["status"] for i in items if i["name"] == name], expected=["invalid"])


# -- item 10: -o name prints the object the result is about ---------------------------------------------

def test_o_name_of_every_write_and_of_reproduce_and_version(aicr: Aicr, plane: envtest.ControlPlane,
                                                             seed: envtest.Seeder, tmp_path: Path) -> None:
    name = seed.rollout()
    reference = f"runtimerollout.operator.aicr.run/{name}\n"
    for args in (["approve", name, "--reason", "window", "--expires", "1h"], ["revoke", name, "--reason", "oops"],
                 ["describe", name]):
        compare(ok(as_user(aicr, plane, "alice", *args, "-o", "name")).stdout, expected=reference)
    other = seed.rollout()
    proc = ok(as_user(aicr, plane, "alice", "policy", "check", other, "--reason", "r", "-o", "name"))
    compare(proc.stdout, expected=f"runtimerollout.operator.aicr.run/{other}\n")
    acknowledging = seed.rollout(phase="AwaitingAcknowledgement", awaiting_release="nvsentinel",
                                 approval={"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "r"})
    proc = ok(as_user(aicr, plane, "alice", "acknowledge", acknowledging, "-o", "name"))
    compare(proc.stdout, expected=f"runtimerollout.operator.aicr.run/{acknowledging}\n")
    digest = seed.plan()
    proc = ok(as_user(aicr, plane, "alice", "reproduce", digest, "--dir", str(tmp_path / "r"), "-o", "name"))
    compare(proc.stdout, expected=f"configmap/aicr-plan-{digest[7:23]}\n")
    lines = ok(as_user(aicr, plane, "victor", "version", "-o", "name")).stdout.splitlines()
    compare((len(lines), lines[0].startswith("clientversion/"), lines[1].startswith("serverversion/v1.")),
            expected=(2, True, True), suffix=str(lines))


# -- item 11: what an approver reads -------------------------------------------------------------------

def test_list_fits_120_columns(aicr: Aicr, plane: envtest.ControlPlane) -> None:
    """The demo's rollouts, listed alone (a label of their own: the session's plane holds what other tests seeded,
    a 70-year approval among them): every line of `list` fits 120 columns."""
    mine = envtest.random_digest()[7:23]
    names = envtest.seed_demo(plane, labels={"aicr-test/demo": mine})
    proc = ok(as_user(aicr, plane, "alice", "list", "-l", f"aicr-test/demo={mine}"))
    lines = [line for line in proc.stdout.splitlines()[1:] if line.split()[0] in names.values()]
    compare(len(lines), expected=3)  # the ended one is not listed
    compare([line for line in proc.stdout.splitlines() if len(line) > 120], expected=[])
    acknowledging = next(line for line in lines if line.startswith(names["acknowledgement"]))
    assert "bob, 1h59m left" in acknowledging or "bob, 2h left" in acknowledging, acknowledging


def test_describe_shows_time_left_step_messages_conditions_and_acknowledgement_times(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    deadline = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(hours=7, minutes=56, seconds=30)
    name = seed.rollout(deadline=deadline, phase="AwaitingAcknowledgement", awaiting_release="nvsentinel",
                        approval={"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "r"},
                        acknowledgements=[{"release": "gpu-operator", "user": "carol",
                                           "time": "2026-11-29T22:00:00Z"}])
    seed.set_rollout_status(name, {
        "steps": [{"release": "gpu-operator", "state": "Ready", "message": "driver 580 on 8 of 8 nodes"},
                  {"release": "nvsentinel", "state": "AwaitingAcknowledgement"}],
        "conditions": [{"type": "Ready", "status": "False", "reason": "AwaitingAcknowledgement",
                        "message": "waiting for nvsentinel", "lastTransitionTime": "2026-11-29T23:00:00Z"}]})
    text = ok(as_user(aicr, plane, "victor", "describe", name)).stdout
    for expected in (f"Deadline:     {envtest.rfc3339(deadline)} (in 7h56m)",
                     "  1  gpu-operator  Upgrade    manual      yes   Ready                    "
                     "driver 580 on 8 of 8 nodes",
                     "Acknowledged: gpu-operator by carol at 2026-11-29T22:00:00Z",
                     "  Ready  False   AwaitingAcknowledgement  2026-11-29T23:00:00Z  waiting for nvsentinel"):
        assert expected in text.splitlines(), (expected, text)
    doc = json.loads(ok(as_user(aicr, plane, "victor", "describe", name, "-o", "json")).stdout)
    compare((doc["conditions"], doc["steps"][0]["message"]), expected=(
        [{"type": "Ready", "status": "False", "reason": "AwaitingAcknowledgement", "message": "waiting for nvsentinel",
          "lastTransitionTime": "2026-11-29T23:00:00Z"}], "driver 580 on 8 of 8 nodes"))


def test_list_filters_by_phase(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    approved = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "r"}
    waiting = seed.rollout()
    acknowledging = seed.rollout(phase="AwaitingAcknowledgement", approval=approved, awaiting_release="nvsentinel")
    ended = seed.rollout(phase="Ended", outcome="Succeeded", approval=approved)

    def listed(*args: str) -> dict[str, str]:
        items = json.loads(ok(as_user(aicr, plane, "victor", "list", "-o", "json", *args)).stdout)["items"]
        return {i["name"]: i["phase"] for i in items if i["name"] in (waiting, acknowledging, ended)}

    compare(listed("--phase", "AwaitingAcknowledgement"), expected={acknowledging: "AwaitingAcknowledgement"})
    compare(listed("--phase", "Ended"), expected={ended: "Ended"})  # no --all needed to ask for ended ones
    compare(listed("--phase", "AwaitingApproval", "--phase", "Ended"),
            expected={waiting: "AwaitingApproval", ended: "Ended"})
    proc = as_user(aicr, plane, "victor", "list", "--phase", "awaitingapproval")
    compare((proc.returncode, error_line(proc)), expected=(
        2, "error: [USAGE] argument --phase: unknown phase 'awaitingapproval': use one of Pending, AwaitingApproval, "
           "Progressing, AwaitingAcknowledgement, Validating, Ended"))


def test_whoami_says_who_you_are_and_whether_you_may_approve(aicr: Aicr, plane: envtest.ControlPlane,
                                                             tmp_path: Path) -> None:
    log = tmp_path / "requests"
    doc = json.loads(ok(as_user(aicr, plane, "alice", "whoami", "-o", "json", AICR_REQUEST_LOG=str(log))).stdout)
    compare(doc, expected={"kind": "WhoAmI", "username": "alice", "groups": ["aicr:approvers", "system:authenticated"],
                           "mayApprove": True, "approverPermission": "update runtimerollouts/approve"})
    compare(log.read_text().splitlines(), expected=["POST /apis/authentication.k8s.io/v1/selfsubjectreviews",
                                                    "POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews"])
    text = ok(as_user(aicr, plane, "victor", "whoami")).stdout
    compare(text.splitlines()[:3], expected=[
        "Username:     victor", "Groups:       aicr:viewers, system:authenticated",
        "May approve:  no (update runtimerollouts/approve, as RBAC says; the approval policies decide each approval)"])
    compare(ok(as_user(aicr, plane, "bob", "whoami", "-o", "name")).stdout, expected="user/bob\n")
    # As kubectl auth whoami says: the same user under impersonation
    proc = ok(as_user(aicr, plane, "admin", "whoami", "--as", "carol", "--as-group", "aicr:approvers", "-o", "json"))
    compare((json.loads(proc.stdout)["username"], json.loads(proc.stdout)["mayApprove"]), expected=("carol", True))
    plugins = json.loads(ok(as_user(aicr, plane, "alice", "plugins", "-o", "json")).stdout)["plugins"]
    compare([(p["distribution"], p["target"]) for p in plugins
             if (p["group"], p["name"]) == ("aicr.commands", "whoami")],
            expected=[("kubectl-aicr", "aicr_commands.whoami:WhoAmI")])


def test_policy_check_without_reason_checks_all_but_the_reason_rules(aicr: Aicr, plane: envtest.ControlPlane,
                                                                      seed: envtest.Seeder) -> None:
    policy = {"apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicy", "policies": {
        "reason-format": {"pattern": "^CHG-"}, "max-approval": {"max": "1h"}}}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "aicr-approval-policy", "namespace": "aicr-system"},
                 "data": {"policy.yaml": json.dumps(policy)}}
    plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
    plane.kubectl("create", "-f", "-", input=json.dumps(configmap))
    try:
        name = seed.rollout()
        proc = as_user(aicr, plane, "alice", "policy", "check", name, "--expires", "2h")
        compare(proc.returncode, expected=1, suffix=proc.stderr)
        lines = proc.stdout.splitlines()
        assert any(line.startswith("deny     max-approval") for line in lines), proc.stdout
        assert any(line.startswith("skipped  reason-format") and "not checked: it reads the reason, which was not "
                   "given (pass --reason TEXT)" in line for line in lines), proc.stdout
        compare(lines[-2:], expected=[
            "checked without --reason: not checked: reason-format (they read the reason); pass --reason to check them",
            "approve would be refused: [POLICY_DENIED] 1 policy violation(s); nothing was written"])
        doc = json.loads(ok(as_user(aicr, plane, "alice", "policy", "check", name, "--expires", "30m",
                                    "-o", "json")).stdout)
        compare((doc["withoutReason"], doc["allowed"], {p["name"]: p["verdict"] for p in doc["policies"]}),
                expected=(True, True, {"reason-format": "skipped", "max-approval": "allow"}))
        # With --reason, the reason rules run as the real command runs them
        proc = as_user(aicr, plane, "alice", "policy", "check", name, "--expires", "30m", "--reason", "no ticket")
        compare(proc.returncode, expected=1, suffix=proc.stdout)
        assert "checked without --reason" not in proc.stdout, proc.stdout
    finally:
        plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
