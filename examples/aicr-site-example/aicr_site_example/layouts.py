"""The text layouts of this package's result kinds `Identity` and `RolloutSteps` (registered under `aicr.layouts`).

The command returns data and knows nothing of how it is printed; `-o text`
finds this layout by the kind, `-o json`, `-o yaml` and `-o csv` ignore it.
"""
from __future__ import annotations

from typing import Any

from aicr_core.plugin import fields, table, value


def identity(data: dict[str, Any]) -> list[str]:
    return fields([("Username", value(data.get("username"))),
                   ("Groups", ", ".join(value(g) for g in data.get("groups") or []) or "-")])


def rollout_steps(data: dict[str, Any]) -> list[str]:
    rows = [[value(s.get("release")), value(s.get("operation")), value(s.get("assessment")), value(s.get("state"))]
            for s in data.get("steps") or []]
    return [*fields([("Rollout", value(data.get("rollout"))), ("Phase", value(data.get("phase")))]),
            *(table(["RELEASE", "OPERATION", "ASSESSMENT", "STATE"], rows) if rows else ["  (no steps)"])]
