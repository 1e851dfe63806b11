"""The admission webhook on a real control plane: a raw `kubectl patch` meets the policies `kubectl aicr` runs.

A control plane of this module's own (never the session's shared one, which
must not have the webhook registered) runs `aicr-admission` as a local
process with its own serving certificate, registered by URL with the
manifest's rules and matchConditions, acting with the RBAC the manifest
grants its service account. Change windows are chosen around the real
current time: the clocks of the API server and the webhook cannot be frozen.
"""
from __future__ import annotations

import collections
import datetime as dt
import hashlib
import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import envtest
import pytest
import yaml
from admission_testbed import Webhook
from testfixtures import compare

from aicr_core.errors import AicrError

from support.harness import Aicr, error_line, started_plane
from support.plugin_env import EXAMPLES, PluginPath
from support.windows import ALL_DAYS, windows_except_now

pytestmark = pytest.mark.cluster
HEAD = {"apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicy"}
DENIED_BY = 'admission webhook "policies.admission.aicr.run" denied the request: '

SetPolicy = Callable[..., None]


AUDIT_POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"], "rules": [
    {"level": "Metadata", "verbs": ["patch", "update"],
     "resources": [{"group": "operator.aicr.run", "resources": ["runtimerollouts"]}]},
    {"level": "None"}]}


@pytest.fixture(scope="module")
def audit_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("audit") / "audit.log"


@pytest.fixture(scope="module")
def admission_plane(audit_log: Path) -> Iterator[envtest.ControlPlane]:
    """A control plane for this module only, writing an audit log of rollout writes (Metadata level)."""
    policy = audit_log.parent / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump(AUDIT_POLICY))
    yield from started_plane([f"--audit-policy-file={policy}", f"--audit-log-path={audit_log}"])


@pytest.fixture(scope="module")
def webhook(admission_plane: envtest.ControlPlane) -> Iterator[Webhook]:
    hook = Webhook(admission_plane)
    hook.apply_rbac()
    hook.start()
    hook.register()
    yield hook
    hook.stop()


@pytest.fixture
def hook(webhook: Webhook) -> Iterator[Webhook]:
    """The webhook, running as it should again after the test (whatever the test did to it)."""
    yield webhook
    if webhook.proc is None or webhook.proc.poll() is not None or webhook.restarted:
        webhook.restarted = False
        webhook.stop()
        webhook.start()


@pytest.fixture
def plane(admission_plane: envtest.ControlPlane) -> envtest.ControlPlane:
    return admission_plane


@pytest.fixture
def seed(admission_plane: envtest.ControlPlane) -> envtest.Seeder:
    return envtest.Seeder(admission_plane)


@pytest.fixture
def set_policy(plane: envtest.ControlPlane, webhook: Webhook) -> Iterator[SetPolicy]:
    """Publish a policy file and wait until the webhook decides with it; deleted after the test."""

    def publish(policies: dict[str, Any] | None = None, *, text: str | None = None, wait: bool = True) -> float:
        body = text if text is not None else yaml.safe_dump({**HEAD, "policies": policies or {}})
        configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "aicr-approval-policy", "namespace": "aicr-system"},
                     "data": {"policy.yaml": body}}
        plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
        plane.kubectl("create", "-f", "-", input=json.dumps(configmap))
        published = time.monotonic()
        digest = "sha256:" + hashlib.sha256(body.encode()).hexdigest()
        while wait and digest not in webhook.get("/readyz")[1]:
            assert time.monotonic() - published < 10, webhook.get("/readyz")
            time.sleep(0.1)
        return time.monotonic() - published

    yield publish
    plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
    ends = time.monotonic() + 10
    while "no ConfigMap" not in webhook.get("/readyz")[1] and time.monotonic() < ends:
        time.sleep(0.1)


def as_user(aicr: Aicr, plane: envtest.ControlPlane, user: str, *args: str,
            **env: str) -> subprocess.CompletedProcess[str]:
    return aicr(*args, kubeconfig=plane.kubeconfig_for(user), **env)


def raw_patch(plane: envtest.ControlPlane, user: str, name: str, spec: dict[str, Any],
              *flags: str) -> subprocess.CompletedProcess[str]:
    return plane.kubectl("patch", "runtimerollout", name, "--type=merge", f"-p={json.dumps({'spec': spec})}", *flags,
                         user=user, check=False)


def stored(plane: envtest.ControlPlane, name: str) -> dict[str, Any]:
    return json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["spec"]  # type: ignore[no-any-return]


def now_plus(**delta: float) -> str:
    return envtest.rfc3339(dt.datetime.now(dt.timezone.utc) + dt.timedelta(**delta))


def approval(user: str = "alice", **delta: float) -> dict[str, str]:
    return {"user": user, "expires": now_plus(**(delta or {"hours": 2})), "reason": "CHG-1 upgrade"}






