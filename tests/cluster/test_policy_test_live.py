"""A `policy test` case decides exactly as `policy check` does on a real cluster.

Rollouts and reports are seeded on the real control plane; `policy check --policy-file` runs as
ordinary users (alice, bob, carol: approvers; victor: viewer) for several rollouts,
actions and policy files. The objects are then read back as `kubectl get -o yaml` prints them and
become the fixtures of a test file whose cases are the same checks, each at the very instant its
`policy check` decided at (its document's `time`). Offline, with KUBECONFIG pointing at no file,
every case's decision document must equal the live one: allowed, code and message, and every
policy's verdict, messages and facts.
"""
from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import envtest
import yaml
from testfixtures import compare

from support.harness import ROOT, Aicr, error_line

NO_CRDS = [{"release": "nvsentinel", "operation": "Install", "verdict": "safe", "changesCRDs": False}]
BOB_APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "CHG-1 maintenance"}
ALICE_APPROVED = {"user": "alice", "expires": "2099-01-01T00:00:00Z", "reason": "CHG-1 maintenance"}
EVERY_DAY = [{"days": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"], "from": "00:00", "to": "24:00"}]


def report(verdict: str) -> str:
    doc = copy.deepcopy(envtest.SAMPLE_REPORT)
    doc["components"][0]["verdict"] = verdict
    return json.dumps(doc, indent=2)


def policy_files(folder: Path) -> dict[str, Path]:
    """The example file with a window open all day (so that both see the same verdict whatever the
    clock), a stricter variant with warn mode and overrides, and one that does not validate."""
    example = yaml.safe_load((ROOT / "examples" / "approval-policy.yaml").read_text())
    example["policies"]["change-window"].update(windows=EVERY_DAY, blackouts=[], expiryWithinWindow=False)
    strict = copy.deepcopy(example)
    strict["policies"]["reason-format"]["mode"] = "warn"
    strict["policies"]["approver-groups"] = {"approve": ["platform-leads"], "overridable": True}
    strict["policies"]["crd-changes"]["groups"] = ["aicr:approvers"]
    strict["policies"]["assessment"].update(refuseMissing=True, refuseVerdicts=["blocked", "manual"])
    strict["policies"]["four-eyes"]["revoke"] = True
    strict["policies"]["max-approval"]["max"] = "1h"
    broken = copy.deepcopy(example)
    broken["policies"]["change-window"]["colour"] = "blue"
    files = {}
    for name, doc in (("example", example), ("strict", strict), ("broken", broken)):
        files[name] = folder / f"{name}.yaml"
        files[name].write_text(yaml.safe_dump(doc, sort_keys=False))
    return files


def seed_rollouts(seed: envtest.Seeder) -> dict[str, str]:
    return {
        "plain": seed.rollout(steps=NO_CRDS, report=report("safe")),
        "manual": seed.rollout(steps=NO_CRDS, report=report("manual")),
        "crds": seed.rollout(report=report("safe")),  # gpu-operator's step changes CRDs
        "blocked": seed.rollout(steps=NO_CRDS, report=report("blocked")),
        "unverified": seed.rollout(steps=NO_CRDS, report=report("safe"), report_digest=envtest.random_digest()),
        "missing": seed.rollout(steps=NO_CRDS, report_digest=envtest.random_digest()),
        "none": seed.rollout(steps=NO_CRDS),
        "approved": seed.rollout(steps=NO_CRDS, approval=BOB_APPROVED, phase="Progressing",
                                 report=report("safe")),
        "awaiting-ack": seed.rollout(steps=NO_CRDS, approval=ALICE_APPROVED, phase="AwaitingAcknowledgement",
                                     awaiting_release="nvsentinel", report=report("safe")),
        "ended": seed.rollout(steps=NO_CRDS, phase="Ended", outcome="Succeeded", approval=BOB_APPROVED),
    }


# (policy file, user, rollout, action, reason, expires, overrides)
CHECKS: list[tuple[str, str, str, str, str | None, str | None, tuple[str, ...]]] = [
    ("example", "alice", "plain", "approve", "CHG-1 driver 580", "2h", ()),
    ("example", "alice", "plain", "approve", "CHG-1 driver 580", None, ()),  # until the deadline: 8h or a bit less
    ("example", "alice", "plain", "approve", "no ticket", "2h", ()),
    ("example", "victor", "plain", "approve", "CHG-1 driver 580", "2h", ()),
    ("example", "alice", "plain", "approve", "CHG-1 driver 580", "9h", ()),
    ("example", "alice", "crds", "approve", "CHG-1 driver 580", "2h", ()),
    ("example", "alice", "blocked", "approve", "CHG-1 driver 580", "2h", ()),
    ("example", "alice", "unverified", "approve", "CHG-1 driver 580", "2h", ()),
    ("example", "alice", "missing", "approve", "CHG-1 driver 580", "2h", ()),
    ("example", "alice", "none", "approve", "CHG-1 driver 580", "2h", ()),
    ("example", "carol", "approved", "revoke", "stop it", None, ()),
    ("example", "victor", "approved", "revoke", "stop it", None, ()),
    ("example", "alice", "awaiting-ack", "acknowledge", None, None, ()),
    ("example", "carol", "awaiting-ack", "acknowledge", None, None, ()),
    ("example", "alice", "approved", "approve", "CHG-1 again", "2h", ()),  # ALREADY_APPROVED
    ("example", "alice", "ended", "revoke", "too late", None, ()),  # ENDED
    ("example", "alice", "plain", "acknowledge", None, None, ()),  # NOT_AWAITING_ACKNOWLEDGEMENT
    ("example", "alice", "plain", "approve", "CHG-1 driver 580", "2h", ("change-window",)),  # did not refuse
    ("strict", "alice", "plain", "approve", "no ticket", "30m", ()),  # warn; approver-groups refuses
    ("strict", "alice", "plain", "approve", "no ticket", "30m", ("approver-groups",)),  # overridden
    ("strict", "bob", "manual", "approve", "CHG-2", "2h", ("approver-groups", "reason-format")),
    ("strict", "alice", "crds", "approve", "CHG-2", "30m", ("approver-groups",)),
    ("strict", "alice", "missing", "approve", "CHG-2", "30m", ("approver-groups",)),
    ("strict", "alice", "none", "approve", "CHG-2", "30m", ("approver-groups",)),
    ("strict", "bob", "approved", "revoke", "my own", None, ()),  # four-eyes: revoke
    ("strict", "carol", "approved", "revoke", "not mine", None, ()),
    ("broken", "alice", "plain", "approve", "CHG-1", "2h", ()),  # POLICY_ERROR
    ("broken", "carol", "awaiting-ack", "acknowledge", None, None, ()),
]


def policy_check(aicr: Aicr, plane: envtest.ControlPlane, file: Path, user: str, rollout: str, action: str,
                 reason: str | None, expires: str | None, overrides: tuple[str, ...]) -> dict[str, Any]:
    """`policy check`'s decision document; for the command's own refusal (an error on one cluster),
    the document `policy test` reports for it: allowed false, that code, no policies."""
    args = ["policy", "check", rollout, "--action", action, "--policy-file", str(file), "-o", "json"]
    args += ["--reason", reason] if reason is not None else []
    args += ["--expires", expires] if expires is not None else []
    for name in overrides:
        args += ["--override", name]
    proc = aicr(*args, kubeconfig=plane.kubeconfig_for(user))
    if proc.stdout:
        assert proc.returncode in (0, 1), proc.stderr
        return json.loads(proc.stdout)  # type: ignore[no-any-return]
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    code = error_line(proc).removeprefix("error: [").split("]")[0]
    return {"allowed": False, "code": code, "policies": []}


def test_each_case_decides_as_policy_check_on_the_cluster(aicr: Aicr, plane: envtest.ControlPlane,
                                                         seed: envtest.Seeder, tmp_path: Path) -> None:
    files = policy_files(tmp_path)
    names = seed_rollouts(seed)
    live = []
    cases = []
    for i, (policy, user, key, action, reason, expires, overrides) in enumerate(CHECKS):
        decision = policy_check(aicr, plane, files[policy], user, names[key], action, reason, expires, overrides)
        live.append(decision)
        case: dict[str, Any] = {
            "name": f"{i}: {policy} {user} {action} {key}", "rollout": names[key], "action": action, "user": user,
            # as the API server reports them (SelfSubjectReview: system:authenticated too)
            "groups": decision["user"]["groups"] if "user" in decision else
            [*envtest.USERS.get(user, ()), "system:authenticated"],
            "at": decision.get("time") or envtest.rfc3339(dt.datetime.now(dt.timezone.utc)),
            "expect": {"allowed": decision["allowed"], "code": decision["code"],
                       "policies": {p["name"]: p["verdict"] for p in decision["policies"]}}}
        for key_name, value in (("reason", reason), ("expires", expires)):
            if value is not None:
                case[key_name] = value
        if overrides:
            case["overrides"] = list(overrides)
        if case["expect"]["code"] is None:
            del case["expect"]["code"]
        cases.append(case)
    # a spread of outcomes, or the comparison below would prove little
    codes = {d["code"] for d in live}
    assert {None, "POLICY_DENIED", "POLICY_ERROR", "ALREADY_APPROVED", "ENDED",
            "NOT_AWAITING_ACKNOWLEDGEMENT"} <= codes, codes
    verdicts = {p["verdict"] for d in live for p in d["policies"]}
    assert {"allow", "deny", "warn", "overridden"} <= verdicts, verdicts

    # the fixtures, as kubectl prints the objects
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    (fixtures / "rollouts.yaml").write_text(
        plane.kubectl("get", "runtimerollouts", *names.values(), "-o", "yaml").stdout)
    (fixtures / "reports.yaml").write_text(plane.kubectl(
        "get", "configmaps", "-n", "aicr-system", "-l", "operator.aicr.run/role=assessment", "-o", "yaml").stdout)
    # the policy files by the very paths policy check was given: the same policyFile.source
    for file in files.values():
        assert file.is_absolute()
    for policy in files:
        suite = tmp_path / f"{policy}.aicr-test.yaml"
        suite.write_text(yaml.safe_dump({
            "apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicyTest", "policy": str(files[policy]),
            "rollouts": ["fixtures/rollouts.yaml"], "reports": ["fixtures/reports.yaml"],
            "cases": [c for c, check in zip(cases, CHECKS, strict=True) if check[0] == policy]}, sort_keys=False))
    proc = aicr("policy", "test", str(tmp_path), "-o", "json", kubeconfig=tmp_path / "no-such-kubeconfig")
    report_doc = json.loads(proc.stdout)
    failures = [(i["case"], i["differences"], i["error"]) for i in report_doc["items"] if not i["passed"]]
    compare(failures, expected=[], suffix=proc.stderr)
    compare((proc.returncode, report_doc["passed"]), expected=(0, len(CHECKS)))
    # beyond the expectations: the whole decision documents are equal
    offline = {item["case"]: item["decision"] for item in report_doc["items"]}
    for case, decision in zip(cases, live, strict=True):
        got = offline[case["name"]]
        if "time" not in decision:  # the command's own refusal: an error on one cluster
            compare((got["allowed"], got["code"], got["policies"], got["policyFile"]),
                    expected=(False, decision["code"], [], None), prefix=case["name"])
            continue
        compare(got, expected=decision, prefix=case["name"])

