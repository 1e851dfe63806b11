"""The fleet from a cluster inventory, end to end: a hub holding ClusterProfiles, and the real `kubectl aicr`.

The hub is the fleet's first plane (`gpu-lab-1`, the kubeconfig's current context) with a
ClusterProfile CRD written for these tests from the API's types. Its profiles point at the three
real planes (the hub itself among them), one through the deprecated `credentialProviders`, plus
one whose ControlPlaneHealthy is False (its server is down: it must never be contacted) and one
that offers only a provider the file lacks. The provider file's plugin is a script of the tests
(support/profile_plugin.py) that answers each member's token from what KUBERNETES_EXEC_INFO says
of the cluster, so every member reached proves `provideClusterInfo` and the exec extension; the
members act as `erin`, the planes' token user (an approver).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import envtest
import pytest
from testfixtures import compare

from support.fleet_planes import Fleet, Operator, rollout_spec, waves_file
from support.harness import BIN, Aicr, complete, error_line, words

TESTS = Path(__file__).resolve().parents[1]
CRD = TESTS / "support" / "manifests" / "cluster-inventory" / "clusterprofiles-crd.yaml"
READER = CRD.with_name("clusterprofile-reader.yaml")  # RBAC: the approvers may list ClusterProfiles
PLUGIN = TESTS / "support" / "profile_plugin.py"
GROUP, VERSION = "multicluster.x-k8s.io", "v1alpha1"
EXEC = "client.authentication.k8s.io/exec"
ARGS = "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"
ENVS = "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs"
PROVIDER = "aicr-test"
# The members, in the order the fleet takes them (namespace, then name), and the plane context of each live one.
LIVE = {"gpu-fleet/eu-1": "gpu-eu-1", "gpu-fleet/eu-2": "gpu-eu-2", "gpu-lab/lab-1": "gpu-lab-1"}
FOREIGN, SICK = "gpu-fleet/foreign", "gpu-fleet/sick"
MEMBERS = ["gpu-fleet/eu-1", "gpu-fleet/eu-2", FOREIGN, SICK, "gpu-lab/lab-1"]
EU = "region in (eu-west,eu-north)"


@dataclass
class Inventory:
    fleet: Fleet
    kubeconfig: Path      # the fleet's contexts, and hub-nora (the hub as a user who may not list profiles)
    providers: Path       # the provider file
    log: Path             # each plugin run, one JSON line
    tokens: dict[str, str]
    folder: Path

    def runs(self) -> list[dict[str, Any]]:
        """The plugin's runs since the last call (the log is emptied)."""
        if not self.log.exists():
            return []
        lines = self.log.read_text().splitlines()
        self.log.unlink()
        return [json.loads(line) for line in lines]

    def provider_file(self, name: str, **changes: Any) -> Path:
        """A provider file like the usual one, with changes to its exec config."""
        doc = json.loads(self.providers.read_text())
        doc["providers"][0]["execConfig"].update(changes)
        path = self.folder / name
        path.write_text(json.dumps(doc))
        return path

    def clean(self, proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
        """No token of any member in what the command printed."""
        for token in self.tokens.values():
            assert token not in proc.stdout and token not in proc.stderr, "a token reached the output"
        return proc


def cluster_of(plane_url: str, ca_pem: bytes, member: str, tokens: Path, region: str) -> dict[str, Any]:
    """An accessProviders cluster: the plane, and the extensions the plugin needs (member, tokens, region)."""
    return {"server": plane_url, "certificate-authority-data": envtest.b64(ca_pem), "extensions": [
        {"name": EXEC, "extension": {"member": member}},
        {"name": ARGS, "extension": ["--tokens", str(tokens), "--region", region]},
        # AppendIfNotExists: the file's AICR_TEST_PLUGIN_LOG wins (this path does not exist).
        {"name": ENVS, "extension": {"AICR_TEST_REGION": region, "AICR_TEST_PLUGIN_LOG": "/nonexistent/run.log"}}]}


def condition(status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": "ControlPlaneHealthy", "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-12-01T10:00:00Z"}


@pytest.fixture(scope="module")
def inventory(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Inventory]:
    from kubernetes import client

    folder = tmp_path_factory.mktemp("inventory")
    hub = fleet.member("gpu-lab-1").plane
    hub.kubectl("apply", "-f", str(CRD), "-f", str(READER))
    hub.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/clusterprofiles.{GROUP}")
    # A plane without the API, where alice may list profiles: its 404 is what a hub without the API says.
    fleet.member("gpu-eu-1").plane.kubectl("apply", "-f", str(READER))
    for namespace in ("gpu-fleet", "gpu-lab", "empty"):
        hub.kubectl("create", "namespace", namespace, check=False)
    planes = {member: fleet.member(context).plane for member, context in LIVE.items()}
    down = f"https://127.0.0.1:{envtest.free_port()}"
    tokens_path = folder / "tokens.json"
    known = {m.split("/")[1]: {"server": p.url, "token": p.exec_token} for m, p in planes.items()}
    known["sick"] = {"server": down, "token": "sick-token-never-asked"}
    tokens_path.write_text(json.dumps(known))
    tokens_path.chmod(0o600)

    def offered(member: str, region: str) -> dict[str, Any]:
        plane = planes[member]
        return {"name": PROVIDER, "cluster": cluster_of(plane.url, plane.server_ca_pem, member.split("/")[1],
                                                        tokens_path, region)}

    dead = {"server": down, "certificate-authority-data": envtest.b64(hub.server_ca_pem)}
    profiles = [
        # The profile lists "broken" first; the file names aicr-test first: the file's order decides.
        ("gpu-fleet", "eu-1", {"region": "eu-west"}, {"accessProviders": [
            {"name": "broken", "cluster": dead}, offered("gpu-fleet/eu-1", "eu-west")],
            "conditions": [condition("Unknown", "Probing", "not yet known")]}),
        ("gpu-fleet", "eu-2", {"region": "eu-north"}, {"credentialProviders": [offered("gpu-fleet/eu-2", "eu-north")],
                                                       "version": {"kubernetes": "v1.37.2"}}),
        ("gpu-fleet", "foreign", {"region": "ap-south"}, {"accessProviders": [
            {"name": "gke-fleet-only", "cluster": offered("gpu-fleet/eu-1", "ap-south")["cluster"]}]}),
        ("gpu-fleet", "sick", {"region": "us-west"}, {"accessProviders": [
            {"name": PROVIDER, "cluster": cluster_of(down, hub.server_ca_pem, "sick", tokens_path, "us-west")}],
            "conditions": [condition("False", "LeaseExpired", "the member's lease was not renewed for 5m")]}),
        ("gpu-lab", "lab-1", {"region": "us-east", "aicr.run/wave": "canary"}, {
            "accessProviders": [offered("gpu-lab/lab-1", "us-east")],
            "conditions": [condition("True", "Healthy", "ok")],
            "properties": [{"name": "gpu.nvidia.com/count", "value": "8"}]}),
    ]
    custom = client.CustomObjectsApi(hub.api("admin"))
    for namespace, name, labels, status in profiles:
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterProfile",
                "metadata": {"name": name, "namespace": namespace, "labels": {"x-k8s.io/cluster-manager": "test",
                                                                              **labels}},
                "spec": {"displayName": name, "clusterManager": {"name": "test"}}}
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "clusterprofiles", body)
        custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, "clusterprofiles", name,
                                                     {"status": status},
                                                     _content_type="application/merge-patch+json")
    log = folder / "runs.log"
    providers = folder / "providers.json"
    providers.write_text(json.dumps({"providers": [
        {"name": PROVIDER, "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                                          "args": [str(PLUGIN)], "env": [{"name": "AICR_TEST_PLUGIN_LOG",
                                                                          "value": str(log)}],
                                          "provideClusterInfo": True, "interactiveMode": "IfAvailable"},
         "profileSourcedCLIArgsPolicy": "Append", "profileSourcedEnvVarsPolicy": "AppendIfNotExists"},
        {"name": "broken", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1",
                                          "command": "/nonexistent/plugin"}}]}))
    doc = json.loads(fleet.kubeconfig.read_text())
    nora = hub.users["nora"]
    doc["users"].append({"name": "nora", "user": {"client-certificate-data": envtest.b64(nora.cert_pem),
                                                  "client-key-data": envtest.b64(nora.key_pem)}})
    doc["contexts"].append({"name": "hub-nora", "context": {"cluster": "gpu-lab-1", "user": "nora"}})
    kubeconfig = folder / "kubeconfig"
    kubeconfig.write_text(json.dumps(doc))
    kubeconfig.chmod(0o600)
    yield Inventory(fleet, kubeconfig, providers, log, {m: p.exec_token for m, p in planes.items()}, folder)
    hub.kubectl("delete", "-f", str(CRD), "-f", str(READER), "--ignore-not-found", "--wait=false", check=False)
    fleet.member("gpu-eu-1").plane.kubectl("delete", "-f", str(READER), "--ignore-not-found", check=False)