CLOSED = {"change-window": {"timeZone": "UTC", "windows": windows_except_now()}}
OPEN = {"change-window": {"timeZone": "UTC", "windows": [{"days": ALL_DAYS, "from": "00:00", "to": "24:00"}]}}


def refused(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    assert proc.returncode != 0, proc.stdout
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)
    return proc.stderr


# -- the change window, both ways in -----------------------------------------------------------------

def test_outside_the_window_the_cli_refuses_locally_and_a_raw_patch_is_refused_by_the_webhook(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, hook: Webhook, set_policy: SetPolicy) -> None:
    windows_closed = CLOSED["change-window"]["windows"]
    set_policy({"change-window": {"timeZone": "UTC", "windows": windows_closed}})
    by_cli, by_patch = seed.rollout(), seed.rollout()

    proc = as_user(aicr, plane, "alice", "approve", by_cli, "--reason", "CHG-1 upgrade")
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    assert error_line(proc).startswith("error: [POLICY_DENIED] "), proc.stderr
    assert "  change-window: it is " in proc.stderr and "outside every change window" in proc.stderr
    compare(hook.decisions(by_cli), expected=[])  # refused before any write: the webhook never saw it

    stderr = refused(raw_patch(plane, "alice", by_patch, {"approval": approval()}), DENIED_BY,
                     "[POLICY_DENIED] 1 policy violation(s); nothing was written\nchange-window: it is ",
                     "outside every change window (Mon,Tue,Wed,Thu,Fri,Sat,Sun")
    assert "Forbidden" in stderr, stderr
    compare([stored(plane, n).get("approval") for n in (by_cli, by_patch)], expected=[None, None])
    (decision,) = hook.decisions(by_patch)
    compare({k: decision[k] for k in ("user", "actions", "verdict", "code", "violated", "dryRun")}, expected={
        "user": "alice", "actions": ["approve"], "verdict": "deny", "code": "POLICY_DENIED",
        "violated": ["change-window"], "dryRun": False})

    set_policy(OPEN)
    proc = as_user(aicr, plane, "alice", "approve", by_cli, "--reason", "CHG-1 upgrade")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    compare(raw_patch(plane, "alice", by_patch, {"approval": approval()}).returncode, expected=0)
    compare([stored(plane, n)["approval"]["user"] for n in (by_cli, by_patch)], expected=["alice", "alice"])
    compare([[d["verdict"] for d in hook.decisions(n)] for n in (by_cli, by_patch)],
            expected=[["allow"], ["deny", "allow"]])  # the CLI's one write, decided once


def raw_write(plane: envtest.ControlPlane, user: str, name: str,
              body: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return plane.kubectl("patch", "runtimerollout", name, "--type=merge", f"-p={json.dumps(body)}", user=user,
                         check=False)


def override_record(plane: envtest.ControlPlane, name: str) -> list[dict[str, Any]]:
    metadata = json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["metadata"]
    return json.loads(metadata.get("annotations", {}).get("aicr.run/overrides", "[]"))  # type: ignore[no-any-return]


def with_record(entries: list[dict[str, Any]] | None, **spec: Any) -> dict[str, Any]:
    """A merge patch that sets the override record (None: deletes it) and `spec`."""
    body: dict[str, Any] = {"metadata": {"annotations": {
        "aicr.run/overrides": None if entries is None else json.dumps(entries)}}}
    return {**body, "spec": spec} if spec else body


def test_an_override_is_recorded_shown_and_guarded_on_the_operators_own_crds(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, hook: Webhook, set_policy: SetPolicy) -> None:
    """The whole flow on CRDs with nothing added: recorded in an annotation by the CLI's one write, shown by
    describe, passed by the webhook; the record only grows; a policy that is not overridable stays a refusal."""
    crd = json.loads(plane.kubectl("get", "crd", "runtimerollouts.operator.aicr.run", "-o", "json").stdout)
    assert "overrides" not in json.dumps(crd), "the test plane's CRD must be the operator's own"
    set_policy({"change-window": {**CLOSED["change-window"], "overridable": True}, "max-approval": {"max": "1h"}})
    name = seed.rollout()
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1 hotfix", "--expires", "2h",
                   "--override", "change-window", "--override", "max-approval")
    refused(proc, "[POLICY_DENIED]", "--override max-approval: the policy is not overridable")
    compare((stored(plane, name).get("approval"), override_record(plane, name), hook.decisions(name)),
            expected=(None, [], []))
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1 hotfix", "--expires", "30m",
                   "--override", "change-window")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    (decision,) = hook.decisions(name)
    compare((decision["verdict"], decision["overridden"]), expected=("allow", ["change-window"]))
    (entry,) = override_record(plane, name)
    compare({k: entry[k] for k in ("user", "action", "policies")},
            expected={"user": "alice", "action": "approve", "policies": ["change-window"]})
    text = as_user(aicr, plane, "bob", "describe", name).stdout
    assert f"Overrides:    change-window by alice at approve ({entry['time']})" in text, text
    compare(json.loads(as_user(aicr, plane, "bob", "describe", name, "-o", "json").stdout)["overrides"],
            expected=[entry])

    # Append-only, whoever writes: the admin too (RBAC lets anyone who may patch edit annotations).
    for who, record in (("admin", [{**entry, "policies": ["max-approval"]}]), ("admin", []), ("admin", None),
                        ("alice", [entry, {**entry, "action": "revoke"}])):
        refused(raw_write(plane, who, name, with_record(record)), DENIED_BY)
    compare(override_record(plane, name), expected=[entry])

    other = seed.rollout()  # the same override, forged for another user's approval by a raw patch
    forged = {"user": "bob", "action": "approve", "policies": ["change-window"], "time": now_plus()}
    refused(raw_write(plane, "alice", other, with_record([forged], approval=approval())), DENIED_BY,
            "an override must name the requesting user alice")
    refused(raw_write(plane, "alice", other, with_record([{**forged, "user": "alice"}])), DENIED_BY,
            "only in the write of the approval, revocation or acknowledgement it overrides")
    refused(raw_patch(plane, "alice", other, {"approval": approval()}), DENIED_BY, "change-window: it is ")
    compare(raw_write(plane, "alice", other, with_record([{**forged, "user": "alice"}], approval=approval(
        minutes=30))).returncode, expected=0)  # a raw write may override as the CLI does, for its own write


