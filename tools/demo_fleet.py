"""The demo's clusters: N control planes started side by side, one kubeconfig naming them, a hub.

`tools/testbed.py demo --clusters N` uses it. The first plane, `gpu-lab-1`, is the kubeconfig's
current context and the hub: it serves the Cluster Inventory API (the ClusterProfile CRD) with one
profile per plane, reached through the demo's credentials plugin (tools/demo_credentials.py) as
`erin`. The others are `gpu-eu-1` ... Every plane holds the demo's rollouts, named the same after
each reset (their digests come from the context's name), and one more waiting for approval to
the plan every cluster shares. The demo's folder holds what docs/fleet.md's examples read:
`kubeconfig`, `providers.json`, `waves.yaml`, `profile-waves.yaml`, and `env` to source
(AICR_DEMO, KUBECONFIG, PLAN); `demo.json` tells `tools/testbed.py reset` where the planes are.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import envtest

TOOLS = Path(__file__).resolve().parent
INVENTORY = envtest.TEST_MANIFESTS / "cluster-inventory"
CRD, READER = INVENTORY / "clusterprofiles-crd.yaml", INVENTORY / "clusterprofile-reader.yaml"
PROFILE_GROUP, PROFILE_VERSION = "multicluster.x-k8s.io", "v1alpha1"
EXEC_EXTENSION = "client.authentication.k8s.io/exec"
PROVIDER = "aicr-demo"
SHARED_PLAN = envtest.digest_of("aicr-demo: the plan every cluster shares")
STATE, ENV = "demo.json", "env"
SOAK = "5s"  # the waves' soak in the demo: long enough to see, short enough to wait for


def context_names(count: int) -> list[str]:
    return ["gpu-lab-1", *[f"gpu-eu-{i}" for i in range(1, count)]]


def profile_name(context: str) -> str:
    """The member's NAMESPACE/NAME on the hub: gpu-lab-1 -> gpu-lab/lab-1, gpu-eu-2 -> gpu-fleet/eu-2."""
    return "gpu-lab/lab-1" if context == "gpu-lab-1" else f"gpu-fleet/{context.removeprefix('gpu-')}"


@dataclass
class Member:
    context: str
    plane: envtest.ControlPlane


class PlaneThread(threading.Thread):
    """Starts a plane and keeps its thread alive until `release()`: the plane's processes get
    SIGKILL when the thread that started them ends (PR_SET_PDEATHSIG is per thread)."""

    def __init__(self, plane: envtest.ControlPlane) -> None:
        super().__init__(name=f"plane-{plane.workdir.name}", daemon=True)
        self.plane = plane
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._release = threading.Event()

    def run(self) -> None:
        try:
            self.plane.start()
        except BaseException as err:  # noqa: BLE001 - handed to the main thread, which reports it
            self.error = err
            self.plane.stop()
            self.ready.set()
            return
        self.ready.set()
        self._release.wait()
        self.plane.stop()

    def release(self) -> None:
        self._release.set()
        self.join(timeout=30)