def profiles_args(inventory: Inventory, *more: str) -> list[str]:
    return ["--cluster-profiles", "--cluster-profile-providers", str(inventory.providers), *more]


def seed(inventory: Inventory) -> tuple[str, dict[str, str]]:
    """A plan with an open rollout in every live member: (digest, {member: rollout})."""
    digest, names = inventory.fleet.seed_plan()
    return digest, {member: names[context] for member, context in LIVE.items()}


def spec_of(inventory: Inventory, member: str, rollout: str) -> dict[str, Any]:
    return rollout_spec(inventory.fleet.member(LIVE[member]), rollout)


# -- reading ----------------------------------------------------------------------------------------------

def test_list_reads_every_kept_profile_and_fails_the_sick_and_the_foreign_alone(aicr: Aicr,
                                                                               inventory: Inventory) -> None:
    digest, names = seed(inventory)
    inventory.runs()
    proc = inventory.clean(aicr("list", *profiles_args(inventory), "-o", "json", kubeconfig=inventory.kubeconfig))
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    document = json.loads(proc.stdout)
    found = {(i["context"], i["name"]) for i in document["items"] if i["transition"]["to"] == digest}
    compare(found, expected=set(names.items()))
    contexts = [i["context"] for i in document["items"]]
    compare(sorted(set(contexts), key=contexts.index), expected=list(LIVE))  # namespace, then name
    errors = {e["context"]: (e["code"], e["message"]) for e in document["errors"]}
    compare(sorted(errors), expected=[FOREIGN, SICK])
    compare(errors[SICK][0], expected="UNAVAILABLE")
    assert "ControlPlaneHealthy=False" in errors[SICK][1] and "lease was not renewed for 5m" in errors[SICK][1]
    compare(errors[FOREIGN][0], expected="KUBECONFIG")
    assert f"ClusterProfile {FOREIGN}" in errors[FOREIGN][1] and '"gke-fleet-only"' in errors[FOREIGN][1], errors
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    compare(sorted(lines)[0].startswith(f"error: [KUBECONFIG] context {FOREIGN}: "), expected=True)
    # The plugin ran once a live member, with the profile's argument and environment; never for the sick one.
    runs = inventory.runs()
    compare(sorted(r["member"] for r in runs), expected=["eu-1", "eu-2", "lab-1"])
    compare({r["member"]: (r["region"], r["env"]) for r in runs},
            expected={"eu-1": ("eu-west", "eu-west"), "eu-2": ("eu-north", "eu-north"),
                      "lab-1": ("us-east", "us-east")})

    text = inventory.clean(aicr("list", *profiles_args(inventory, "--contexts", "gpu-fleet/eu-*,gpu-lab/*"),
                                kubeconfig=inventory.kubeconfig))
    compare((text.returncode, text.stderr), expected=(0, ""))
    header, *rows = text.stdout.splitlines()
    assert header.split()[:2] == ["CONTEXT", "NAME"], header
    for member, name in names.items():
        assert any(row.split()[:2] == [member, name] for row in rows), (member, name, text.stdout)

    named = aicr("list", *profiles_args(inventory, "--profile-namespace", "gpu-fleet", "--contexts",
                                        "gpu-fleet/eu-*"), "-o", "name", kubeconfig=inventory.kubeconfig)
    compare(named.returncode, expected=0, suffix=named.stderr)
    for member in ("gpu-fleet/eu-1", "gpu-fleet/eu-2"):
        assert f"{member}/runtimerollout.operator.aicr.run/{names[member]}" in named.stdout.splitlines()
    assert not any(line.startswith("gpu-lab/") for line in named.stdout.splitlines()), named.stdout