def test_acknowledgements_and_revocations_by_the_cli_pass_admission_with_their_overrides(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, hook: Webhook, set_policy: SetPolicy) -> None:
    """Four eyes: bob approved; his acknowledgement and revocation pass only with the override the CLI records."""
    set_policy({"four-eyes": {"overridable": True, "revoke": True}})
    bob_approved = {"user": "bob", "expires": now_plus(hours=2), "reason": "CHG-1 upgrade"}
    name = seed.rollout(phase="AwaitingAcknowledgement", approval=bob_approved, awaiting_release="nvsentinel")
    entry = {"release": "nvsentinel", "user": "bob", "time": now_plus()}
    refused(raw_patch(plane, "bob", name, {"acknowledgements": [entry]}), DENIED_BY,
            "four-eyes: bob approved this rollout, so someone else must acknowledge it")
    for args in (["acknowledge", name], ["revoke", name, "--reason", "CHG-2 stop"]):
        proc = as_user(aicr, plane, "bob", *args, "--override", "four-eyes")
        compare(proc.returncode, expected=0, suffix=proc.stderr)
    compare([(d["actions"], d["verdict"], d["overridden"]) for d in hook.decisions(name)], expected=[
        (["acknowledge"], "deny", []), (["acknowledge"], "allow", ["four-eyes"]), (["revoke"], "allow", ["four-eyes"])])


def test_an_expired_approval_written_by_a_raw_patch_is_refused(plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                              hook: Webhook) -> None:
    name = seed.rollout()
    refused(raw_patch(plane, "alice", name, {"approval": approval(minutes=-5)}), DENIED_BY,
            "the approval expires at ", "which is not in the future (the webhook's clock says ")
    compare(stored(plane, name).get("approval"), expected=None)
    compare(raw_patch(plane, "alice", name, {"approval": approval(minutes=5)}).returncode, expected=0)


def test_a_revocation_or_acknowledgement_must_be_dated_now(plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                           hook: Webhook) -> None:
    approved = {"user": "bob", "expires": now_plus(hours=2), "reason": "CHG-1"}
    name = seed.rollout(phase="AwaitingAcknowledgement", approval=approved, awaiting_release="nvsentinel")
    refused(raw_patch(plane, "alice", name, {"acknowledgements": [
        {"release": "nvsentinel", "user": "alice", "time": now_plus(minutes=-3)}]}), DENIED_BY,
        "the acknowledgement of nvsentinel is dated ", "more than a minute from now")
    compare(raw_patch(plane, "alice", name, {"acknowledgements": [
        {"release": "nvsentinel", "user": "alice", "time": now_plus()}]}).returncode, expected=0)
    refused(raw_patch(plane, "alice", name, {"revocation": {"user": "alice", "time": "2020-01-01T00:00:00Z",
                                                             "reason": "backdated"}}),
            DENIED_BY, "the revocation is dated 2020-01-01T00:00:00Z")
    compare(raw_patch(plane, "alice", name, {"revocation": {"user": "alice", "time": now_plus(),
                                                             "reason": "stop"}}).returncode, expected=0)


# -- what reaches the webhook, and what happens without it -------------------------------------------

