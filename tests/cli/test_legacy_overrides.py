"""A rollout written by 0.1.0 (overrides in `spec.overrides`, where its CRD had that field) still shows them."""
from __future__ import annotations

import copy
import json
from pathlib import Path

from testfixtures import compare

from support.fake_apiserver import Respond, fake_apiserver, status
from support.harness import Aicr
from support.samples import ROLLOUT

LEGACY = {"user": "bob", "action": "approve", "policies": ["change-window"], "time": "2026-11-30T10:00:00Z"}
CURRENT = {"user": "alice", "action": "revoke", "policies": ["four-eyes"], "time": "2026-11-30T11:00:00Z"}


def test_describe_shows_overrides_of_0_1_0_and_of_the_annotation(aicr: Aicr, tmp_path: Path) -> None:
    obj = copy.deepcopy(ROLLOUT)
    obj["spec"]["overrides"] = [LEGACY]
    obj["metadata"]["annotations"] = {"aicr.run/overrides": json.dumps([CURRENT])}
    script = [Respond(200, obj), status(404, "not found", "NotFound")]
    with fake_apiserver(tmp_path, script) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr("describe", ROLLOUT["metadata"]["name"], "-o", "json", kubeconfig=kc)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    compare(json.loads(proc.stdout)["overrides"], expected=[LEGACY, CURRENT])
