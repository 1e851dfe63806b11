"""A write RBAC refuses (HTTP 403 on the PATCH) explains itself as `--dry-run=client` does, on the real control plane.

The real `kubectl aicr approve|revoke|acknowledge`, no dry run, as the viewer victor (RBAC lets him read
rollouts, never patch them): who the server says he is, which command was refused, what he lacks, and
`kubectl aicr whoami`. Still `[FORBIDDEN]`, exit 1, nothing written. And the same on one member of a fleet.
"""
from __future__ import annotations

import json
from pathlib import Path

import envtest
import pytest
from testfixtures import compare

from support.fleet_planes import LIVE, Fleet, rollout_spec
from support.harness import Aicr

APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "maintenance window"}
LACKING = ["  not allowed: update runtimerollouts/approve (what approving, revoking and acknowledging need)",
           "  not allowed: patch runtimerollouts"]
WHOAMI = "  who you are, your groups and whether you may approve: kubectl aicr whoami"


def server_said(name: str) -> str:
    return (f'  the API server said: runtimerollouts.operator.aicr.run "{name}" is forbidden: User "victor" '
            'cannot patch resource "runtimerollouts" in API group "operator.aicr.run" at the cluster scope')


def stored(plane: envtest.ControlPlane, name: str) -> dict:  # type: ignore[type-arg]
    return json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)


@pytest.mark.parametrize("command", ["approve", "revoke", "acknowledge"])
def test_a_viewers_write_says_who_what_and_why(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                              command: str) -> None:
    name = {"approve": lambda: seed.rollout(),
            "revoke": lambda: seed.rollout(phase="Progressing", approval=APPROVED),
            "acknowledge": lambda: seed.rollout(phase="AwaitingAcknowledgement", approval=APPROVED,
                                                awaiting_release="nvsentinel")}[command]()
    before = stored(plane, name)["metadata"]["resourceVersion"]
    args = [command, name] + (["--reason", "CHG-1 window"] if command != "acknowledge" else [])
    proc = aicr(*args, kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, proc.stdout), expected=(1, ""))
    compare(proc.stderr.splitlines(), expected=[
        f"error: [FORBIDDEN] victor may not {command} rollout {name}: the API server refused the write (RBAC); "
        "nothing was written", *LACKING, server_said(name), WHOAMI])
    compare(stored(plane, name)["metadata"]["resourceVersion"], expected=before)


def test_the_lack_is_worded_as_the_client_dry_run_words_it(aicr: Aicr, plane: envtest.ControlPlane,
                                                           seed: envtest.Seeder) -> None:
    """One wording of what is lacking: the client dry run's and the refused write's lines are the same."""
    name = seed.rollout()
    victor = plane.kubeconfig_for("victor")
    dry = aicr("approve", name, "--reason", "x", "--dry-run=client", kubeconfig=victor)
    real = aicr("approve", name, "--reason", "x", kubeconfig=victor)
    compare(real.stderr.splitlines()[1:3], expected=dry.stderr.splitlines()[1:3])
    # and `whoami`, where the message points, says the same of him
    who = aicr("whoami", "-o", "json", kubeconfig=victor)
    compare(json.loads(who.stdout)["username"], expected="victor", suffix=who.stderr)


def test_a_fleet_write_refused_by_rbac_on_one_member_says_the_same(aicr: Aicr, fleet: Fleet,
                                                                   tmp_path: Path) -> None:
    digest, names = fleet.seed_plan()
    viewer_at = fleet.members[-1]  # gpu-eu-2, where the fleet's credentials are victor's
    doc = json.loads(fleet.kubeconfig.read_text())
    pair = viewer_at.plane.users["victor"]
    doc["users"].append({"name": "victor-there", "user": {"client-certificate-data": envtest.b64(pair.cert_pem),
                                                          "client-key-data": envtest.b64(pair.key_pem)}})
    for context in doc["contexts"]:
        if context["name"] == viewer_at.context:
            context["context"]["user"] = "victor-there"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(doc))
    kubeconfig.chmod(0o600)
    proc = aicr("approve", "--contexts", LIVE, "--plan", digest, "--reason", "CHG-2 driver 580", "--expires", "2h",
                "--yes", "-o", "json", kubeconfig=kubeconfig)
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    items = {i["context"]: i for i in json.loads(proc.stdout)["items"]}
    refused = items[viewer_at.context]
    name = names[viewer_at.context]
    compare((refused["result"], refused["code"]), expected=("refused", "FORBIDDEN"))
    compare(refused["message"], expected=(
        f"victor may not approve rollout {name}: the API server refused the write (RBAC); nothing was written: "
        + "; ".join(line.strip() for line in [*LACKING, server_said(name), f"{WHOAMI} --context {viewer_at.context}"])))
    compare([items[m.context]["result"] for m in fleet.members[:-1]], expected=["approved", "approved"])
    assert "approval" not in rollout_spec(viewer_at, name)