def test_version_names_each_member_in_its_heading(aicr: Aicr, inventory: Inventory) -> None:
    proc = inventory.clean(aicr("version", *profiles_args(inventory, "--contexts", f"*,!{SICK},!{FOREIGN}"),
                                kubeconfig=inventory.kubeconfig))
    compare((proc.returncode, proc.stderr), expected=(0, ""))
    headings = [line for line in proc.stdout.splitlines() if line.startswith("== ")]
    compare(headings, expected=[f"== {member} ==" for member in LIVE])
    assert proc.stdout.count("Server Version: v1.37") == 3, proc.stdout
    document = json.loads(aicr("version", *profiles_args(inventory, "--profile-selector", EU), "-o", "json",
                               kubeconfig=inventory.kubeconfig).stdout)
    compare([(i["kind"], i["context"]) for i in document["items"]],
            expected=[("Version", "gpu-fleet/eu-1"), ("Version", "gpu-fleet/eu-2")])
    compare(document["errors"], expected=[])


# -- approving --------------------------------------------------------------------------------------------

def test_a_plan_pinned_approval_of_the_profiles_a_selector_keeps(aicr: Aicr, inventory: Inventory) -> None:
    digest, names = seed(inventory)
    check = aicr("policy", "check", "--plan", digest, *profiles_args(inventory, "--profile-selector", EU),
                 "--reason", "CHG-21 check", "-o", "json", kubeconfig=inventory.kubeconfig)
    compare(check.returncode, expected=0, suffix=check.stderr)
    compare([(i["context"], i["rollout"], i["allowed"]) for i in json.loads(check.stdout)["items"]],
            expected=[("gpu-fleet/eu-1", names["gpu-fleet/eu-1"], True),
                      ("gpu-fleet/eu-2", names["gpu-fleet/eu-2"], True)])

    proc = inventory.clean(aicr("approve", "--plan", digest, *profiles_args(inventory, "--profile-selector", EU),
                                "--reason", "CHG-21 driver 580", "--expires", "2h", "--yes", "-o", "json",
                                kubeconfig=inventory.kubeconfig))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    document = json.loads(proc.stdout)
    compare([(i["context"], i["rollout"], i["result"]) for i in document["items"]], expected=[
        ("gpu-fleet/eu-1", names["gpu-fleet/eu-1"], "approved"),
        ("gpu-fleet/eu-2", names["gpu-fleet/eu-2"], "approved")])
    for member in ("gpu-fleet/eu-1", "gpu-fleet/eu-2"):
        approval = spec_of(inventory, member, names[member])["approval"]
        compare((approval["user"], approval["reason"]), expected=("erin", "CHG-21 driver 580"))
    assert "approval" not in spec_of(inventory, "gpu-lab/lab-1", names["gpu-lab/lab-1"])  # not kept: untouched
    assert f"Approve plan {digest}: 2 rollouts in 2 clusters:" in proc.stderr, proc.stderr
    assert any(line.split()[:2] == ["gpu-fleet/eu-1", names["gpu-fleet/eu-1"]] for line in proc.stderr.splitlines())

    revoked = inventory.clean(aicr("revoke", "--plan", digest, *profiles_args(inventory, "--contexts",
                                                                              "gpu-fleet/eu-2"),
                                   "--reason", "CHG-21 stop", "--yes", kubeconfig=inventory.kubeconfig))
    compare(revoked.returncode, expected=0, suffix=revoked.stderr)
    compare([line.split()[:3] for line in revoked.stdout.splitlines()],
            expected=[["gpu-fleet/eu-2", names["gpu-fleet/eu-2"], "revoked"]])


