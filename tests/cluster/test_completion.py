"""TAB completion through the real `kubectl __complete aicr ...`, which runs our `kubectl_complete-aicr`."""
from __future__ import annotations

import time
from pathlib import Path

import envtest
from testfixtures import compare

from support.harness import Aicr, complete, words

APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "maintenance window"}








def test_rollout_names_from_the_cluster(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    busy = seed.rollout(phase="Progressing", approval=APPROVED)
    time.sleep(1.1)  # newer than `busy`, so only "waiting first" can put `waiting` before it
    waiting = seed.rollout()
    time.sleep(1.1)
    newest = seed.rollout(phase="Validating", approval=APPROVED)
    ended = seed.rollout(phase="Ended", outcome="Succeeded", approval=APPROVED)
    mine = (busy, waiting, newest, ended)
    victor = plane.kubeconfig_for("victor")

    candidates, directive = complete(aicr, "approve", "", kubeconfig=victor)
    order = [w for w in words(candidates) if w in mine]
    compare((order[0], directive), expected=(waiting, ":36"))  # waiting for a person first, order kept
    compare(order[-1], expected=ended)
    assert f"{waiting}\tAwaitingApproval: waits for an approval" in candidates
    compare([w for w in words(complete(aicr, "describe", "", kubeconfig=victor)[0]) if w in mine],
            expected=[newest, waiting, busy, ended])  # newest first, ended last
    compare(complete(aicr, "wait", waiting[:-2], kubeconfig=victor)[0],
            expected=[f"{waiting}\tAwaitingApproval: waits for an approval"])
    compare(complete(aicr, "describe", waiting, "", kubeconfig=victor), expected=([], ":4"))  # one ROLLOUT only


def test_plan_digests_and_configmap_names(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    digest = seed.plan()
    candidates, _ = complete(aicr, "reproduce", "", kubeconfig=plane.kubeconfig_for("victor"))
    assert f"{digest}\tplan in ConfigMap aicr-plan-{digest[7:23]}" in candidates, candidates
    assert f"aicr-plan-{digest[7:23]}\tplan ConfigMap" in candidates, candidates
    compare(words(complete(aicr, "reproduce", f"aicr-plan-{digest[7:20]}",
                           kubeconfig=plane.kubeconfig_for("victor"))[0]), expected=[f"aicr-plan-{digest[7:23]}"])
    # A user who may not list ConfigMaps gets nothing, quietly.
    compare(complete(aicr, "reproduce", "", kubeconfig=plane.kubeconfig_for("pat")), expected=([], ":4"))



def test_completion_leaves_no_key_file_behind(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                              tmp_path: Path) -> None:
    """The kubeconfig's inline key data goes to temporary files for the client: they go when completion ends."""
    waiting = seed.rollout()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    candidates, _ = complete(aicr, "approve", "", kubeconfig=plane.kubeconfig_for("victor"), TMPDIR=str(tmp))
    assert waiting in words(candidates), candidates  # it did read the cluster, with the key data
    compare(sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*")), expected=[])