def test_status_updates_and_other_writes_never_reach_the_webhook(plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                                 hook: Webhook) -> None:
    name = seed.rollout()
    before = len(hook.decisions())
    for phase in ("Progressing", "AwaitingApproval", "Validating", "AwaitingApproval"):
        seed.set_rollout_status(name, {"phase": phase, "message": f"now {phase}"})
    plane.kubectl("label", "runtimerollout", name, "example=1")
    compare(raw_patch(plane, "alice", name, {"approval": approval()}).returncode, expected=0)
    seed.set_rollout_status(name, {"phase": "Progressing", "message": "approved"})
    decisions = hook.decisions()[before:]
    compare([(d["rollout"], d["actions"]) for d in decisions], expected=[(name, ["approve"])])


def test_with_the_webhook_down_every_approval_write_is_refused_and_status_updates_still_work(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, hook: Webhook) -> None:
    name = seed.rollout()
    compare(hook.stop(), expected=0)  # SIGTERM: a graceful exit
    refused(raw_patch(plane, "alice", name, {"approval": approval()}), "failed calling webhook",
            "policies.admission.aicr.run")
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1 upgrade")
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    assert "failed calling webhook" in proc.stderr and error_line(proc).startswith("error: [UNAVAILABLE] "), proc.stderr
    compare(stored(plane, name).get("approval"), expected=None)
    seed.set_rollout_status(name, {"phase": "Progressing", "message": "the operator carries on"})
    compare(json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["status"]["phase"],
            expected="Progressing")


# -- policies only the webhook has ------------------------------------------------------------------

RAISING = '''
from aicr_core.plugin import hookimpl

@hookimpl
def aicr_pre_approve(approval):
    raise RuntimeError("the ticket system is down")
'''


def test_a_policy_that_raises_denies_and_the_cli_shows_the_servers_message(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, hook: Webhook, tmp_path: Path) -> None:
    plugins = PluginPath(tmp_path / "webhook-plugins").add(
        "flaky-policy", "1.0", {"aicr.policies": {"flaky": "flaky_policy"}}, modules={"flaky_policy": RAISING})
    hook.restarted = True
    hook.restart(env=plugins.env())
    name = seed.rollout()
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1 upgrade")  # the CLI lacks the plugin
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    compare(proc.stderr.splitlines(), expected=[
        f"error: [ADMISSION_DENIED] {DENIED_BY}[POLICY_ERROR] a policy failed; refusing (fail closed)",
        "  flaky: raised RuntimeError: the ticket system is down"])
    compare(stored(plane, name).get("approval"), expected=None)
    compare(hook.decisions(name)[-1]["violated"], expected=["flaky"])


def test_a_site_policy_reads_the_ticket_from_the_reason_under_admission(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, hook: Webhook, set_policy: SetPolicy,
        tmp_path: Path) -> None:
    """The site example's change-ticket policy, in the webhook: no --ticket flag there, the reason counts.

    It waits to be configured (INACTIVE_UNTIL_CONFIGURED): the cluster's policy file names it, and it is
    installed in the webhook only, or in both.
    """
    plugins = PluginPath(tmp_path / "site").add_example(EXAMPLES / "aicr-site-example")
    hook.restarted = True
    hook.restart(env=plugins.env())
    set_policy({"change-ticket": {}})
    plain, flagged, cited = seed.rollout(), seed.rollout(), seed.rollout()
    # A write without a ticket in its reason, by a client without the plugin (kubectl itself: our CLI would
    # refuse a policy file naming a policy it does not have): the webhook refuses it, naming the policy.
    proc = raw_patch(plane, "alice", plain, {"approval": {**approval(), "reason": "routine upgrade"}})
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    assert "[POLICY_DENIED] 1 policy violation(s); nothing was written" in proc.stderr, proc.stderr
    assert "change-ticket: the reason must cite a change ticket (CHG-1234): 'routine upgrade'" in proc.stderr, \
        proc.stderr
    compare(stored(plane, plain).get("approval"), expected=None)
    site = aicr.with_env(**plugins.env())  # the CLI with the plugin: --ticket is recorded in the reason
    proc = as_user(site, plane, "alice", "approve", flagged, "--reason", "routine upgrade", "--ticket", "CHG-42")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    compare(stored(plane, flagged)["approval"]["reason"], expected="routine upgrade (CHG-42)")
    compare(raw_patch(plane, "alice", cited, {"approval": {**approval(), "reason": "CHG-7 upgrade"}}).returncode,
            expected=0)


# -- the policy file --------------------------------------------------------------------------------

def test_a_change_of_the_policy_file_takes_effect_within_10_seconds(plane: envtest.ControlPlane,
                                                                    seed: envtest.Seeder, hook: Webhook,
                                                                    set_policy: SetPolicy) -> None:
    name = seed.rollout()
    set_policy(OPEN)
    compare(raw_patch(plane, "alice", name, {"approval": approval()}, "--dry-run=server").returncode, expected=0)
    set_policy(CLOSED, wait=False)
    changed = time.monotonic()
    while raw_patch(plane, "alice", name, {"approval": approval()}, "--dry-run=server").returncode == 0:
        assert time.monotonic() - changed < 10, "the new policy file did not take effect within 10 s"
        time.sleep(0.2)
    took = time.monotonic() - changed
    assert took < 10, took
    compare(hook.proc is not None and hook.proc.poll(), expected=None)  # no restart