def test_waves_by_selector_stop_when_the_canary_fails(aicr: Aicr, inventory: Inventory, tmp_path: Path) -> None:
    digest, names = seed(inventory)
    waves = waves_file(tmp_path, [
        {"name": "canary", "selector": {"matchLabels": {"aicr.run/wave": "canary"}}},
        {"name": "eu", "contexts": ["gpu-fleet/*"],  # both: a member must match the patterns and the selector
         "selector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu-west", "eu-north"]}]}},
    ])
    plane_names = {context: names[member] for member, context in LIVE.items()}
    with Operator(inventory.fleet, plane_names, {"gpu-lab-1": "Failed"}):
        proc = inventory.clean(aicr("approve", "--plan", digest, "--waves", str(waves), *profiles_args(inventory),
                                    "--reason", "CHG-21 waves", "--yes", "-o", "json",
                                    kubeconfig=inventory.kubeconfig, timeout=120))
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    document = json.loads(proc.stdout)
    compare({i["context"]: (i["wave"], i["result"]) for i in document["items"]}, expected={
        "gpu-lab/lab-1": ("canary", "failed"), "gpu-fleet/eu-1": ("eu", "not-started"),
        "gpu-fleet/eu-2": ("eu", "not-started")})
    for member in ("gpu-fleet/eu-1", "gpu-fleet/eu-2"):
        assert "approval" not in spec_of(inventory, member, names[member]), member
    for line in ("wave canary: started (1 cluster: gpu-lab/lab-1)",
                 f"gpu-lab/lab-1: approved {names['gpu-lab/lab-1']}",
                 f"gpu-lab/lab-1: {names['gpu-lab/lab-1']} ended Failed", "the fleet stops"):
        assert line in proc.stderr, (line, proc.stderr)
    assert "wave eu: started" not in proc.stderr

    nothing = waves_file(tmp_path, [{"name": "mars", "selector": {"matchLabels": {"region": "mars"}}}])
    refused = aicr("approve", "--plan", digest, "--waves", str(nothing), *profiles_args(inventory), "--reason", "x",
                   "--yes", kubeconfig=inventory.kubeconfig)
    compare(refused.returncode, expected=2, suffix=refused.stderr)
    assert error_line(refused).startswith("error: [USAGE] --waves: wave 'mars': its selector matches no "
                                          "ClusterProfile"), refused.stderr


# -- the hub, and what the contract refuses ------------------------------------------------------------------

@pytest.mark.parametrize(("hub", "code", "words"), [
    ("gpu-down", "UNAVAILABLE", "the hub (context gpu-down): cannot list its ClusterProfiles: cannot connect"),
    ("gpu-eu-1", "NOT_FOUND", "the hub (context gpu-eu-1) serves no ClusterProfiles (multicluster.x-k8s.io/v1alpha1)"),
    ("hub-nora", "FORBIDDEN", "the hub (context hub-nora): cannot list its ClusterProfiles: "),
])
def test_a_hub_that_cannot_be_listed_is_the_commands_error_and_no_member_is_contacted(
        aicr: Aicr, inventory: Inventory, tmp_path: Path, hub: str, code: str, words: str) -> None:
    inventory.runs()
    log = tmp_path / "requests.log"
    proc = aicr("list", *profiles_args(inventory), "--context", hub, kubeconfig=inventory.kubeconfig,
                AICR_REQUEST_LOG=str(log))
    compare((proc.returncode, proc.stdout), expected=(1, ""), suffix=proc.stderr)
    assert error_line(proc).startswith(f"error: [{code}] {words}"), proc.stderr
    compare(len(proc.stderr.splitlines()), expected=1, suffix=proc.stderr)
    compare(inventory.runs(), expected=[])
    compare(set(log.read_text().splitlines()), expected={f"GET /apis/{GROUP}/{VERSION}/clusterprofiles?limit=500"})


def test_no_kept_profile_is_not_found_and_a_pattern_that_matches_none_is_usage(aicr: Aicr,
                                                                              inventory: Inventory) -> None:
    for kept, where in ((["--profile-namespace", "empty"], "in namespace empty"),
                        (["--profile-selector", "region=mars"], "matching --profile-selector 'region=mars'")):
        proc = aicr("list", *profiles_args(inventory, *kept), kubeconfig=inventory.kubeconfig)
        compare((proc.returncode, proc.stdout), expected=(1, ""), suffix=proc.stderr)
        compare(error_line(proc), expected=f"error: [NOT_FOUND] no ClusterProfile on the hub (the current context) "
                                           f"{where}")
    proc = aicr("list", *profiles_args(inventory, "--contexts", "gpu-fleet/ap-*"), kubeconfig=inventory.kubeconfig)
    compare(proc.returncode, expected=2, suffix=proc.stderr)
    compare(error_line(proc), expected="error: [USAGE] --contexts: 'gpu-fleet/ap-*' matches no ClusterProfile on "
                                       "the hub (the current context)")
    compare(inventory.runs(), expected=[])


