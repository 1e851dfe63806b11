"""Every built-in command through the real `kubectl aicr`, as ordinary users, on the real control plane."""
from __future__ import annotations

import datetime as dt
import json
import subprocess
import threading
from pathlib import Path

import envtest
import pytest
from testfixtures import compare

from support.harness import Aicr, error_line

APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "maintenance window"}


def as_user(aicr: Aicr, plane: envtest.ControlPlane, user: str, *args: str, **env: str):  # type: ignore[no-untyped-def]
    return aicr(*args, kubeconfig=plane.kubeconfig_for(user), **env)


def get(plane: envtest.ControlPlane, name: str) -> dict:  # type: ignore[type-arg]
    return json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)


def refused(proc: subprocess.CompletedProcess[str], code: str) -> None:
    assert proc.returncode == 1, proc.stderr
    assert error_line(proc).startswith(f"error: [{code}] "), proc.stderr


# -- approve -----------------------------------------------------------------------------

def test_approve_until_the_deadline(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    deadline = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(hours=3)
    name = seed.rollout(deadline=deadline)
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "Maintenance window")
    compare((proc.returncode, proc.stdout),
            expected=(0, f"rollout {name} approved by alice until {envtest.rfc3339(deadline)}\n"), suffix=proc.stderr)
    compare(get(plane, name)["spec"]["approval"],
            expected={"user": "alice", "expires": envtest.rfc3339(deadline), "reason": "Maintenance window"})


def test_approve_with_expires_flags_before_the_name(aicr: Aicr, plane: envtest.ControlPlane,
                                                    seed: envtest.Seeder) -> None:
    name = seed.rollout()
    before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    proc = as_user(aicr, plane, "bob", "--expires", "2h", "--reason", "window", "approve", name, "-o", "json")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    doc = json.loads(proc.stdout)
    expires = dt.datetime.fromisoformat(doc["expires"].replace("Z", "+00:00"))
    assert before + dt.timedelta(hours=2) <= expires <= before + dt.timedelta(hours=2, seconds=5)
    compare(get(plane, name)["spec"]["approval"]["expires"], expected=doc["expires"])


@pytest.mark.parametrize("kwargs,code", [
    ({"phase": "Ended", "outcome": "Failed"}, "ENDED"),
    ({"approval": APPROVED}, "ALREADY_APPROVED"),
    ({"approval_required": False, "phase": "Progressing"}, "APPROVAL_NOT_REQUIRED"),
    ({"deadline": dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)}, "DEADLINE_PASSED"),
])
def test_approve_refusals(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                          kwargs: dict, code: str) -> None:  # type: ignore[type-arg]
    name = seed.rollout(**kwargs)
    before = get(plane, name)["metadata"]["resourceVersion"]
    refused(as_user(aicr, plane, "alice", "approve", name, "--reason", "x"), code)
    compare(get(plane, name)["metadata"]["resourceVersion"], expected=before)  # nothing written


def test_already_approved_names_the_approver(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    proc = as_user(aicr, plane, "alice", "approve", seed.rollout(approval=APPROVED), "--reason", "x")
    assert "already approved by bob until 2099-01-01T00:00:00Z" in proc.stderr


def test_past_deadline_can_be_approved_with_expires(aicr: Aicr, plane: envtest.ControlPlane,
                                                    seed: envtest.Seeder) -> None:
    name = seed.rollout(deadline=dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc))
    compare(as_user(aicr, plane, "alice", "approve", name, "--reason", "x", "--expires", "30m").returncode,
            expected=0)


def test_a_non_approver_is_refused_by_the_server(aicr: Aicr, plane: envtest.ControlPlane,
                                                 seed: envtest.Seeder) -> None:
    name = seed.rollout()
    proc = as_user(aicr, plane, "pat", "approve", name, "--reason", "x")
    refused(proc, "ADMISSION_DENIED")
    assert "user pat may not approve, revoke or acknowledge" in proc.stderr
    proc = as_user(aicr, plane, "nora", "approve", name, "--reason", "x")
    refused(proc, "FORBIDDEN")
    assert 'User "nora" cannot get resource "runtimerollouts"' in proc.stderr
    assert "approval" not in get(plane, name)["spec"]