def test_a_policy_file_that_does_not_validate_denies_every_decided_write_naming_the_error(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, hook: Webhook, set_policy: SetPolicy) -> None:
    name = seed.rollout()
    set_policy(text=yaml.safe_dump({**HEAD, "policies": {"change-window": {"windows": [
        {"days": ["Mon"], "from": "18:00", "to": "09:00"}]}}}))
    refused(raw_patch(plane, "alice", name, {"approval": approval()}), DENIED_BY, "[POLICY_ERROR] policy file ",
            "does not validate", "policies.change-window.windows[0].to")
    compare(raw_patch(plane, "admin", name, {"approval": approval("admin")}).returncode, expected=1)  # even admin's
    state = hook.get("/readyz")
    compare(state[0], expected=200)
    assert state[1].startswith("denying every decided write: policy file ConfigMap"), state


def test_the_webhook_can_read_the_policy_file_and_nothing_else(plane: envtest.ControlPlane, hook: Webhook,
                                                               set_policy: SetPolicy) -> None:
    set_policy(OPEN)
    own = ["kubectl", f"--kubeconfig={hook.kubeconfig}", "-n", "aicr-system"]
    ok = subprocess.run([*own, "get", "configmap", "aicr-approval-policy", "-o", "name"], capture_output=True,
                        text=True)
    compare((ok.returncode, ok.stdout.strip()), expected=(0, "configmap/aicr-approval-policy"), suffix=ok.stderr)
    for other in (["get", "configmaps"], ["get", "configmap", "kube-root-ca.crt"], ["get", "secrets"],
                  ["get", "runtimerollouts"]):
        proc = subprocess.run([*own, *other], capture_output=True, text=True)
        assert proc.returncode != 0 and "Forbidden" in proc.stderr, (other, proc.stderr)


# -- the audit trail -----------------------------------------------------------------------------------

def events_of(plane: envtest.ControlPlane, name: str, count: int, timeout: float = 10) -> list[dict[str, Any]]:
    """The Events regarding rollout `name` in `default`, once there are `count` (they are sent in the background)."""
    ends = time.monotonic() + timeout
    while True:
        items = json.loads(plane.kubectl("get", "events.v1.events.k8s.io", "-n", "default",
                                         f"--field-selector=regarding.name={name}", "-o", "json").stdout)["items"]
        if len(items) >= count or time.monotonic() > ends:
            return sorted(items, key=lambda e: e["eventTime"])  # type: ignore[no-any-return]
        time.sleep(0.2)


def test_each_decided_write_leaves_one_event_and_a_dry_run_none(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, hook: Webhook, set_policy: SetPolicy) -> None:
    set_policy({"change-window": {**CLOSED["change-window"], "overridable": True}})
    name, dry = seed.rollout(), seed.rollout()
    refused(raw_patch(plane, "alice", name, {"approval": approval()}), DENIED_BY)
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1 hotfix", "--override", "change-window")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    refused(raw_patch(plane, "alice", dry, {"approval": approval()}, "--dry-run=server"), DENIED_BY)
    set_policy(OPEN)
    proc = as_user(aicr, plane, "bob", "revoke", name, "--reason", "CHG-2 stop")
    compare(proc.returncode, expected=0, suffix=proc.stderr)

    denied, overridden, allowed = events_of(plane, name, 3)
    uid = json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["metadata"]["uid"]
    compare([(e["action"], e["reason"], e["type"]) for e in (denied, overridden, allowed)], expected=[
        ("approve", "PolicyDenied", "Warning"), ("approve", "PolicyOverridden", "Warning"),
        ("revoke", "PolicyAllowed", "Normal")])
    for event in (denied, overridden, allowed):
        compare((event["reportingController"], event["regarding"]), expected=("aicr-admission", {
            "apiVersion": "operator.aicr.run/v1alpha1", "kind": "RuntimeRollout", "name": name, "uid": uid}))
    assert denied["note"].startswith("alice: approve denied by change-window: [POLICY_DENIED] "), denied["note"]
    compare(overridden["note"], expected="alice: approve allowed with override of change-window "
                                         "(policies: change-window)")
    compare(allowed["note"], expected="bob: revoke allowed (policies: none)")  # change-window decides approvals only
    compare(events_of(plane, dry, 1, timeout=1.5), expected=[])  # a dry run records nothing
    compare(hook.metrics()[("aicr_admission_events_dropped_total", ())], expected=0.0)


def test_repeated_refusals_are_one_event_with_a_series(plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                       hook: Webhook, set_policy: SetPolicy) -> None:
    set_policy(CLOSED)
    name = seed.rollout()
    for _ in range(3):
        refused(raw_patch(plane, "alice", name, {"approval": approval()}), DENIED_BY)
    ends = time.monotonic() + 10
    while (events := events_of(plane, name, 1)) and (events[0].get("series") or {}).get("count") != 3:
        assert time.monotonic() < ends, events
        time.sleep(0.2)
    compare(len(events), expected=1)
    compare(events[0]["reason"], expected="PolicyDenied")