def test_the_hub_read_keeps_the_commands_deadline(aicr: Aicr, inventory: Inventory, silent_server: int,
                                                  tmp_path: Path) -> None:
    doc = json.loads(inventory.kubeconfig.read_text())
    doc["clusters"].append({"name": "silent", "cluster": {"server": f"https://127.0.0.1:{silent_server}",
                                                          "insecure-skip-tls-verify": True}})
    doc["contexts"].append({"name": "hub-silent", "context": {"cluster": "silent", "user": "nora"}})
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(doc))
    started = time.monotonic()
    proc = aicr("list", *profiles_args(inventory), "--context", "hub-silent", "--request-timeout", "2s",
                kubeconfig=kubeconfig)
    took = time.monotonic() - started
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    assert error_line(proc).startswith("error: [TIMEOUT] the hub (context hub-silent): "), proc.stderr
    assert took < 10, took
    compare(inventory.runs(), expected=[])


# -- the plugin -------------------------------------------------------------------------------------------

def test_without_provide_cluster_info_the_plugin_gets_no_cluster(aicr: Aicr, inventory: Inventory) -> None:
    """The same plugin fails without the cluster: the members reached above got it, with its exec extension."""
    providers = inventory.provider_file("no-cluster-info.json", provideClusterInfo=False)
    proc = aicr("list", "--cluster-profiles", "--cluster-profile-providers", str(providers), "--contexts",
                "gpu-fleet/eu-*", "-o", "json", kubeconfig=inventory.kubeconfig)
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    errors = json.loads(proc.stdout)["errors"]
    compare([(e["context"], e["code"]) for e in errors],
            expected=[("gpu-fleet/eu-1", "KUBECONFIG"), ("gpu-fleet/eu-2", "KUBECONFIG")])
    assert all("KUBERNETES_EXEC_INFO has no spec.cluster" in e["message"] for e in errors), errors


def test_a_hung_plugin_ends_its_member_alone_within_its_deadline_and_leaves_nothing(aicr: Aicr,
                                                                                   inventory: Inventory) -> None:
    inventory.runs()
    started = time.monotonic()
    proc = inventory.clean(aicr("list", *profiles_args(inventory, "--contexts", "*,!gpu-fleet/[fs]*"),
                                "--request-timeout", "4s", "-o", "json", kubeconfig=inventory.kubeconfig,
                                AICR_TEST_PLUGIN_HANG="eu-2"))
    took = time.monotonic() - started
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    document = json.loads(proc.stdout)
    compare([(e["context"], e["code"]) for e in document["errors"]], expected=[("gpu-fleet/eu-2", "TIMEOUT")])
    compare(sorted({i["context"] for i in document["items"]}), expected=["gpu-fleet/eu-1", "gpu-lab/lab-1"])
    assert took < 15, took
    hung = next(r for r in inventory.runs() if r["member"] == "eu-2")
    for pid in (hung["pid"], hung["child"]):  # the plugin and its child: killed with its process group
        ends = time.monotonic() + 5
        while Path(f"/proc/{pid}").exists() and time.monotonic() < ends:
            time.sleep(0.1)
        alive = Path(f"/proc/{pid}/status").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text()
        assert not alive, f"process {pid} outlived its member's deadline"


# -- completion --------------------------------------------------------------------------------------------

def test_completion_offers_the_hubs_namespaces_and_profiles(aicr: Aicr, inventory: Inventory) -> None:
    candidates, directive = complete(aicr, "list", "--profile-namespace", "", kubeconfig=inventory.kubeconfig)
    compare(words(candidates), expected=["gpu-fleet", "gpu-lab"])
    compare(directive, expected=":4")
    candidates, directive = complete(aicr, "list", "--cluster-profiles", "--contexts", "gpu-fleet/",
                                     kubeconfig=inventory.kubeconfig)
    compare(words(candidates), expected=[m for m in MEMBERS if m.startswith("gpu-fleet/")])
    compare(directive, expected=":6")
    candidates, _ = complete(aicr, "approve", "--cluster-profiles", "--profile-namespace", "gpu-lab", "--contexts",
                             "", kubeconfig=inventory.kubeconfig)
    compare(words(candidates), expected=["gpu-lab/lab-1"])
    candidates, _ = complete(aicr, "list", "--contexts", "", kubeconfig=inventory.kubeconfig)  # no profiles: contexts
    assert "gpu-eu-1" in words(candidates) and not any("/" in w for w in words(candidates)), candidates


# -- what a hub writer may not decide: the plugin's program, its environment, the server -----------------

HOSTILE = "hostile"


@pytest.fixture
def hostile(inventory: Inventory) -> Iterator[Any]:
    """Profiles written in namespace `hostile` of the hub by the test, deleted after it whatever happens."""
    from kubernetes import client

    hub = inventory.fleet.member("gpu-lab-1").plane
    hub.kubectl("create", "namespace", HOSTILE, check=False)
    custom = client.CustomObjectsApi(hub.api("admin"))
    written: list[str] = []

    def write(name: str, cluster: dict[str, Any]) -> None:
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterProfile",
                "metadata": {"name": name, "namespace": HOSTILE},
                "spec": {"displayName": name, "clusterManager": {"name": "test"}}}
        custom.create_namespaced_custom_object(GROUP, VERSION, HOSTILE, "clusterprofiles", body)
        written.append(name)
        custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, HOSTILE, "clusterprofiles", name,
            {"status": {"accessProviders": [{"name": PROVIDER, "cluster": cluster}]}},
            _content_type="application/merge-patch+json")

    yield write
    for name in written:
        custom.delete_namespaced_custom_object(GROUP, VERSION, HOSTILE, "clusterprofiles", name)