def start_planes(folder: Path, count: int) -> tuple[list[Member], list[PlaneThread]]:
    """`count` planes started at once, each on a thread of its own; the first error is raised once all
    have started or failed (those that started are stopped then)."""
    threads = [PlaneThread(envtest.ControlPlane(folder / context)) for context in context_names(count)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while not thread.ready.wait(0.2):  # a short wait: Ctrl-C reaches the main thread in between
                pass
    except BaseException:
        stop_planes(threads)
        raise
    failed = next((t.error for t in threads if t.error is not None), None)
    if failed is not None:
        stop_planes(threads)
        raise failed
    return [Member(c, t.plane) for c, t in zip(context_names(count), threads, strict=True)], threads


def stop_planes(threads: Sequence[PlaneThread]) -> None:
    for thread in threads:
        thread.release()


def write_private(path: Path, text: str) -> None:
    """Written whole or not at all (a temporary file renamed over it), readable by its owner only."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    temporary.chmod(0o600)
    os.replace(temporary, path)


def kubeconfig_doc(planes: Sequence[tuple[str, envtest.ControlPlane]], user: str = "alice") -> dict[str, Any]:
    """One context a plane, named by `planes`, each with `user`'s client certificate of that plane; the first
    is the current context. (The fleet's tests use it too: tests/support/fleet_planes.py.)"""
    clusters, users, contexts = [], [], []
    for context, plane in planes:
        clusters.append({"name": context, "cluster": {"server": plane.url, "certificate-authority-data":
                                                      envtest.b64(plane.server_ca_pem)}})
        pair = plane.users[user]
        users.append({"name": f"{user}-{context}", "user": {"client-certificate-data": envtest.b64(pair.cert_pem),
                                                            "client-key-data": envtest.b64(pair.key_pem)}})
        contexts.append({"name": context, "context": {"cluster": context, "user": f"{user}-{context}"}})
    return {"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users, "contexts": contexts,
            "current-context": planes[0][0]}


def region(index: int) -> str:
    return "us-east" if index == 0 else ("eu-west" if index % 2 else "eu-north")


def set_up_hub(members: Sequence[Member], folder: Path) -> None:
    """The ClusterProfile CRD on the first plane, one profile a member, the tokens and the provider file."""
    from kubernetes import client

    hub = members[0].plane
    hub.kubectl("apply", "-f", str(CRD), "-f", str(READER))
    hub.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/clusterprofiles.{PROFILE_GROUP}")
    for namespace in sorted({profile_name(m.context).split("/")[0] for m in members}):
        hub.kubectl("create", "namespace", namespace, check=False)
    tokens = folder / "member-tokens.json"
    write_private(tokens, json.dumps({profile_name(m.context): m.plane.exec_token for m in members}))
    custom = client.CustomObjectsApi(hub.api("admin"))
    for index, m in enumerate(members):
        namespace, name = profile_name(m.context).split("/")
        labels = {"x-k8s.io/cluster-manager": PROVIDER, "region": region(index)}
        if index == 0:
            labels["aicr.run/wave"] = "canary"
        body = {"apiVersion": f"{PROFILE_GROUP}/{PROFILE_VERSION}", "kind": "ClusterProfile",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {"displayName": m.context, "clusterManager": {"name": PROVIDER}}}
        custom.create_namespaced_custom_object(PROFILE_GROUP, PROFILE_VERSION, namespace, "clusterprofiles", body)
        cluster = {"server": m.plane.url, "certificate-authority-data": envtest.b64(m.plane.server_ca_pem),
                   "extensions": [{"name": EXEC_EXTENSION, "extension": {"member": profile_name(m.context)}}]}
        status = {"accessProviders": [{"name": PROVIDER, "cluster": cluster}],
                  "conditions": [{"type": "ControlPlaneHealthy", "status": "True", "reason": "Healthy",
                                  "message": "the demo's plane answers", "lastTransitionTime":
                                  envtest.rfc3339(dt.datetime.now(dt.timezone.utc))}]}
        custom.patch_namespaced_custom_object_status(PROFILE_GROUP, PROFILE_VERSION, namespace, "clusterprofiles",
                                                     name, {"status": status},
                                                     _content_type="application/merge-patch+json")
    providers = {"providers": [{"name": PROVIDER, "execConfig": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
        "args": [str(TOOLS / "demo_credentials.py"), "--tokens", str(tokens)],
        "provideClusterInfo": True, "interactiveMode": "Never"}}]}
    write_private(folder / "providers.json", json.dumps(providers, indent=2) + "\n")


def write_files(members: Sequence[Member], folder: Path, kubeconfig: Path) -> None:
    """The waves files, the state for `reset`, and the environment to source."""
    eu = [m.context for m in members[1:]]
    waves = {"apiVersion": "aicr.run/v1alpha1", "kind": "Waves", "soak": SOAK, "waves": [
        {"name": "canary", "contexts": [members[0].context]},
        *([{"name": "eu", "contexts": ["gpu-eu-*"]}] if eu else [])]}  # a `rest` would hold no cluster: refused
    (folder / "waves.yaml").write_text(json.dumps(waves, indent=2) + "\n")  # JSON is YAML
    profile_waves = {"apiVersion": "aicr.run/v1alpha1", "kind": "Waves", "soak": SOAK, "waves": [
        {"name": "canary", "selector": {"matchLabels": {"aicr.run/wave": "canary"}}},
        *([{"name": "rest", "contexts": ["*"]}] if eu else [])]}
    (folder / "profile-waves.yaml").write_text(json.dumps(profile_waves, indent=2) + "\n")
    state = {"pid": os.getpid(), "plan": SHARED_PLAN,
             "planes": [{"context": m.context, "workdir": str(m.plane.workdir)} for m in members]}
    write_private(folder / STATE, json.dumps(state, indent=2) + "\n")
    write_private(folder / ENV, "".join(f"export {k}={shlex.quote(v)}\n" for k, v in (
        ("AICR_DEMO", str(folder)), ("KUBECONFIG", str(kubeconfig)), ("PLAN", SHARED_PLAN))))


def seed(members: Sequence[Member]) -> dict[str, dict[str, str]]:
    """Each plane's demo rollouts, {context: {role: name}}: the same names every time."""
    return {m.context: envtest.seed_demo(m.plane, salt=m.context, shared=SHARED_PLAN) for m in members}


def reset(folder: Path) -> dict[str, dict[str, str]]:
    """Every rollout of the demo's planes deleted, then the demo's seeded again: as it started."""
    from kubernetes import client

    state = json.loads((folder / STATE).read_text())
    members = [Member(p["context"], envtest.ControlPlane(Path(p["workdir"]))) for p in state["planes"]]
    for m in members:
        custom = client.CustomObjectsApi(m.plane.api("aicr-operator"))
        found = cast(dict[str, Any], custom.list_cluster_custom_object(
            envtest.GROUP, envtest.VERSION, "runtimerollouts"))
        for obj in found.get("items", []):
            custom.delete_cluster_custom_object(envtest.GROUP, envtest.VERSION, "runtimerollouts",
                                                obj["metadata"]["name"])
    return seed(members)
