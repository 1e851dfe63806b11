"""Fixed raw objects for unit and golden tests (the real-cluster tests seed their own)."""
from __future__ import annotations

import copy
import json
from typing import Any

TO = "sha256:3f9a1c0d2b7e4a51" + "0" * 48
FROM = "sha256:1a2b3c4d5e6f7a8b" + "1" * 48
REPORT = json.dumps({"components": [
    {"component": "gpu-operator", "change": "version", "from": "v25.3.0", "to": "v25.10.0", "verdict": "manual",
     "notes": ["1 minor", "1 step"]}], "summary": "1 manual"}, indent=2)
REPORT_DIGEST = "sha256:" + __import__("hashlib").sha256(REPORT.encode()).hexdigest()

ROLLOUT: dict[str, Any] = {
    "apiVersion": "operator.aicr.run/v1alpha1", "kind": "RuntimeRollout",
    "metadata": {"name": "rollout-3f9a1c0d2b7e4a51-1", "resourceVersion": "42"},
    "spec": {
        "runtime": {"name": "cluster", "uid": "6c1f0e9a-7d2b-4c1e-9a51-3f9a1c0d2b7e"},
        "from": {"digest": FROM}, "to": {"digest": TO},
        "deadline": "2026-11-30T06:00:00Z", "approvalRequired": True,
        "startingInventory": {"releases": 42, "digest": "sha256:" + "2" * 64},
        "assessment": {"digest": REPORT_DIGEST},
        "steps": [{"release": "gpu-operator", "operation": "Upgrade", "verdict": "manual", "changesCRDs": True},
                  {"release": "nvsentinel", "operation": "Install", "changesCRDs": False}],
        "records": [{"release": "gpu-operator", "summary": "upgrade v25.3.0 -> v25.10.0",
                     "precondition": "no training job running",
                     "beforeApply": [{"id": "checkpoint", "description": "checkpoint training jobs"}],
                     "afterApply": [{"id": "verify", "description": "nvidia-smi shows driver 580"}]}],
    },
    "status": {"phase": "AwaitingApproval", "message": "rollout awaiting approval",
               "steps": [{"release": "gpu-operator", "state": "InFlight"}]},
}


def rollout(**spec: Any) -> dict[str, Any]:
    obj = copy.deepcopy(ROLLOUT)
    status = spec.pop("status", None)
    obj["spec"].update(spec)
    if status:
        obj["status"].update(status)
    return obj
