"""The built-in policy pack and the cluster's policy file, through the real `kubectl aicr` on the real control plane.

The policy file is the ConfigMap aicr-approval-policy in aicr-system, created
by the admin and read by ordinary users (alice, bob: approvers; victor:
viewer; pat: may patch rollouts but read no ConfigMap). Change windows are
chosen around the real current time, since the clock of a subprocess cannot
be frozen.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import envtest
import pytest
import yaml
from testfixtures import compare

from support.harness import Aicr, error_line
from support.plugin_env import EXAMPLES, PluginPath
from support.windows import ALL_DAYS, windows_around, windows_except_now

HEAD = {"apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicy"}
SOURCE = "ConfigMap aicr-system/aicr-approval-policy (key policy.yaml)"
BOB_APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "CHG-1 maintenance"}

SetPolicy = Callable[..., None]


@pytest.fixture
def set_policy(plane: envtest.ControlPlane) -> Iterator[SetPolicy]:
    """Publish a policy file in the cluster (as the admin); it is deleted after the test, whatever happens."""

    def publish(policies: dict[str, Any] | None = None, *, text: str | None = None, key: str = "policy.yaml",
                **top: Any) -> None:
        body = text if text is not None else yaml.safe_dump({**HEAD, **top, "policies": policies or {}})
        configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "aicr-approval-policy", "namespace": "aicr-system"},
                     "data": {key: body}}
        plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
        plane.kubectl("create", "-f", "-", input=json.dumps(configmap))

    yield publish
    plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")


def as_user(aicr: Aicr, plane: envtest.ControlPlane, user: str, *args: str) -> subprocess.CompletedProcess[str]:
    return aicr(*args, kubeconfig=plane.kubeconfig_for(user))


def overrides(plane: envtest.ControlPlane, name: str) -> list[dict[str, Any]]:
    """The override record of a rollout: the annotation kubectl aicr writes."""
    metadata = json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["metadata"]
    return json.loads(metadata.get("annotations", {}).get("aicr.run/overrides", "[]"))  # type: ignore[no-any-return]


def spec(plane: envtest.ControlPlane, name: str) -> dict[str, Any]:
    return json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["spec"]  # type: ignore[no-any-return]


def denied(proc: subprocess.CompletedProcess[str], *details: str, code: str = "POLICY_DENIED") -> None:
    """Refused with `code`; each of `details` starts one of the indented lines."""
    assert proc.returncode == 1, proc.stderr
    assert error_line(proc).startswith(f"error: [{code}] "), proc.stderr
    lines = [line.strip() for line in proc.stderr.splitlines()[1:]]
    for detail in details:
        assert any(line.startswith(detail) for line in lines), (detail, proc.stderr)


def ok(proc: subprocess.CompletedProcess[str]) -> None:
    compare(proc.returncode, expected=0, suffix=proc.stderr)








def now_plus(**delta: float) -> str:
    return envtest.rfc3339(dt.datetime.now(dt.timezone.utc) + dt.timedelta(**delta))


# -- change-window ---------------------------------------------------------------------------------

def test_change_window_refuses_outside_every_window_and_allows_inside(aicr: Aicr, plane: envtest.ControlPlane,
                                                                      seed: envtest.Seeder,
                                                                      set_policy: SetPolicy) -> None:
    name = seed.rollout()
    set_policy({"change-window": {"timeZone": "UTC", "windows": windows_except_now()}})
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1 upgrade")
    denied(proc, "change-window: it is ")
    assert "outside every change window (Mon,Tue,Wed,Thu,Fri,Sat,Sun" in proc.stderr
    compare(spec(plane, name).get("approval"), expected=None)  # nothing written
    set_policy({"change-window": {"timeZone": "Europe/Berlin",
                                  "windows": [{"days": ALL_DAYS, "from": "00:00", "to": "24:00"}]}})
    ok(as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1 upgrade"))
    compare(spec(plane, name)["approval"]["user"], expected="alice")


def test_a_blackout_refuses_even_inside_a_window(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                 set_policy: SetPolicy) -> None:
    name = seed.rollout()
    set_policy({"change-window": {
        "windows": [{"days": ALL_DAYS, "from": "00:00", "to": "24:00"}],
        "blackouts": [{"name": "incident freeze", "from": now_plus(hours=-1), "to": now_plus(hours=1)}]}})
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1")
    denied(proc, "change-window: it is ")
    assert "inside the blackout 'incident freeze'" in proc.stderr, proc.stderr


def test_the_approval_must_expire_inside_its_window(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                    set_policy: SetPolicy) -> None:
    name = seed.rollout()
    now = dt.datetime.now(dt.timezone.utc)
    set_policy({"change-window": {"expiryWithinWindow": True,
                                  "windows": windows_around(now - dt.timedelta(minutes=30),
                                                            now + dt.timedelta(minutes=90))}})
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1", "--expires", "3h")
    denied(proc, "change-window: the approval would expire at ")
    assert "after its window closes at" in proc.stderr and "pass --expires 1h" in proc.stderr, proc.stderr
    ok(as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1", "--expires", "45m"))


# -- max-approval, reason-format --------------------------------------------------------------------

def test_max_approval(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, set_policy: SetPolicy) -> None:
    name = seed.rollout()  # its deadline is 8 hours away
    set_policy({"max-approval": {"max": "1h"}})
    denied(as_user(aicr, plane, "alice", "approve", name, "--reason", "r", "--expires", "2h"),
           "max-approval: an approval of 2h is longer than the 1h allowed; pass --expires 1h or less")
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "r")  # until the deadline
    denied(proc)
    # 8h when the approval comes within the second the rollout was seeded in, else 7h59m and some seconds
    assert re.search(r"^  max-approval: an approval of (8h|7h59m\d*s?) is longer than the 1h allowed",
                     proc.stderr, re.M), proc.stderr
    ok(as_user(aicr, plane, "alice", "approve", name, "--reason", "r", "--expires", "30m"))


def test_reason_format(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, set_policy: SetPolicy) -> None:
    name = seed.rollout(approval=BOB_APPROVED, phase="Progressing")
    set_policy({"reason-format": {"pattern": "^CHG-[0-9]+", "message": "cite a change ticket (CHG-1234) first",
                                  "actions": ["approve", "revoke"]}})
    denied(as_user(aicr, plane, "alice", "revoke", name, "--reason", "stop it, see CHG-9"),
           "reason-format: cite a change ticket (CHG-1234) first")
    ok(as_user(aicr, plane, "alice", "revoke", name, "--reason", "CHG-9 stop it"))
    other = seed.rollout()
    denied(as_user(aicr, plane, "bob", "approve", other, "--reason", "go"), "reason-format: cite a change ticket")


# -- approver-groups, crd-changes -------------------------------------------------------------------

def test_approver_groups_per_action(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                    set_policy: SetPolicy) -> None:
    set_policy({"approver-groups": {"approve": ["platform-leads"], "revoke": ["aicr:approvers"]}})
    name = seed.rollout()
    denied(as_user(aicr, plane, "alice", "approve", name, "--reason", "r"),
           "approver-groups: to approve needs a member of platform-leads; alice is in aicr:approvers, "
           "system:authenticated")
    approved = seed.rollout(approval=BOB_APPROVED, phase="Progressing")
    ok(as_user(aicr, plane, "erin", "revoke", approved, "--reason", "r"))  # erin: exec credentials, aicr:approvers


def test_crd_changes_need_a_named_group(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                        set_policy: SetPolicy) -> None:
    set_policy({"crd-changes": {"groups": ["platform-leads"]}})
    denied(as_user(aicr, plane, "alice", "approve", seed.rollout(), "--reason", "r"),
           "crd-changes: a rollout that changes CRDs (gpu-operator) needs a member of platform-leads")
    no_crds = seed.rollout(steps=[{"release": "nvsentinel", "operation": "Install", "changesCRDs": False}],
                           step_states=[{"release": "nvsentinel", "state": "Pending"}])
    ok(as_user(aicr, plane, "alice", "approve", no_crds, "--reason", "r"))
    set_policy({"crd-changes": {"groups": ["aicr:approvers"]}})
    ok(as_user(aicr, plane, "alice", "approve", seed.rollout(), "--reason", "r"))


# -- assessment --------------------------------------------------------------------------------------

def report(*verdicts: str) -> str:
    return json.dumps({"components": [{"component": f"c{i}", "change": "version", "from": "1", "to": "2",
                                       "verdict": v} for i, v in enumerate(verdicts)], "summary": "s"}, indent=2)


@pytest.mark.parametrize("rollout,settings,expected", [
    ({"report": report("safe", "blocked")}, {}, "assessment: AICR's verified assessment refuses: c1: blocked"),
    ({"report": report("safe", "manual")}, {}, None),
    ({"report": report("manual")}, {"refuseVerdicts": ["manual", "unknown"]},
     "assessment: AICR's verified assessment refuses: c0: manual"),
    ({"report": report("safe"), "report_digest": envtest.random_digest()}, {},  # content does not match
     "assessment: the assessment report is unverified: its verdicts cannot be trusted"),
    ({"report_digest": envtest.random_digest()}, {"refuseMissing": True},
     "assessment: the rollout records a report that was not found"),
    ({}, {"refuseMissing": True}, "assessment: the rollout records no assessment report"),
    ({}, {}, None),
])
def test_assessment(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, set_policy: SetPolicy,
                    rollout: dict[str, Any], settings: dict[str, Any], expected: str | None) -> None:
    name = seed.rollout(**rollout)
    set_policy({"assessment": settings})
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "r")
    if expected is None:
        ok(proc)
    else:
        denied(proc, expected)


def test_an_unverified_report_may_be_allowed(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                             set_policy: SetPolicy) -> None:
    name = seed.rollout(report=report("blocked"), report_digest=envtest.random_digest())
    set_policy({"assessment": {"refuseUnverified": False}})
    ok(as_user(aicr, plane, "alice", "approve", name, "--reason", "r"))  # its "blocked" is not trusted either


# -- four-eyes -----------------------------------------------------------------------------------------

def test_four_eyes(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, set_policy: SetPolicy) -> None:
    set_policy({"four-eyes": {"revoke": True}})
    waiting = dict(phase="AwaitingAcknowledgement", approval=BOB_APPROVED, awaiting_release="nvsentinel",
                   step_states=[{"release": "gpu-operator", "state": "Ready"},
                                {"release": "nvsentinel", "state": "AwaitingAcknowledgement"}])
    name = seed.rollout(**waiting)  # type: ignore[arg-type]
    denied(as_user(aicr, plane, "bob", "acknowledge", name),
           "four-eyes: bob approved this rollout, so someone else must acknowledge it")
    ok(as_user(aicr, plane, "alice", "acknowledge", name))
    denied(as_user(aicr, plane, "bob", "revoke", name, "--reason", "r"), "four-eyes: bob approved this rollout")
    ok(as_user(aicr, plane, "alice", "revoke", name, "--reason", "r"))


# -- the file itself: broken, required plugins, warn mode, who may read it -------------------------------

def test_a_broken_file_refuses_every_write_and_says_where(aicr: Aicr, plane: envtest.ControlPlane,
                                                          seed: envtest.Seeder, set_policy: SetPolicy) -> None:
    set_policy({"change-window": {"windows": [{"days": ["Mon"], "from": "17:00", "to": "09:00"}]},
                "max-approval": {"max": "8h", "maximum": "9h"}})
    pending = seed.rollout()
    approved = seed.rollout(approval=BOB_APPROVED, phase="Progressing")
    for proc in (as_user(aicr, plane, "alice", "approve", pending, "--reason", "r"),
                 as_user(aicr, plane, "alice", "revoke", approved, "--reason", "r")):
        denied(proc, "policies.change-window.windows[0].to: 09:00 is not after from (17:00)",
               "policies.max-approval.maximum: unknown key", code="POLICY_ERROR")
        compare(error_line(proc), expected=f"error: [POLICY_ERROR] policy file {SOURCE} does not validate; refusing "
                                           "every approval, revocation and acknowledgement (fail closed)")
    compare((spec(plane, pending).get("approval"), spec(plane, approved).get("revocation")), expected=(None, None))
    ok(as_user(aicr, plane, "alice", "describe", pending))  # reading is unaffected
    set_policy(text="apiVersion: aicr.run/v1alpha1\nkind: ApprovalPolicy\npolicies:\n"
                    "  four-eyes: {}\n  four-eyes: {}\n")
    denied(as_user(aicr, plane, "alice", "approve", pending, "--reason", "r"),
           "(YAML) line 5, column 3: duplicate key 'four-eyes'", code="POLICY_ERROR")
    set_policy(text="policies: {}", key="policy.yml")
    denied(as_user(aicr, plane, "alice", "approve", pending, "--reason", "r"),
           "(ConfigMap): no key policy.yaml in data (keys: policy.yml)", code="POLICY_ERROR")


def test_an_unknown_policy_or_a_missing_required_plugin_refuses(aicr: Aicr, plane: envtest.ControlPlane,
                                                                seed: envtest.Seeder, set_policy: SetPolicy) -> None:
    name = seed.rollout()
    set_policy({"change-windw": {"windows": []}})
    denied(as_user(aicr, plane, "alice", "approve", name, "--reason", "r"),
           "policies.change-windw: no installed policy plugin is named 'change-windw'", code="POLICY_ERROR")
    set_policy({}, required=[{"name": "change-ticket", "distribution": "aicr-site-example", "minVersion": "1.0"}])
    denied(as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1"),
           "required[0]: required policy plugin 'change-ticket' is not installed", code="POLICY_ERROR")
    compare(spec(plane, name).get("approval"), expected=None)


def test_required_plugins_and_settings_of_a_site_policy(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                        set_policy: SetPolicy, tmp_path: Path) -> None:
    site = aicr.with_env(**PluginPath(tmp_path / "site").add_example(EXAMPLES / "aicr-site-example").env())
    name = seed.rollout()
    set_policy({"change-ticket": {"mode": "warn", "prefix": "INC"}},
               required=[{"name": "change-ticket", "distribution": "aicr-site-example", "minVersion": "1.0"}])
    proc = site("approve", name, "--reason", "CHG-1 is not an INC ticket", kubeconfig=plane.kubeconfig_for("alice"))
    ok(proc)  # warn mode: printed, not refused
    compare(proc.stderr, expected="warning: change-ticket: the reason must cite a change ticket (INC-1234): "
                                  "'CHG-1 is not an INC ticket'\n")
    set_policy({}, required=[{"name": "change-ticket", "minVersion": "2.0"}])
    denied(site("approve", seed.rollout(), "--reason", "CHG-1", kubeconfig=plane.kubeconfig_for("alice")),
           "required[0]: policy 'change-ticket' is aicr-site-example 1.0.0; at least 2.0 is required",
           code="POLICY_ERROR")


def test_warn_mode_prints_and_writes(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                     set_policy: SetPolicy) -> None:
    name = seed.rollout()
    set_policy({"reason-format": {"mode": "warn", "pattern": "^CHG-", "message": "cite a ticket"},
                "max-approval": {"mode": "warn", "max": "10h"}})
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "no ticket")
    ok(proc)
    compare(proc.stderr, expected="warning: reason-format: cite a ticket\n")
    compare(spec(plane, name)["approval"]["reason"], expected="no ticket")


APPROVE_ONLY = [
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "test-approve-only"},
     "rules": [{"apiGroups": ["operator.aicr.run"], "resources": ["runtimerollouts"], "verbs": ["get", "patch"]},
               {"apiGroups": ["operator.aicr.run"], "resources": ["runtimerollouts/approve"], "verbs": ["update"]},
               # the runtime, whose annotation says where the policy file is (docs/policies.md)
               {"apiGroups": ["operator.aicr.run"], "resources": ["clusterruntimes"], "verbs": ["get"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
     "metadata": {"name": "test-approve-only"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "test-approve-only"},
     "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "test:approve-only"}]},
]


def test_an_approver_who_cannot_read_the_file_is_refused(aicr: Aicr, plane: envtest.ControlPlane,
                                                         seed: envtest.Seeder, set_policy: SetPolicy) -> None:
    """Not knowing the rules must not mean having none: carol may approve, but read no ConfigMap."""
    set_policy({"four-eyes": {}})
    plane.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": APPROVE_ONLY}))
    try:
        name = seed.rollout()
        proc = as_user(aicr, plane, "admin", "approve", name, "--reason", "r", "--as", "carol",
                       "--as-group", "test:approve-only")
        denied(proc, code="POLICY_ERROR")
        assert error_line(proc).startswith(f"error: [POLICY_ERROR] cannot read the policy file {SOURCE}: "), proc.stderr
        compare(spec(plane, name).get("approval"), expected=None)
        check = as_user(aicr, plane, "admin", "policy", "check", name, "--reason", "r", "--as", "carol",
                        "--as-group", "test:approve-only", "-o", "json")  # the same decision, the same words
        compare((check.returncode, json.loads(check.stdout)["code"]), expected=(1, "POLICY_ERROR"))
        assert json.loads(check.stdout)["message"].startswith(f"cannot read the policy file {SOURCE}: ")
    finally:
        plane.kubectl("delete", "clusterrolebinding,clusterrole", "test-approve-only", "--ignore-not-found")
    # pat may read no ConfigMap either, but may not approve at all: the API server says so, as without a file.
    proc = as_user(aicr, plane, "pat", "approve", seed.rollout(), "--reason", "r")
    denied(proc, code="ADMISSION_DENIED")
    assert "user pat may not approve, revoke or acknowledge" in proc.stderr, proc.stderr
    check = as_user(aicr, plane, "pat", "policy", "check", seed.rollout(), "--reason", "r", "-o", "json")
    compare((check.returncode, json.loads(check.stdout)["code"]), expected=(1, "FORBIDDEN"))  # was: allowed
    assert "user pat may not approve, revoke or acknowledge" in json.loads(check.stdout)["message"]


# -- overrides ------------------------------------------------------------------------------------------

def test_an_override_is_recorded_in_the_same_write_and_shown_by_describe(aicr: Aicr, plane: envtest.ControlPlane,
                                                                         seed: envtest.Seeder,
                                                                         set_policy: SetPolicy) -> None:
    name = seed.rollout()
    set_policy({"change-window": {"overridable": True, "windows": windows_except_now()},
                "max-approval": {"max": "1h"}})
    denied(as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1", "--expires", "30m",
                   "--override", "max-approval"),
           "change-window: it is ", "--override max-approval: the policy did not refuse (allow)")
    denied(as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1", "--expires", "2h",
                   "--override", "change-window", "--override", "max-approval"),
           "max-approval: an approval of 2h", "--override max-approval: the policy is not overridable")
    compare(spec(plane, name).get("approval"), expected=None)
    proc = as_user(aicr, plane, "alice", "--override", "change-window", "approve", name, "--reason", "CHG-1 hotfix",
                   "--expires", "30m")
    ok(proc)
    assert proc.stderr.startswith("warning: change-window: it is ") and "(overridden)" in proc.stderr, proc.stderr
    stored = spec(plane, name)
    record = overrides(plane, name)
    compare((stored["approval"]["user"], [(o["user"], o["action"], o["policies"]) for o in record]),
            expected=("alice", [("alice", "approve", ["change-window"])]))
    assert "overrides" not in stored, stored  # the operator's spec has no such field: an annotation records it
    text = as_user(aicr, plane, "bob", "describe", name).stdout
    assert f"Overrides:    change-window by alice at approve ({record[0]['time']})" in text, text
    doc = json.loads(as_user(aicr, plane, "bob", "describe", name, "-o", "json").stdout)
    compare(doc["overrides"], expected=record)


def test_an_acknowledgement_and_a_revocation_record_their_overrides_too(aicr: Aicr, plane: envtest.ControlPlane,
                                                                         seed: envtest.Seeder,
                                                                         set_policy: SetPolicy) -> None:
    set_policy({"four-eyes": {"overridable": True, "revoke": True}})
    name = seed.rollout(phase="AwaitingAcknowledgement", approval=BOB_APPROVED, awaiting_release="nvsentinel",
                        step_states=[{"release": "gpu-operator", "state": "Ready"},
                                     {"release": "nvsentinel", "state": "AwaitingAcknowledgement"}])
    ok(as_user(aicr, plane, "bob", "acknowledge", name, "--override", "four-eyes"))
    ok(as_user(aicr, plane, "bob", "revoke", name, "--reason", "CHG-2 stop", "--override", "four-eyes"))
    stored = spec(plane, name)
    compare([(a["release"], a["user"]) for a in stored["acknowledgements"]], expected=[("nvsentinel", "bob")])
    compare([(o["user"], o["action"], o["policies"]) for o in overrides(plane, name)],
            expected=[("bob", "acknowledge", ["four-eyes"]), ("bob", "revoke", ["four-eyes"])])


# -- policy check, plugins ------------------------------------------------------------------------------

def test_policy_check_explains_and_writes_nothing(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                  set_policy: SetPolicy, tmp_path: Path) -> None:
    name = seed.rollout()
    set_policy({"change-window": {"windows": windows_except_now()}, "max-approval": {"max": "8h"},
                "four-eyes": {}})
    before = json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["metadata"]
    proc = as_user(aicr, plane, "victor", "policy", "check", name, "--reason", "CHG-1", "--expires", "2h")
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"approve {name} as victor at "), lines
    compare(lines[1], expected=f"Policy file: {SOURCE} (sha256:" + lines[1].split("(sha256:")[1])
    rows = {line.split()[1]: line for line in lines[4:6]}
    assert rows["change-window"].startswith("deny     change-window  enforce  it is "), rows
    assert "(now: " in rows["change-window"] and "windows: Mon,Tue" in rows["change-window"], rows
    assert rows["max-approval"].startswith("allow    max-approval   enforce  an approval of 2h is within the 8h "
                                           "allowed (length: 2h, max: 8h)"), rows
    compare(lines[-1], expected="approve would be refused: [POLICY_DENIED] 1 policy violation(s); nothing was written")
    compare(len(lines), expected=8, suffix=proc.stdout)  # 2 policies: four-eyes has nothing to say about approvals
    doc = json.loads(as_user(aicr, plane, "alice", "policy", "check", name, "--reason", "CHG-1", "-o", "json").stdout)
    compare((doc["kind"], doc["rollout"], doc["user"]["username"], doc["allowed"], doc["code"]),
            expected=("PolicyDecision", name, "alice", False, "POLICY_DENIED"))
    compare([(p["name"], p["verdict"]) for p in doc["policies"]],
            expected=[("change-window", "deny"), ("max-approval", "allow")])
    local = tmp_path / "try.yaml"
    local.write_text(yaml.safe_dump({**HEAD, "policies": {"max-approval": {"max": "1h"}}}))
    proc = as_user(aicr, plane, "alice", "policy", "check", name, "--reason", "CHG-1", "--expires", "30m",
                   "--policy-file", str(local))
    compare(proc.returncode, expected=0, suffix=proc.stdout + proc.stderr)
    assert f"Policy file: {local} (sha256:" in proc.stdout and proc.stdout.endswith("approve would go ahead\n")
    ack = as_user(aicr, plane, "bob", "policy", "check", name, "--action", "acknowledge")
    compare((ack.returncode, error_line(ack)), expected=(
        1, f"error: [NOT_AWAITING_ACKNOWLEDGEMENT] rollout {name} is not awaiting an acknowledgement "
           "(phase AwaitingApproval)"))
    after = json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["metadata"]
    compare(after["resourceVersion"], expected=before["resourceVersion"])  # nothing was written


def test_policy_check_lists_only_the_policies_set_up_for_the_action(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, set_policy: SetPolicy) -> None:
    name = seed.rollout(phase="Progressing", approval=BOB_APPROVED)
    set_policy({"reason-format": {"pattern": "^CHG-"}, "max-approval": {"max": "8h"}})  # both decide approvals only
    for reason in ((), ("--reason", "x")):  # "x" would not match: reason-format is simply not asked for revoke
        proc = as_user(aicr, plane, "alice", "policy", "check", name, "--action", "revoke", *reason)
        compare(proc.returncode, expected=0, suffix=proc.stdout + proc.stderr)
        assert "reason-format" not in proc.stdout and "skipped" not in proc.stdout, proc.stdout
        assert proc.stdout.endswith("revoke would go ahead\n"), proc.stdout
    set_policy({"reason-format": {"pattern": "^CHG-", "actions": ["approve", "revoke"]}})
    proc = as_user(aicr, plane, "alice", "policy", "check", name, "--action", "revoke", "--reason", "x")
    compare(proc.returncode, expected=1, suffix=proc.stdout + proc.stderr)
    assert re.search(r"^deny +reason-format +enforce +the reason must match \^CHG-: 'x'", proc.stdout, re.M), \
        proc.stdout


def test_policy_check_with_a_broken_file_says_why(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                  set_policy: SetPolicy) -> None:
    set_policy({"max-approval": {"max": "-1h"}})
    proc = as_user(aicr, plane, "alice", "policy", "check", seed.rollout(), "--reason", "r")
    compare(proc.returncode, expected=1)
    assert "  policies.max-approval.max: '-1h' is negative" in proc.stdout, proc.stdout
    assert proc.stdout.endswith(f"approve would be refused: [POLICY_ERROR] policy file {SOURCE} does not validate; "
                                "refusing every approval, revocation and acknowledgement (fail closed)\n")


def test_plugins_shows_what_the_cluster_file_activates(aicr: Aicr, plane: envtest.ControlPlane,
                                                       set_policy: SetPolicy) -> None:
    set_policy({"four-eyes": {"mode": "warn"}, "change-window": {"overridable": True, "blackouts": [
        {"name": "freeze", "from": "2030-01-01", "to": "2030-01-02"}]}})
    doc = json.loads(as_user(aicr, plane, "victor", "plugins", "-o", "json").stdout)
    rows = {p["name"]: (p["active"], p["mode"], p["overridable"])
            for p in doc["plugins"] if p["group"] == "aicr.policies"}
    compare(rows, expected={"approver-groups": (False, None, None), "assessment": (False, None, None),
                            "change-window": (True, "enforce", True), "crd-changes": (False, None, None),
                            "four-eyes": (True, "warn", False), "max-approval": (False, None, None),
                            "reason-format": (False, None, None)})
    compare((doc["policyFile"]["source"], doc["policyFile"]["found"], doc["policyFile"]["error"]),
            expected=(SOURCE, True, None))
    text = as_user(aicr, plane, "victor", "plugins").stdout
    assert "aicr.policies   four-eyes            kubectl-aicr  0.1.0    built-in  yes     warn     ok" in text, text
    assert "aicr.policies   crd-changes          kubectl-aicr  0.1.0    built-in  no      -        ok" in text, text
    assert f"Policy file: {SOURCE} (sha256:" in text


# -- --policy-file on a write: only a dry run may try it --------------------------------------------

def test_a_dry_run_tries_a_local_policy_file_in_place_of_the_clusters(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, set_policy: SetPolicy,
        tmp_path: Path) -> None:
    set_policy({"max-approval": {"max": "8h"}})
    name = seed.rollout()
    stricter = tmp_path / "stricter.yaml"
    stricter.write_text(yaml.safe_dump({**HEAD, "policies": {"max-approval": {"max": "1h"}}}))
    args = ["approve", name, "--reason", "CHG-1", "--expires", "2h", "--policy-file", str(stricter)]
    for mode in ("client", "server"):  # the local file decides, not the cluster's (which allows 2h)
        denied(as_user(aicr, plane, "alice", *args, f"--dry-run={mode}"), "max-approval: ")
    proc = as_user(aicr, plane, "alice", *args)  # a real write never follows a local file
    compare((proc.returncode, error_line(proc).startswith("error: [USAGE] --policy-file only tries")),
            expected=(2, True), suffix=proc.stderr)
    looser = tmp_path / "looser.yaml"
    looser.write_text(yaml.safe_dump({**HEAD, "policies": {"max-approval": {"max": "24h"}}}))
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1", "--expires", "12h",
                   "--policy-file", str(looser), "--dry-run=server")
    ok(proc)
    assert proc.stdout.endswith(" (server dry run)\n"), proc.stdout
    denied(as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1", "--expires", "12h"), "max-approval: ")
    assert "approval" not in spec(plane, name)  # nothing was written by any of them
