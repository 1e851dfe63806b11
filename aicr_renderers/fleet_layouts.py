"""Text layouts of the fleet's result kinds (commands run across clusters, aicr_core.fleet.fan_out).

`VersionList`, `PolicyDecisionList`: each cluster's usual output under a `== CONTEXT ==`
heading, laid out by its own kind's layout. `FleetWrite`: one line a cluster, aligned, no
header (context, its wave when the waves chose the clusters, rollout, result, message).
The fleet `RolloutList` is list's own table with CONTEXT first (layouts.rollout_list).
"""
from __future__ import annotations

from typing import Any

from aicr_core.plugin import table, value


def per_context(d: dict[str, Any]) -> list[str]:
    from aicr_renderers.text import find_layout

    lines: list[str] = []
    for item in d.get("items") or []:
        data = {k: v for k, v in item.items() if k not in ("kind", "context")}
        if lines:
            lines.append("")
        lines.append(f"== {value(item.get('context'))} ==")
        lines += find_layout(str(item.get("kind")))(data)
    if not lines and d.get("errors"):
        lines.append("No cluster answered.")
    return lines


def fleet_write(d: dict[str, Any]) -> list[str]:
    items = d.get("items") or []
    if not items:
        return ["No clusters."]
    waves = any("wave" in i for i in items)
    headers = ["CONTEXT", *(["WAVE"] if waves else []), "ROLLOUT", "RESULT", "MESSAGE"]
    rows = []
    for i in items:
        message = value(i.get("message"), "")
        if i.get("code"):
            message = f"[{value(i.get('code'))}] {message}".rstrip()
        rows.append([value(i.get("context")), *([value(i.get("wave"))] if waves else []), value(i.get("rollout")),
                     value(i.get("result")), message or "-"])
    return table(headers, rows, indent="")[1:]  # one line a cluster: the columns are plain without a header