def eu_1_cluster(inventory: Inventory, server: str | None = None, envs: dict[str, str] | None = None,
                 **more: str) -> dict[str, Any]:
    """gpu-fleet/eu-1's offered cluster (the plugin answers its token), with a server or environment of the hub's."""
    plane = inventory.fleet.member(LIVE["gpu-fleet/eu-1"]).plane
    cluster = cluster_of(plane.url, plane.server_ca_pem, "eu-1", inventory.folder / "tokens.json", "eu-west")
    if server is not None:
        cluster["server"] = server
    if envs is not None:
        cluster["extensions"] = [e for e in cluster["extensions"] if e["name"] != ENVS] + [
            {"name": ENVS, "extension": envs}]
    return {**cluster, **more}


def hijack(folder: Path, name: str, marker: Path) -> Path:
    """A program a hostile hub would like the approver to run: it leaves `marker` and fails."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\ntouch {marker}\nexit 7\n")
    path.chmod(0o755)
    return path


def wrapper(folder: Path, name: str) -> Path:
    """The approver's plugin as a program of its own (the test plugin, run by this Python)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f'#!/bin/sh\nexec {sys.executable} {PLUGIN} "$@"\n')
    path.chmod(0o755)
    return path


def test_a_profile_may_not_choose_the_program_its_environment_or_a_server_reached_without_tls(
        aicr: Aicr, inventory: Inventory, hostile: Any, tmp_path: Path) -> None:
    plane = inventory.fleet.member(LIVE["gpu-fleet/eu-1"]).plane
    port = plane.url.rsplit(":", 1)[1]
    marker = tmp_path / "hijacked"
    evil = tmp_path / "evil"
    hijack(evil, Path(sys.executable).name, marker)
    refused = {
        "env-path": (eu_1_cluster(inventory, envs={"PATH": str(evil)}), "sets 'PATH', a variable that chooses"),
        "env-ld-preload": (eu_1_cluster(inventory, envs={"LD_PRELOAD": str(evil / "x.so")}), "sets 'LD_PRELOAD'"),
        "env-pythonpath": (eu_1_cluster(inventory, envs={"PYTHONPATH": str(evil)}), "sets 'PYTHONPATH'"),
        "env-bash-env": (eu_1_cluster(inventory, envs={"BASH_ENV": str(evil / "rc")}), "sets 'BASH_ENV'"),
        "http": (eu_1_cluster(inventory, f"http://127.0.0.1:{port}"), "not an https:// server"),
        "backslash": (eu_1_cluster(inventory, f"https://127.0.0.1:{port}\\@evil.example"), "holds a backslash"),
        "crlf": (eu_1_cluster(inventory, f"https://127.0.0.1:{port}\r\nX-Evil: 1"), "holds whitespace, a control"),
        "userinfo": (eu_1_cluster(inventory, f"https://erin@127.0.0.1:{port}"), "holds userinfo"),
        "query": (eu_1_cluster(inventory, f"https://127.0.0.1:{port}/?x=1"), "holds a query or a fragment"),
        "bad-port": (eu_1_cluster(inventory, "https://127.0.0.1:99999"), "port 99999 is out of 1-65535"),
        "bad-proxy": (eu_1_cluster(inventory, **{"proxy-url": "http://proxy\\@evil:3128"}), "is not a proxy URL"),
    }
    for name, (cluster, _) in refused.items():
        hostile(name, cluster)
    inventory.runs()
    proc = inventory.clean(aicr("list", *profiles_args(inventory, "--profile-namespace", HOSTILE), "-o", "json",
                                kubeconfig=inventory.kubeconfig))
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    errors = {e["context"]: (e["code"], e["message"]) for e in json.loads(proc.stdout)["errors"]}
    compare(sorted(errors), expected=sorted(f"{HOSTILE}/{name}" for name in refused))
    for name, (_, why) in refused.items():
        code, message = errors[f"{HOSTILE}/{name}"]
        compare(code, expected="KUBECONFIG", suffix=message)
        assert why in message and f"ClusterProfile {HOSTILE}/{name}" in message, (name, message)
    assert "INTERNAL" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    compare(inventory.runs(), expected=[])  # nothing ran: the plugin, nor the hub's program
    assert not marker.exists()


