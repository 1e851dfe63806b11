"""A lying API server's lists through the real `kubectl aicr list` (and a `--cluster-profiles` hub read): a
list that never ends, a page larger than the limit asked for, a continue token given twice, and a page of
millions of empty objects each end the list with INVALID_OBJECT within seconds, in bounded memory, even
with `--request-timeout 0` (docs/sessions.md#the-bounds-of-a-list quotes the figures)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from testfixtures import compare

from support.fake_apiserver import ByPath, Endless, Respond, fake_apiserver
from support.harness import aicr_env
from support.peak_rss import run_measured

ROLLOUTS = "/apis/operator.aicr.run/v1alpha1/runtimerollouts"
REPORTS = "/api/v1/namespaces/aicr-system/configmaps"
PROFILES = "/apis/multicluster.x-k8s.io/v1alpha1/clusterprofiles"
NO_REPORTS = Respond(200, {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {}, "items": []})


def page(count: int, token: str = "") -> Respond:
    return Respond(200, {"kind": "List", "apiVersion": "v1", "metadata": {"continue": token} if token else {},
                         "items": [{"metadata": {"name": f"r{i}"}} for i in range(count)]})


def empty_objects(count: int) -> Respond:
    """One page of `count` empty objects: 64 MiB of them is 22 million (2 GiB of memory once built)."""
    return Respond(200, b'{"kind":"List","metadata":{},"items":[' + b"{}," * (count - 1) + b"{}]}")


CASES: list[tuple[str, Any, str, float]] = [
    ("never ends, full pages", Endless(500), "it holds more than 50,000 items", 300),
    ("never ends, empty pages", Endless(0), "it runs to more than 200 pages", 300),
    ("never ends, 60 MB pages", Endless(100, {"data": "x" * 600_000}), "its pages hold more than 96 MiB", 300),
    ("a token given twice", page(1, "again"), "a continue token came back a second time", 300),
    ("more items than the limit", page(501), "a page holds 501 items, more than the 500 asked for", 300),
    ("22 million empty objects", empty_objects(22_000_000), "its pages hold more than 2,000,000 JSON values", 400),
]


@pytest.mark.parametrize(("case", "action", "why", "peak_bound"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("read", ["list", "hub"])
def test_a_lying_list_is_refused_in_seconds_and_bounded_memory(kubectl: str, tmp_path: Path, case: str,
                                                               action: Any, why: str, peak_bound: float, read: str,
                                                               record_property: Any) -> None:
    path = ROLLOUTS if read == "list" else PROFILES
    with fake_apiserver(tmp_path, [ByPath(((REPORTS, NO_REPORTS),), action)]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        args = ["list", "--request-timeout", "0"]
        if read == "hub":
            providers = {"providers": [{"name": "token", "execConfig": {
                "apiVersion": "client.authentication.k8s.io/v1", "command": "token-plugin"}}]}
            (tmp_path / "p.json").write_text(json.dumps(providers))
            args += ["--cluster-profiles", "--cluster-profile-providers", str(tmp_path / "p.json")]
        result = run_measured([kubectl, "aicr", *args], aicr_env(tmp_path, kc), timeout=120)
        pages = sum(1 for r in server.requests if r.path.startswith(path))
    record_property("peak_rss_mib", round(result.peak_mib))
    record_property("seconds", round(result.seconds, 2))
    record_property("pages", pages)
    error = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
    compare(result.returncode, expected=1, suffix=result.stderr)
    assert error.startswith("error: [INVALID_OBJECT] ") and why in error and f"GET {path}" in error, error
    if read == "hub":
        assert "cannot list its ClusterProfiles" in error, error
    assert result.seconds < 30, result.seconds
    assert result.peak_mib < peak_bound, result.peak_mib
