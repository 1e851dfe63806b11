"""Three real control planes as one fleet (each its own etcd, CA and users), a kubeconfig naming them and a
down one, and what the fleet's tests do as the AICR operator (end rollouts, report Ready).

`three_planes` starts them; tests/cluster/conftest.py makes them one session fixture, `fleet`,
shared by the fleet's tests (contexts, ClusterProfiles). The test acts as the AICR operator where
one is needed: it writes rollout and ClusterRuntime status through the status subresource as the
operator's user (`Operator`, `set_ready`).
"""
from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import envtest
import yaml

import demo_fleet

GROUP, VERSION = envtest.GROUP, envtest.VERSION
CONTEXTS = ("gpu-lab-1", "gpu-eu-1", "gpu-eu-2")
DOWN = "gpu-down"
LIVE = "gpu-*,!gpu-down"


@dataclass
class Member:
    context: str
    plane: envtest.ControlPlane
    seed: envtest.Seeder


@dataclass
class Fleet:
    members: list[Member]
    kubeconfig: Path

    def member(self, context: str) -> Member:
        return next(m for m in self.members if m.context == context)

    def seed_plan(self, **rollout: Any) -> tuple[str, dict[str, str]]:
        """A new plan with an open rollout to it in every live cluster: (digest, {context: rollout name})."""
        digest = envtest.random_digest()
        return digest, {m.context: m.seed.rollout(to=digest, **rollout) for m in self.members}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def rollout_spec(member: Member, name: str) -> dict[str, Any]:
    obj = member.seed.custom.get_cluster_custom_object(GROUP, VERSION, "runtimerollouts", name)
    return dict(obj["spec"])


def set_ready(member: Member, status: str) -> None:
    """The ClusterRuntime's Ready condition, as the operator reports it (status subresource, operator's user)."""
    from kubernetes.client.exceptions import ApiException

    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterRuntime", "metadata": {"name": "cluster"},
            "spec": {"validation": {"deployment": "Enabled"}}}
    try:
        member.seed.custom.create_cluster_custom_object(GROUP, VERSION, "clusterruntimes", body)
    except ApiException as err:
        if err.status != 409:
            raise
    condition = {"type": "Ready", "status": status, "reason": "Test" if status == "True" else "NodesNotReady",
                 "message": "as the test says", "lastTransitionTime": envtest.rfc3339(dt.datetime.now(dt.timezone.utc))}
    member.seed.custom.patch_cluster_custom_object_status(GROUP, VERSION, "clusterruntimes", "cluster",
                                                          {"status": {"conditions": [condition]}},
                                                          _content_type="application/merge-patch+json")


def end(member: Member, name: str, outcome: str) -> None:
    member.seed.set_rollout_status(name, {"phase": "Ended", "outcome": outcome, "message": f"rollout {outcome}"})


class Operator:
    """Ends each rollout once it is approved, with the outcome the test gives: what the operator would do."""

    def __init__(self, fleet: Fleet, rollouts: dict[str, str], outcomes: dict[str, str]) -> None:
        self.fleet, self.rollouts, self.outcomes = fleet, rollouts, outcomes
        self.ended: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Operator:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            for context, outcome in self.outcomes.items():
                member = self.fleet.member(context)
                if context not in self.ended and rollout_spec(member, self.rollouts[context]).get("approval"):
                    time.sleep(0.3)  # progress first, then the end: the command follows it with the watch API
                    end(member, self.rollouts[context], outcome)
                    self.ended[context] = time.monotonic()


def waves_file(tmp_path: Path, waves: list[dict[str, Any]], **top: Any) -> Path:
    path = tmp_path / "waves.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "aicr.run/v1alpha1", "kind": "Waves", "waves": waves, **top}))
    return path


def results(document: dict[str, Any]) -> dict[str, str]:
    return {i["context"]: i["result"] for i in document["items"]}


def three_planes(plane: envtest.ControlPlane, folder: Path) -> Iterator[Fleet]:
    """The session's control plane and two more started here, and a kubeconfig naming the three and a down one."""
    # One after the other, on this thread: a plane's processes die with the thread that started them
    # (PR_SET_PDEATHSIG is per thread), so a pool's worker cannot start them.
    extra: list[envtest.ControlPlane] = []
    try:
        extra += [envtest.ControlPlane().start(), envtest.ControlPlane().start()]
        planes = [plane, *extra]
        members = [Member(context, p, envtest.Seeder(p)) for context, p in zip(CONTEXTS, planes, strict=True)]
        doc = demo_fleet.kubeconfig_doc([(m.context, m.plane) for m in members])  # the demo's, as alice
        clusters, contexts = doc["clusters"], doc["contexts"]
        clusters.append({"name": DOWN, "cluster": {"server": f"https://127.0.0.1:{envtest.free_port()}",
                                                   "certificate-authority-data": envtest.b64(plane.server_ca_pem)}})
        contexts.append({"name": DOWN, "context": {"cluster": DOWN, "user": f"alice-{CONTEXTS[0]}"}})
        path = folder / "kubeconfig"
        path.write_text(json.dumps(doc))
        path.chmod(0o600)
        yield Fleet(members, path)
    finally:
        for p in extra:
            p.stop()