def test_two_approvers_racing_exactly_one_wins(aicr: Aicr, plane: envtest.ControlPlane,
                                               seed: envtest.Seeder) -> None:
    name = seed.rollout()
    results: dict[str, subprocess.CompletedProcess[str]] = {}
    barrier = threading.Barrier(2)

    def approve(user: str) -> None:
        barrier.wait()
        results[user] = as_user(aicr, plane, user, "approve", name, "--reason", f"{user} says go")

    threads = [threading.Thread(target=approve, args=(u,)) for u in ("alice", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [u for u, p in results.items() if p.returncode == 0]
    compare(len(winners), expected=1, suffix=str({u: p.stderr for u, p in results.items()}))
    loser = "bob" if winners == ["alice"] else "alice"
    refused(results[loser], "ALREADY_APPROVED")
    assert f"already approved by {winners[0]}" in results[loser].stderr
    compare(get(plane, name)["spec"]["approval"]["user"], expected=winners[0])


def test_exec_credential_plugin_user(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout()
    proc = as_user(aicr, plane, "erin", "approve", name, "--reason", "via exec plugin")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    assert "approved by erin" in proc.stdout
    assert plane.exec_token not in proc.stdout + proc.stderr


def test_context_selects_the_user(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout()
    proc = aicr("approve", name, "--reason", "x", "--context", "bob", kubeconfig=plane.kubeconfig)
    compare((proc.returncode, "approved by bob" in proc.stdout), expected=(0, True), suffix=proc.stderr)


def test_kubeconfig_list_merged_as_kubectl_does(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                tmp_path: Path) -> None:
    """KUBECONFIG=a:b, with the current context in the first file and the user in the second."""
    full = json.loads(plane.kubeconfig.read_text())
    first = {"apiVersion": "v1", "kind": "Config", "current-context": "alice", "clusters": full["clusters"],
             "contexts": full["contexts"], "users": []}
    second = {"apiVersion": "v1", "kind": "Config", "users": full["users"], "clusters": [], "contexts": []}
    (tmp_path / "a").write_text(json.dumps(first))
    (tmp_path / "b").write_text(json.dumps(second))
    name = seed.rollout()
    proc = aicr("approve", name, "--reason", "x", KUBECONFIG=f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    compare((proc.returncode, "approved by alice" in proc.stdout), expected=(0, True), suffix=proc.stderr)


def test_rejected_credentials_and_a_wrong_ca(aicr: Aicr, plane: envtest.ControlPlane, tmp_path: Path) -> None:
    config = json.loads(plane.kubeconfig_for("alice").read_text())
    config["users"][0]["user"] = {"token": "not-a-valid-token-0123456789"}
    (tmp_path / "bad-token").write_text(json.dumps(config))
    proc = aicr("describe", "rollout-0000000000000000-1", kubeconfig=tmp_path / "bad-token")
    refused(proc, "UNAUTHORIZED")
    assert "not-a-valid-token" not in proc.stderr + proc.stdout
    config = json.loads(plane.kubeconfig_for("alice").read_text())
    ca, _, _ = envtest.make_ca("some other CA")
    config["clusters"][0]["cluster"]["certificate-authority-data"] = envtest.b64(ca.cert_pem)
    (tmp_path / "wrong-ca").write_text(json.dumps(config))
    proc = aicr("describe", "rollout-0000000000000000-1", kubeconfig=tmp_path / "wrong-ca")
    refused(proc, "UNAVAILABLE")
    assert "TLS failure" in proc.stderr and "CERTIFICATE_VERIFY_FAILED" in proc.stderr


def test_approve_a_revoked_rollout_that_has_not_ended_yet(aicr: Aicr, plane: envtest.ControlPlane,
                                                          seed: envtest.Seeder) -> None:
    name = seed.rollout(phase="Progressing", approval=APPROVED,
                        revocation={"user": "alice", "time": "2026-11-29T23:00:00Z", "reason": "not checkpointed"})
    before = get(plane, name)["metadata"]["resourceVersion"]
    proc = as_user(aicr, plane, "bob", "approve", name, "--reason", "again")
    refused(proc, "ALREADY_APPROVED")
    compare(error_line(proc), expected=f"error: [ALREADY_APPROVED] rollout {name} was approved by bob and revoked "
                                       "by alice at 2026-11-29T23:00:00Z; an approval cannot be given again")
    compare(get(plane, name)["metadata"]["resourceVersion"], expected=before)


def test_flags_a_command_does_not_use_are_ignored_on_the_real_cluster(aicr: Aicr, plane: envtest.ControlPlane,
                                                                      seed: envtest.Seeder) -> None:
    name = seed.rollout()
    proc = as_user(aicr, plane, "victor", "describe", name, "--reason", "", "--expires", "-1h", "--dir", "")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "x", "--expires", "-0s", "-o", "json")
    compare((proc.returncode, error_line(proc).split(",")[0]),  # -0s parses, and is expired when written
            expected=(2, "error: [USAGE] --expires -0s is shorter than the minimum"), suffix=proc.stderr)
    compare(get(plane, name)["spec"].get("approval"), expected=None)
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "x", "--expires", "1m", "-o", "json")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    proc = as_user(aicr, plane, "alice", "describe", name, "--expires", "1d")
    compare((proc.returncode, error_line(proc)),
            expected=(2, 'error: [USAGE] argument --expires: time: unknown unit "d" in duration "1d"'))


def test_an_expiry_go_refuses_is_a_usage_error_before_any_api_call(aicr: Aicr, plane: envtest.ControlPlane,
                                                                   seed: envtest.Seeder, tmp_path: Path) -> None:
    name = seed.rollout()
    log = tmp_path / "requests"
    for expires in ("99999999999999h", "9999999999h", "2562047h47m16.854775808s", " 2h", "\u0662h", "-1h"):
        proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "x", "--expires", expires,
                       AICR_REQUEST_LOG=str(log))
        compare((proc.returncode, error_line(proc).startswith("error: [USAGE] ")), expected=(2, True),
                suffix=proc.stderr)
    compare(log.exists(), expected=False)  # not one request
    assert "approval" not in get(plane, name)["spec"]


# -- revoke ------------------------------------------------------------------------------

def test_revoke(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout(phase="Progressing", approval=APPROVED)
    proc = as_user(aicr, plane, "alice", "revoke", name, "--reason", "Training job not checkpointed")
    compare((proc.returncode, proc.stdout), expected=(0, f"rollout {name} revoked by alice\n"), suffix=proc.stderr)
    revocation = get(plane, name)["spec"]["revocation"]
    compare((revocation["user"], revocation["reason"]), expected=("alice", "Training job not checkpointed"))


@pytest.mark.parametrize("kwargs,code", [
    ({}, "NOT_APPROVED"),
    ({"approval": APPROVED, "revocation": {"user": "bob", "time": "2026-01-01T00:00:00Z", "reason": "r"}},
     "ALREADY_REVOKED"),
    ({"approval": APPROVED, "phase": "Ended", "outcome": "Succeeded"}, "ENDED"),
])
def test_revoke_refusals(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                         kwargs: dict, code: str) -> None:  # type: ignore[type-arg]
    refused(as_user(aicr, plane, "alice", "revoke", seed.rollout(**kwargs), "--reason", "x"), code)


def test_revoke_in_validating_is_refused_by_the_server(aicr: Aicr, plane: envtest.ControlPlane,
                                                       seed: envtest.Seeder) -> None:
    name = seed.rollout(phase="Validating", approval=APPROVED)
    proc = as_user(aicr, plane, "alice", "revoke", name, "--reason", "x")
    refused(proc, "ADMISSION_DENIED")
    assert "a rollout in Validating cannot be revoked" in proc.stderr


# -- acknowledge ---------------------------------------------------------------------------

def awaiting(seed: envtest.Seeder) -> str:
    return seed.rollout(phase="AwaitingAcknowledgement", approval=APPROVED, awaiting_release="nvsentinel")


def test_acknowledge(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = awaiting(seed)
    proc = as_user(aicr, plane, "alice", "acknowledge", name)
    compare((proc.returncode, proc.stdout),
            expected=(0, f"rollout {name}: nvsentinel acknowledged by alice\n"), suffix=proc.stderr)
    acks = get(plane, name)["spec"]["acknowledgements"]
    compare([(a["release"], a["user"]) for a in acks], expected=[("nvsentinel", "alice")])
    refused(as_user(aicr, plane, "bob", "acknowledge", name), "NOT_AWAITING_ACKNOWLEDGEMENT")


def test_acknowledge_refuses_a_rollout_that_is_not_waiting(aicr: Aicr, plane: envtest.ControlPlane,
                                                           seed: envtest.Seeder) -> None:
    refused(as_user(aicr, plane, "alice", "acknowledge", seed.rollout(approval=APPROVED, phase="Progressing")),
            "NOT_AWAITING_ACKNOWLEDGEMENT")


def test_acknowledge_by_a_non_approver_is_refused_by_the_server(aicr: Aicr, plane: envtest.ControlPlane,
                                                                seed: envtest.Seeder) -> None:
    name = awaiting(seed)
    proc = as_user(aicr, plane, "pat", "acknowledge", name)
    refused(proc, "ADMISSION_DENIED")
    assert "acknowledgements" not in get(plane, name)["spec"]


# -- describe -----------------------------------------------------------------------------

def test_describe_as_a_viewer(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    report = json.dumps(envtest.SAMPLE_REPORT)
    name = seed.rollout(report=report, acknowledgements=None)
    proc = as_user(aicr, plane, "victor", "describe", name)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    out = proc.stdout
    assert out.startswith(f"Rollout:      {name}\nRuntime UID:  6c1f0e9a-7d2b-4c1e-9a51-3f9a1c0d2b7e\n")
    assert "Approval:     required, pending\n" in out
    assert f"Assessment: {envtest.digest_of(report)} (verified)" in out
    assert "  gpu-operator  version  v25.3.0  v25.10.0  manual   1 minor; 1 step" in out
    assert "  1  gpu-operator  Upgrade    manual      yes   in flight" in out
    assert "    before: no training job running on the node pool" in out


def test_describe_an_unverified_report_is_not_shown(aicr: Aicr, plane: envtest.ControlPlane,
                                                    seed: envtest.Seeder) -> None:
    recorded = envtest.random_digest()
    name = seed.rollout(report=json.dumps(envtest.SAMPLE_REPORT), report_digest=recorded)
    proc = as_user(aicr, plane, "victor", "describe", name)
    assert f"Assessment: unverified (the rollout records {recorded}" in proc.stdout
    assert "gpu-operator  version" not in proc.stdout


def test_describe_without_assessment_and_initial_install(aicr: Aicr, plane: envtest.ControlPlane,
                                                         seed: envtest.Seeder) -> None:
    name = seed.rollout(from_digest=None,
                        acknowledgements=[{"release": "nvsentinel", "user": "bob", "time": "2026-11-29T21:00:00Z"}],
                        approval=APPROVED, phase="Progressing")
    out = as_user(aicr, plane, "alice", "describe", name).stdout
    assert f"Transition:   none (initial install) -> {get(plane, name)['spec']['to']['digest']}\n" in out
    assert "Assessment: none\n" in out
    assert "Approval:     approved by bob until 2099-01-01T00:00:00Z (maintenance window)" in out
    assert out.endswith("Acknowledged: nvsentinel by bob at 2026-11-29T21:00:00Z\n")


def test_describe_json(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout(report=json.dumps(envtest.SAMPLE_REPORT))
    doc = json.loads(as_user(aicr, plane, "victor", "describe", name, "-o", "json").stdout)
    compare((doc["kind"], doc["rollout"], doc["assessment"]["status"], len(doc["steps"])),
            expected=("RolloutDescription", name, "verified", 2))


def test_describe_reads_twice_at_most(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                      tmp_path: Path) -> None:
    """The rollout, then its report; the Events beside them (in a thread of their own), unless left out."""
    name = seed.rollout(report=json.dumps(envtest.SAMPLE_REPORT))
    log = tmp_path / "requests"
    reads = [f"GET /apis/operator.aicr.run/v1alpha1/runtimerollouts/{name}",
             f"GET /api/v1/namespaces/aicr-system/configmaps/aicr-assessment-"
             f"{envtest.digest_of(json.dumps(envtest.SAMPLE_REPORT))[7:23]}"]
    proc = as_user(aicr, plane, "victor", "describe", name, AICR_REQUEST_LOG=str(log))
    lines = log.read_text().splitlines()
    compare([line for line in lines if "/events" not in line], expected=reads)
    compare([line for line in lines if "/events" in line],
            expected=[f"GET /apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3D{name}"
                      "&limit=500"])
    assert "Events" not in proc.stdout and proc.stderr == "", proc  # victor may not list them: none, no warning
    log.unlink()
    as_user(aicr, plane, "victor", "describe", name, "--show-events=false", AICR_REQUEST_LOG=str(log))
    compare(log.read_text().splitlines(), expected=reads)


def test_describe_strips_control_sequences(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    name = seed.rollout(message="ok\x1b[2J\x1b]0;pwned\x07\nApproval: approved by mallory")
    out = as_user(aicr, plane, "victor", "describe", name).stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "Message:      ok\\x1b[2J\\x1b]0;pwned\\x07\\nApproval: approved by mallory\n" in out


def test_describe_a_release_that_appears_twice(aicr: Aicr, plane: envtest.ControlPlane,
                                               seed: envtest.Seeder) -> None:
    """An Upgrade and a later Verify of gpu-operator: each step shows its own state."""
    steps = [{"release": "gpu-operator", "operation": "Upgrade", "verdict": "manual", "changesCRDs": True},
             {"release": "nvsentinel", "operation": "Install", "verdict": "safe", "changesCRDs": False},
             {"release": "gpu-operator", "operation": "Verify", "verdict": "", "changesCRDs": False}]
    states = [{"release": "gpu-operator", "state": "Ready"}, {"release": "nvsentinel", "state": "Ready"},
              {"release": "gpu-operator", "state": "InFlight", "message": "verifying"}]
    name = seed.rollout(phase="Progressing", approval=APPROVED, steps=steps, step_states=states)
    proc = as_user(aicr, plane, "victor", "describe", name)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    table = proc.stdout.split("Steps:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    compare(table, expected=["  #  RELEASE       OPERATION  ASSESSMENT  CRDS  STATE      MESSAGE",
                             "  1  gpu-operator  Upgrade    manual      yes   Ready      -",
                             "  2  nvsentinel    Install    safe        no    Ready      -",
                             "  3  gpu-operator  Verify     -           no    in flight  verifying"])
    doc = json.loads(as_user(aicr, plane, "victor", "describe", name, "-o", "json").stdout)
    compare([(s["operation"], s["state"], s["message"]) for s in doc["steps"]],
            expected=[("Upgrade", "Ready", ""), ("Install", "Ready", ""), ("Verify", "InFlight", "verifying")])


def test_describe_escapes_trojan_source_characters(aicr: Aicr, plane: envtest.ControlPlane,
                                                   seed: envtest.Seeder) -> None:
    """U+202E (right-to-left override) and friends in a message and a release name are shown, not obeyed."""
    release = "gpu-operator\u202erotarepo-upg"
    name = seed.rollout(message="approved\u202e\u2066 by nobody\u2028Approval: ok\u200b",
                        steps=[{"release": release, "operation": "Upgrade", "verdict": "safe", "changesCRDs": False}],
                        step_states=[{"release": release, "state": "InFlight"}])
    proc = as_user(aicr, plane, "victor", "describe", name)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    for char in "\u202e\u2066\u2028\u200b":
        assert char not in proc.stdout + proc.stderr, repr(char)
    assert "Message:      approved\\u202e\\u2066 by nobody\\u2028Approval: ok\\u200b\n" in proc.stdout
    assert "  1  gpu-operator\\u202erotarepo-upg  Upgrade" in proc.stdout
    assert "in flight" in proc.stdout
    doc = json.loads(as_user(aicr, plane, "victor", "describe", name, "-o", "json").stdout)
    compare(doc["steps"][0]["release"], expected=release)  # JSON carries the data itself, \u-escaped


def test_describe_without_configmap_permission_still_describes(aicr: Aicr, plane: envtest.ControlPlane,
                                                                seed: envtest.Seeder) -> None:
    """pat may read rollouts but not ConfigMaps: the report is reported unavailable, not silently absent."""
    name = seed.rollout(report=json.dumps(envtest.SAMPLE_REPORT))
    proc = as_user(aicr, plane, "pat", "describe", name)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    assert 'Assessment: unavailable (configmaps "aicr-assessment-' in proc.stdout
    assert 'User "pat" cannot get resource "configmaps"' in proc.stdout


def test_describe_not_found_and_no_permission(aicr: Aicr, plane: envtest.ControlPlane) -> None:
    refused(as_user(aicr, plane, "victor", "describe", "rollout-0000000000000000-1"), "NOT_FOUND")
    refused(as_user(aicr, plane, "nora", "describe", "rollout-0000000000000000-1"), "FORBIDDEN")


# -- reproduce ------------------------------------------------------------------------------

def test_reproduce_a_plan_by_digest(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    recipe = '{"kind": "RecipeResult"}\n'
    digest = seed.plan(recipe=recipe)
    proc = as_user(aicr, plane, "victor", "reproduce", digest, "--dir", "out")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    compare((aicr.cwd / "out" / "recipe.json").read_text(), expected=recipe)
    assert f"Plan:        {digest}\n" in proc.stdout
    assert "--deployer argocd --system-node-selector nodeGroup=system --output /work/cli-bundle" in proc.stdout
    assert f"diff -r {aicr.cwd / 'out' / 'cli-bundle'} {aicr.cwd / 'out' / 'operator-bundle'}" in proc.stdout


def test_reproduce_the_active_plan_else_the_candidate(aicr: Aicr, plane: envtest.ControlPlane,
                                                      seed: envtest.Seeder) -> None:
    active, candidate = seed.plan(), seed.plan()
    seed.runtime(active=active, candidate=candidate)
    assert f"Plan:        {active}" in as_user(aicr, plane, "alice", "reproduce").stdout
    seed.runtime(active=None, candidate=candidate)
    assert f"Plan:        {candidate}" in as_user(aicr, plane, "alice", "reproduce").stdout
    seed.runtime(active=None, candidate=None)
    refused(as_user(aicr, plane, "alice", "reproduce"), "NO_PLAN")


def test_reproduce_by_configmap_name_checks_the_recorded_digest(aicr: Aicr, plane: envtest.ControlPlane,
                                                                seed: envtest.Seeder) -> None:
    digest = seed.plan()
    assert as_user(aicr, plane, "alice", "reproduce", f"aicr-plan-{digest[7:23]}").returncode == 0
    impostor = seed.plan(recorded_digest=envtest.random_digest())
    refused(as_user(aicr, plane, "alice", "reproduce", f"aicr-plan-{impostor[7:23]}"), "NOT_FOUND")


@pytest.mark.parametrize("kwargs,code", [
    ({"source": "applications"}, "NO_RECIPE"),
    ({"render_flags": None}, "NO_RENDER_FLAGS"),
    ({"recipe_digest": "sha256:" + "0" * 64}, "DIGEST_MISMATCH"),
])
def test_reproduce_refusals_write_nothing(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                          kwargs: dict, code: str) -> None:  # type: ignore[type-arg]
    refused(as_user(aicr, plane, "alice", "reproduce", seed.plan(**kwargs)), code)
    assert not (aicr.cwd / "aicr-reproduce").exists()


def test_reproduce_quotes_hostile_values(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    digest = seed.plan(render_flags=["--deployer", "argocd; touch /tmp/pwned", "$(reboot)"])
    proc = as_user(aicr, plane, "alice", "reproduce", digest)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    assert "'argocd; touch /tmp/pwned' '$(reboot)'" in proc.stdout


@pytest.mark.parametrize("kwargs,field", [
    ({"aicr_image": "--privileged"}, "aicrImage '--privileged'"),
    ({"aicr_image": "-v/:/host"}, "aicrImage '-v/:/host'"),
    ({"aicr_image": ""}, "aicrImage ''"),
    ({"aicr_image": "ghcr.io/nvidia/aicr@sha256:x`id`"}, "aicrImage 'ghcr.io/nvidia/aicr@sha256:x`id`'"),
    ({"aicr_image": "ghcr.io/nvidia/aicr:latest"}, "aicrImage 'ghcr.io/nvidia/aicr:latest'"),
    ({"bundle": ""}, "bundle ''"),
    ({"bundle": "oci://--output=/etc/cron.d"}, "bundle 'oci://--output=/etc/cron.d'"),
    ({"render_flags": ["--deployer", "argocd\u202e"]}, "renderFlags[1] 'argocd\\u202e'"),
])
def test_reproduce_refuses_a_plan_that_would_inject_arguments(aicr: Aicr, plane: envtest.ControlPlane,
                                                              seed: envtest.Seeder, kwargs: dict,  # type: ignore[type-arg]
                                                              field: str) -> None:
    digest = seed.plan(**kwargs)
    proc = as_user(aicr, plane, "alice", "reproduce", digest, "-o", "json")
    refused(proc, "INVALID_PLAN")
    assert error_line(proc).startswith(f"error: [INVALID_PLAN] plan {digest}: {field} "), proc.stderr
    assert error_line(proc).endswith("; nothing was written"), proc.stderr
    compare((proc.stdout, (aicr.cwd / "aicr-reproduce").exists()), expected=("", False))
