"""A hub that lies in its list of ClusterProfiles, through the real `kubectl aicr` (a loopback server).

No API server lists one object twice, or a profile whose namespace or name is not a DNS-1123
one (a `/` in a namespace would make `a/b` + `c` and `a` + `b/c` one member); a lying hub does.
Such a list is [INVALID_OBJECT], the command's error, and no member is contacted. What the hub
writes into a message (a condition's reason) reaches the terminal escaped, TAB included.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from testfixtures import compare

from support.fake_apiserver import ByPath, Respond, fake_apiserver
from support.harness import Aicr, error_line

PROFILES_PATH = "/apis/multicluster.x-k8s.io/v1alpha1/clusterprofiles"


def profile(namespace: str, name: str, **status: Any) -> dict[str, Any]:
    return {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfile",
            "metadata": {"namespace": namespace, "name": name}, "status": status}


def listing(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ClusterProfileList",
            "metadata": {"resourceVersion": "7"}, "items": list(items)}


def providers(tmp_path: Path, marker: Path) -> Path:
    plugin = tmp_path / "plugin.sh"
    plugin.write_text(f"#!/bin/sh\ntouch {marker}\nexit 3\n")
    plugin.chmod(0o755)
    path = tmp_path / "providers.json"
    path.write_text(json.dumps({"providers": [{"name": "p", "execConfig": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}}]}))
    return path


OFFER = {"accessProviders": [{"name": "p", "cluster": {"server": "https://127.0.0.1:1"}}]}
LIES = [
    ([profile("fleet", "a", **OFFER), profile("fleet", "a", **OFFER)], "listed the ClusterProfile fleet/a twice"),
    ([profile("fleet/a", "b", **OFFER), profile("fleet", "a", **OFFER)], "in namespace 'fleet/a', which is not a "
                                                                         "DNS-1123 label"),
    ([profile("fleet", "a/b", **OFFER)], "named 'a/b' in namespace fleet, which is not a DNS-1123 subdomain"),
    ([profile("fleet", "A", **OFFER)], "named 'A' in namespace fleet"),
    ([profile("fleet", "a\tb", **OFFER)], "named 'a\\tb' in namespace fleet"),
]


@pytest.mark.parametrize(("items", "message"), LIES, ids=["twice", "slash-namespace", "slash-name", "capital", "tab"])
def test_what_no_api_server_lists_is_invalid_object_and_no_member_is_contacted(
        aicr: Aicr, tmp_path: Path, items: list[dict[str, Any]], message: str) -> None:
    marker = tmp_path / "plugin-ran"
    with fake_apiserver(tmp_path, [ByPath(((PROFILES_PATH, Respond(200, listing(*items))),))]) as hub:
        kubeconfig = hub.kubeconfig(tmp_path / "kubeconfig", {"token": "hub-token"})
        proc = aicr("list", "--cluster-profiles", "--cluster-profile-providers", str(providers(tmp_path, marker)),
                    kubeconfig=kubeconfig)
        paths = {r.path.split("?")[0] for r in hub.requests}
    compare((proc.returncode, proc.stdout), expected=(1, ""), suffix=proc.stderr)
    line = error_line(proc)
    assert line.startswith("error: [INVALID_OBJECT] ") and message in line, proc.stderr
    assert "\t" not in proc.stderr, proc.stderr
    compare(paths, expected={PROFILES_PATH})
    assert not marker.exists()


def test_a_tab_in_what_the_hub_says_of_a_member_is_escaped(aicr: Aicr, tmp_path: Path) -> None:
    sick = {**OFFER, "conditions": [{"type": "ControlPlaneHealthy", "status": "False", "reason": "Lease\tExpired",
                                     "message": "col1\tcol2\x1b[31m"}]}
    foreign = {"accessProviders": [{"name": "other\tone", "cluster": {"server": "https://127.0.0.1:1"}}]}
    marker = tmp_path / "plugin-ran"
    with fake_apiserver(tmp_path, [ByPath(((PROFILES_PATH, Respond(200, listing(
            profile("fleet", "sick", **sick), profile("fleet", "foreign", **foreign)))),))]) as hub:
        kubeconfig = hub.kubeconfig(tmp_path / "kubeconfig", {"token": "hub-token"})
        proc = aicr("list", "--cluster-profiles", "--cluster-profile-providers", str(providers(tmp_path, marker)),
                    kubeconfig=kubeconfig)
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    assert "\t" not in proc.stderr and "\x1b" not in proc.stderr, proc.stderr
    assert "(Lease\\tExpired: col1\\tcol2\\x1b[31m)" in proc.stderr, proc.stderr
    assert 'offers the providers "other\\tone"' in proc.stderr, proc.stderr
    assert not marker.exists()