def test_describe_ends_with_the_rollouts_events_for_an_approver_and_none_for_a_viewer(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, hook: Webhook, set_policy: SetPolicy) -> None:
    set_policy(CLOSED)
    name = seed.rollout()
    for _ in range(2):
        refused(raw_patch(plane, "alice", name, {"approval": approval()}), DENIED_BY)
    ends = time.monotonic() + 10
    while (events_of(plane, name, 1)[0].get("series") or {}).get("count") != 2:
        assert time.monotonic() < ends
        time.sleep(0.2)
    proc = as_user(aicr, plane, "bob", "describe", name)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    tail = proc.stdout.split("\nEvents:\n", 1)[1].splitlines()
    compare(tail[0].split(), expected=["Type", "Reason", "Age", "From", "Message"])
    (row,) = tail[1:]
    assert row.startswith("  Warning  PolicyDenied  ") and " (x2 over " in row, row
    assert "  aicr-admission  alice: approve denied by change-window: [POLICY_DENIED] " in row, row
    doc = json.loads(as_user(aicr, plane, "bob", "describe", name, "-o", "json").stdout)
    compare([(e["reason"], e["action"], e["from"], e["count"]) for e in doc["events"]],
            expected=[("PolicyDenied", "approve", "aicr-admission", 2)])
    viewer = as_user(aicr, plane, "victor", "describe", name)  # may not list Events: none, no warning
    compare((viewer.returncode, "Events" in viewer.stdout, viewer.stderr), expected=(0, False, ""))
    hidden = as_user(aicr, plane, "bob", "describe", name, "--show-events=false", "-o", "json")
    compare(json.loads(hidden.stdout)["events"], expected=None)


def test_the_api_servers_audit_log_holds_each_decision_beside_the_request(
        plane: envtest.ControlPlane, seed: envtest.Seeder, hook: Webhook, set_policy: SetPolicy,
        audit_log: Path) -> None:
    set_policy({"change-window": {**CLOSED["change-window"], "overridable": True}})
    name = seed.rollout()
    refused(raw_patch(plane, "alice", name, {"approval": approval()}), DENIED_BY)
    override = {"user": "alice", "action": "approve", "policies": ["change-window"], "time": now_plus()}
    compare(raw_write(plane, "alice", name, with_record([override], approval=approval())).returncode, expected=0)
    prefix = "policies.admission.aicr.run/"
    entries = [json.loads(line) for line in audit_log.read_text().splitlines()]
    found = [{k.removeprefix(prefix): v for k, v in (e.get("annotations") or {}).items() if k.startswith(prefix)}
             for e in entries if e.get("objectRef", {}).get("name") == name and e.get("verb") == "patch"
             and e.get("stage") == "ResponseComplete"]
    compare(found, expected=[
        {"verdict": "deny", "actions": "approve", "policies": "change-window"},
        {"verdict": "allow", "actions": "approve", "policies": "change-window", "overrides": "change-window"}])


# -- the process -------------------------------------------------------------------------------------

def test_sigterm_fails_readyz_then_drains_and_exits_cleanly(webhook: Webhook, hook: Webhook) -> None:
    hook.restarted = True
    hook.restart("--shutdown-delay-duration=2s")
    assert hook.proc is not None
    hook.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    compare((hook.get("/readyz")[0], hook.get("/healthz")), expected=(503, (200, "ok\n")))
    compare(hook.proc.wait(timeout=10), expected=0)
    lines = [line["msg"] for line in hook.log_lines()[-3:]]
    compare(lines[-2:], expected=["shutting down", "stopped"])


def test_metrics_count_reviews_and_kept_connections_through_the_api_server(
        plane: envtest.ControlPlane, seed: envtest.Seeder, hook: Webhook, set_policy: SetPolicy) -> None:
    """60 approvals from 4 writers: 60 reviews counted and timed, over a handful of kept connections."""
    import admission_load

    set_policy(OPEN)
    names = [seed.rollout(steps=[], records=[]) for _ in range(60)]
    before = hook.metrics()
    load = admission_load.approve(plane, names, writers=4)
    after = hook.metrics()
    compare(load.failures, expected=[])

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after[key] - before.get(key, 0.0)

    compare(grew("aicr_admission_reviews_total", action="approve", verdict="allow"), expected=60.0)
    compare(grew("aicr_admission_review_duration_seconds_count"), expected=60.0)
    connections = grew("aicr_admission_connections_total")
    assert connections <= 8, connections  # kept and reused, not one per review
    compare((after[("aicr_admission_policy_file_ok", ())], after[("aicr_admission_policy_file_age_seconds", ())] < 10),
            expected=(1.0, True))
    set_policy(text="not: [a policy file")
    compare(hook.metrics()[("aicr_admission_policy_file_ok", ())], expected=0.0)