def test_the_plugins_program_is_the_approvers_whatever_the_current_folder_or_a_relative_path_entry(
        aicr: Aicr, inventory: Inventory, tmp_path: Path) -> None:
    marker = tmp_path / "hijacked"
    bin_folder, conf = tmp_path / "bin", tmp_path / "conf"
    wrapper(bin_folder, "aicr-test-plugin")
    wrapper(conf / "plugins", "plugin.sh")
    hijack(aicr.cwd, "aicr-test-plugin", marker)       # the current folder: `.` in PATH would run it
    hijack(aicr.cwd / "plugins", "plugin.sh", marker)  # ./plugins/plugin.sh from the current folder
    path = os.pathsep.join([str(bin_folder), str(BIN), os.environ.get("PATH", "")])
    one = ["--profile-namespace", "gpu-fleet", "--contexts", "gpu-fleet/eu-1", "-o", "json"]

    def run(command: str, search: str) -> subprocess.CompletedProcess[str]:
        conf.mkdir(exist_ok=True)
        providers = inventory.provider_file("bare.json", command=command, args=[])
        (conf / "providers.json").write_text(providers.read_text())
        inventory.runs()
        return inventory.clean(aicr("list", "--cluster-profiles", "--cluster-profile-providers",
                                    str(conf / "providers.json"), *one, kubeconfig=inventory.kubeconfig, PATH=search))

    for command in ("aicr-test-plugin", "./plugins/plugin.sh", "plugins/plugin.sh"):
        proc = run(command, path)
        compare((proc.returncode, json.loads(proc.stdout)["errors"]), expected=(0, []), suffix=proc.stderr)
        compare([r["member"] for r in inventory.runs()], expected=["eu-1"])
    # A PATH whose first match is through `.` (or an empty entry): refused, as Go refuses it.
    for search in (os.pathsep.join([".", path]), os.pathsep + path):
        proc = run("aicr-test-plugin", search)
        compare(proc.returncode, expected=1, suffix=proc.stderr)
        errors = json.loads(proc.stdout)["errors"]
        compare([(e["context"], e["code"]) for e in errors], expected=[("gpu-fleet/eu-1", "KUBECONFIG")])
        assert "found through the relative PATH entry '.'" in errors[0]["message"], errors
        compare(inventory.runs(), expected=[])
    assert not marker.exists()


# -- a member's name says nothing of its server ----------------------------------------------------------------

def at_a_terminal(aicr: Aicr, kubeconfig: Path, args: list[str], answer: str) -> tuple[int, str]:
    """`kubectl aicr ARGS` with a terminal on stdin and stderr: what it shows until it asks, answered."""
    import pty

    from support.harness import aicr_env

    main, terminal = pty.openpty()
    proc = subprocess.Popen([aicr.kubectl, "aicr", *args], stdin=terminal, stderr=terminal, stdout=subprocess.PIPE,
                            env=aicr_env(aicr.home, kubeconfig), cwd=aicr.cwd, text=True)
    os.close(terminal)
    seen = b""
    ends = time.monotonic() + 60
    try:
        while b"[y/N]" not in seen and time.monotonic() < ends:
            chunk = os.read(main, 4096)
            if not chunk:
                break
            seen += chunk
        os.write(main, answer.encode())
        while chunk := os.read(main, 4096):
            seen += chunk
    except OSError:  # the other end closed
        pass
    finally:
        proc.wait(timeout=60)
        os.close(main)
    return proc.returncode, seen.decode(errors="replace")


def seed_runtimes(inventory: Inventory, uids: dict[str, str]) -> tuple[str, dict[str, str]]:
    """A plan with an open rollout in each of these members, its spec.runtime.uid as given."""
    digest = envtest.random_digest()
    return digest, {member: inventory.fleet.member(LIVE[member]).seed.rollout(to=digest, runtime_uid=uid)
                    for member, uid in uids.items()}


def test_members_that_share_a_server_are_shown_and_flagged_before_anything_is_asked_or_written(
        aicr: Aicr, inventory: Inventory, hostile: Any) -> None:
    """A hub writer pointed `lab-1` at prod's cluster: the list shows each member's HOST:PORT, and one warning
    names both members of that server before the question (and in a dry run); the other member is not flagged."""
    eu_1, eu_2 = (inventory.fleet.member(LIVE[m]).plane for m in ("gpu-fleet/eu-1", "gpu-fleet/eu-2"))
    hostile("lab-1", eu_1_cluster(inventory))
    hostile("prod", eu_1_cluster(inventory))
    hostile("solo", cluster_of(eu_2.url, eu_2.server_ca_pem, "eu-2", inventory.folder / "tokens.json", "eu-north"))
    digest, names = seed_runtimes(inventory, {"gpu-fleet/eu-1": "uid-of-eu-1", "gpu-fleet/eu-2": "uid-of-eu-2"})
    shared, alone = eu_1.url.removeprefix("https://"), eu_2.url.removeprefix("https://")
    args = ["approve", "--plan", digest, *profiles_args(inventory, "--profile-namespace", HOSTILE),
            "--reason", "CHG-30 driver 580"]
    warning = f"warning: {HOSTILE}/lab-1, {HOSTILE}/prod resolve to one server, {shared}: 2 members of the " \
              "inventory are one cluster"

    dry = inventory.clean(aicr(*args, "--dry-run=client", "-o", "json", kubeconfig=inventory.kubeconfig))
    compare(dry.returncode, expected=0, suffix=dry.stderr)
    listed = {line.split()[0]: line.split() for line in dry.stderr.splitlines()
              if line.strip().startswith(f"{HOSTILE}/")}
    compare({member: (words[1], words[-1]) for member, words in listed.items()}, suffix=dry.stderr, expected={
        f"{HOSTILE}/lab-1": (names["gpu-fleet/eu-1"], shared), f"{HOSTILE}/prod": (names["gpu-fleet/eu-1"], shared),
        f"{HOSTILE}/solo": (names["gpu-fleet/eu-2"], alone)})
    assert "SERVER" in dry.stderr.splitlines()[1], dry.stderr
    compare([line for line in dry.stderr.splitlines() if line.startswith("warning:")], expected=[warning])
    compare({i["context"]: (i["result"], i["server"]) for i in json.loads(dry.stdout)["items"]}, expected={
        f"{HOSTILE}/lab-1": ("approved", shared), f"{HOSTILE}/prod": ("approved", shared),
        f"{HOSTILE}/solo": ("approved", alone)})  # a flag is a warning: each is written (here, a dry run)

    code, screen = at_a_terminal(aicr, inventory.kubeconfig, args, "n\n")
    compare(code, expected=2, suffix=screen)
    assert warning in screen and screen.index(warning) < screen.index("[y/N]"), screen
    assert f"{HOSTILE}/lab-1" in screen and shared in screen and alone in screen, screen
    for member in ("gpu-fleet/eu-1", "gpu-fleet/eu-2"):
        assert "approval" not in spec_of(inventory, member, names[member]), member  # not confirmed: untouched