def test_sigterm_under_load_loses_no_review_during_the_shutdown_delay(
        plane: envtest.ControlPlane, seed: envtest.Seeder, webhook: Webhook, set_policy: SetPolicy,
        hook: Webhook) -> None:  # `hook` last: it restarts the webhook before set_policy cleans up
    """Six writers through kube-apiserver; SIGTERM mid-run; they go on for 3 s of the 5 s delay.

    Not one PATCH fails, and each rollout written is decided exactly once: the
    API server's kept connections are answered with `Connection: close` and it
    opens new ones, which the webhook still accepts during the delay.
    """
    import threading

    import admission_load

    set_policy(OPEN)
    hook.restarted = True
    hook.restart("--shutdown-delay-duration=5s")
    assert hook.proc is not None
    names = [seed.rollout(steps=[], records=[]) for _ in range(600)]
    signalled: list[float] = []

    def until() -> bool:
        return bool(signalled) and time.monotonic() - signalled[0] > 3.0

    def terminate() -> None:
        time.sleep(1.5)  # steady load first
        assert hook.proc is not None
        hook.proc.send_signal(signal.SIGTERM)
        signalled.append(time.monotonic())

    killer = threading.Thread(target=terminate)
    killer.start()
    load = admission_load.approve(plane, names, writers=6, until=until, pace=0.05)  # steady: ~100/s at most
    killer.join()
    compare(hook.proc.wait(timeout=20), expected=0)
    compare(load.failures, expected=[])
    after = sum(1 for t in load.finished if t > signalled[0])
    assert after >= 10 and len(load.written) - after >= 10, (len(load.written), after)  # load on both sides
    lines = hook.log_lines()
    stop_at = max(i for i, line in enumerate(lines) if line["msg"] == "shutting down")
    decided = collections.Counter(d["rollout"] for d in hook.decisions() if d["rollout"] in set(names))
    compare(sorted(set(decided.values())), expected=[1])  # none decided twice
    compare(sorted(decided), expected=sorted(load.written))  # and every write that succeeded was decided
    during = [line for line in lines[stop_at:] if line["msg"] == "decision"]
    assert len(during) >= after - 6, (len(during), after)  # (a PATCH decided just before may end just after)
    compare(lines[-1]["msg"], expected="stopped")


def test_the_shipped_manifests_are_accepted_by_the_api_server(plane: envtest.ControlPlane, webhook: Webhook) -> None:
    """Everything in manifests/admission/ but cert-manager's own kinds (no cert-manager here), server dry run."""
    from admission_testbed import ADMISSION_MANIFESTS, manifest_documents

    docs = [doc for path in sorted(ADMISSION_MANIFESTS.glob("*.yaml")) for doc in manifest_documents(path.name)
            if not doc["apiVersion"].startswith("cert-manager.io/")]
    assert {d["kind"] for d in docs} >= {"ServiceAccount", "Role", "RoleBinding", "Service", "Deployment",
                                          "PodDisruptionBudget", "ValidatingWebhookConfiguration"}
    proc = plane.kubectl("apply", "--dry-run=server", "-f", "-",
                         input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}), check=False)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    assert "deployment.apps/aicr-admission created (server dry run)" in proc.stdout, proc.stdout


def test_without_kubeconfig_it_reads_the_policy_file_as_its_service_account(
        plane: envtest.ControlPlane, webhook: Webhook, set_policy: SetPolicy, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """In a pod: the official client's in-cluster loader, a real service-account token from the API server."""
    from kubernetes.config import incluster_config

    from aicr_admission.main import service_session
    from aicr_core.domain import rollouts

    set_policy(OPEN)
    token = plane.kubectl("create", "token", "aicr-admission", "-n", "aicr-system").stdout.strip()
    (tmp_path / "token").write_text(token)
    (tmp_path / "ca.crt").write_bytes(plane.server_ca_pem)
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "token"))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(tmp_path / "ca.crt"))
    host, port = plane.url.removeprefix("https://").split(":")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    cluster = service_session(None)
    compare(cluster.whoami().username, expected="system:serviceaccount:aicr-system:aicr-admission")
    text, source = rollouts.read_policy_file(cluster)
    assert text is not None and "change-window" in text and source.startswith("ConfigMap aicr-system/"), text
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    with pytest.raises(AicrError, match=r"\[KUBECONFIG\] no --kubeconfig, and not running in a pod"):
        service_session(None)


# -- one decision, three ways in ---------------------------------------------------------------------

NOT_VALID = yaml.safe_dump({**HEAD, "policies": {"change-window": {"windows": "every day"}}})
AGREEMENT = [  # (what the policy file is, --override flags, the decision all three reach)
    ("none", (), None),
    ("closed", (), "POLICY_DENIED"),
    ("closed, overridable", ("--override", "change-window"), None),
    ("closed", ("--override", "change-window"), "POLICY_DENIED"),  # not overridable
    ("closed, warn", (), None),
    ("not valid", (), "POLICY_ERROR"),
    ("no policy.yaml key", (), "POLICY_ERROR"),  # a file nobody can read: refuses (fail closed)
]


def publish_state(plane: envtest.ControlPlane, webhook: Webhook, set_policy: SetPolicy, state: str) -> None:
    """Put the policy file into `state` and wait until the webhook decides with it."""
    closed = dict(CLOSED["change-window"])
    if state == "none" or state == "no policy.yaml key":
        plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
        if state == "none":
            words = "no ConfigMap"
        else:
            plane.kubectl("create", "configmap", "-n", "aicr-system", "aicr-approval-policy",
                          "--from-literal=other.yaml=x")
            words = "no key policy.yaml"
        ends = time.monotonic() + 10
        while words not in webhook.get("/readyz")[1]:
            assert time.monotonic() < ends, webhook.get("/readyz")
            time.sleep(0.1)
        return
    if state == "not valid":
        set_policy(text=NOT_VALID)
        return
    extra = {"overridable": True} if "overridable" in state else {"mode": "warn"} if "warn" in state else {}
    set_policy({"change-window": {**closed, **extra}})


@pytest.mark.parametrize("state, overrides, code", AGREEMENT)
def test_approve_policy_check_and_the_webhook_reach_the_same_decision(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, hook: Webhook, set_policy: SetPolicy,
        state: str, overrides: tuple[str, ...], code: str | None) -> None:
    """The CLI's check before a write (approve --dry-run=client), `policy check` and the webhook deciding a
    raw write of the same approval (server dry run) all go through decide_write: same verdict, same code."""
    publish_state(plane, hook, set_policy, state)
    name = seed.rollout()
    args = ("--reason", "CHG-1 upgrade", "--expires", "2h", *overrides)
    approve = as_user(aicr, plane, "alice", "approve", name, *args, "--dry-run=client")
    check = as_user(aicr, plane, "alice", "policy", "check", name, *args, "-o", "json")
    body: dict[str, Any] = {"spec": {"approval": approval()}}
    if overrides:
        body["metadata"] = {"annotations": {"aicr.run/overrides": json.dumps(
            [{"user": "alice", "action": "approve", "policies": ["change-window"], "time": now_plus()}])}}
    raw = plane.kubectl("patch", "runtimerollout", name, "--type=merge", f"-p={json.dumps(body)}",
                        "--dry-run=server", user="alice", check=False)

    def cli_code(proc: subprocess.CompletedProcess[str]) -> str | None:
        line = error_line(proc)
        return line.split("]", 1)[0].removeprefix("error: [") if line else None

    webhook_code = None
    if raw.returncode != 0:
        assert DENIED_BY in raw.stderr, raw.stderr
        webhook_code = raw.stderr.split(DENIED_BY, 1)[1].split("]", 1)[0].removeprefix("[")
    compare({"approve": cli_code(approve), "policy check": json.loads(check.stdout)["code"], "webhook": webhook_code},
            expected={"approve": code, "policy check": code, "webhook": code},
            suffix=f"{approve.stderr}\n{check.stderr}\n{raw.stderr}")
    compare((approve.returncode, check.returncode), expected=(0, 0) if code is None else (1, 1))
    compare(stored(plane, name).get("approval"), expected=None)


def test_a_write_records_the_policy_file_that_decided_it_and_the_webhook_refuses_another(
        aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder, hook: Webhook, set_policy: SetPolicy) -> None:
    set_policy(OPEN)
    body = yaml.safe_dump({**HEAD, "policies": OPEN})
    name = seed.rollout()
    proc = as_user(aicr, plane, "alice", "approve", name, "--reason", "CHG-1 upgrade")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    metadata = json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["metadata"]
    (record,) = json.loads(metadata["annotations"]["aicr.run/policy-decisions"])
    compare((record["location"], record["digest"]), expected=(
        "ConfigMap aicr-system/aicr-approval-policy (key policy.yaml)", "sha256:" + hashlib.sha256(
            body.encode()).hexdigest()))
    other = seed.rollout()
    elsewhere = {**record, "time": now_plus(), "location": "ConfigMap team/aicr-approval-policy (key policy.yaml)",
                 "digest": None}
    refused(raw_write(plane, "alice", other, {"metadata": {"annotations": {
        "aicr.run/policy-decisions": json.dumps([elsewhere])}}, "spec": {"approval": approval()}}), DENIED_BY,
        "decided under ConfigMap team/aicr-approval-policy (key policy.yaml) (no file), but the policy file in force "
        "is ConfigMap aicr-system/aicr-approval-policy")
    refused(raw_write(plane, "alice", name, {"metadata": {"annotations": {"aicr.run/policy-decisions": "[]"}}}),
            DENIED_BY, "only grows")