def test_contexts_that_name_one_cluster_are_not_flagged(aicr: Aicr, inventory: Inventory, tmp_path: Path) -> None:
    """A kubeconfig the user wrote may name one cluster many times: no server column, no warning."""
    doc = json.loads(inventory.fleet.kubeconfig.read_text())
    eu_1 = next(c for c in doc["contexts"] if c["name"] == LIVE["gpu-fleet/eu-1"])
    doc["contexts"].append({"name": "eu-1-again", "context": dict(eu_1["context"])})
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(doc))
    kubeconfig.chmod(0o600)
    digest, names = seed(inventory)
    proc = aicr("approve", "--plan", digest, "--contexts", f"{eu_1['name']},eu-1-again", "--reason", "CHG-31",
                "--dry-run=client", "-o", "json", kubeconfig=kubeconfig)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    compare({i["context"]: (i["result"], "server" in i) for i in json.loads(proc.stdout)["items"]},
            expected={eu_1["name"]: ("approved", False), "eu-1-again": ("approved", False)})
    compare(([line for line in proc.stderr.splitlines() if line.startswith("warning:")],
             "SERVER" in proc.stderr), expected=([], False), suffix=proc.stderr)


def test_members_whose_rollouts_name_one_cluster_runtime_are_flagged(aicr: Aicr, inventory: Inventory,
                                                                     hostile: Any) -> None:
    """Two servers, one ClusterRuntime UID (the rollouts' spec.runtime.uid): one warning naming both members."""
    eu_1, eu_2 = (inventory.fleet.member(LIVE[m]).plane for m in ("gpu-fleet/eu-1", "gpu-fleet/eu-2"))
    hostile("east", eu_1_cluster(inventory))
    hostile("west", cluster_of(eu_2.url, eu_2.server_ca_pem, "eu-2", inventory.folder / "tokens.json", "eu-north"))
    uid = "0b6a3f1e-5c2d-4e8f-9a7b-1c3d5e7f9a0b"
    digest, _ = seed_runtimes(inventory, {"gpu-fleet/eu-1": uid, "gpu-fleet/eu-2": uid})
    proc = inventory.clean(aicr("approve", "--plan", digest, *profiles_args(inventory, "--profile-namespace", HOSTILE),
                                "--reason", "CHG-32", "--dry-run=client", kubeconfig=inventory.kubeconfig))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    compare([line for line in proc.stderr.splitlines() if line.startswith("warning:")], expected=[
        f"warning: {HOSTILE}/east, {HOSTILE}/west hold one ClusterRuntime (UID {uid}): 2 members of the inventory "
        "are one cluster"])


# -- the dashboard ---------------------------------------------------------------------------------------

def test_the_dashboard_reads_the_members_shows_their_servers_and_the_fleet_form(aicr: Aicr, inventory: Inventory,
                                                                                tmp_path: Path) -> None:
    from urllib.parse import urlsplit

    from aicr_dashboard.page_render import rollout_path

    from support.dashboard_process import dashboard

    digest, names = seed(inventory)
    args = profiles_args(inventory, "--contexts", "gpu-fleet/eu-*,gpu-lab/*")
    with dashboard(aicr, inventory.kubeconfig, tmp_path, *args) as running:
        running.sign_in()
        mine = running.until(lambda d: sorted(d["read"]) == sorted(LIVE), 60)
        listed = json.loads(aicr("list", *args, "-o", "json", kubeconfig=inventory.kubeconfig).stdout)
        compare(mine["read"], expected=listed["read"])
        seeded = set(names.items())
        compare([i for i in mine["items"] if (i["context"], i["name"]) in seeded],
                expected=[i for i in listed["items"] if (i["context"], i["name"]) in seeded])
        _, _, inbox = running.request("GET", "/")
        for member, context in LIVE.items():
            server = urlsplit(inventory.fleet.member(context).plane.url).netloc
            assert f'<td class="server">{server}' in inbox, (member, server)
        member = "gpu-fleet/eu-1"
        status, _, page = running.request("GET", rollout_path(member, names[member]))
        compare(status, expected=200)
        assert (f"kubectl aicr approve --reason REASON --plan {digest} --cluster-profiles --cluster-profile-providers "
                f"{inventory.providers} --contexts {member} --yes") in page, page
