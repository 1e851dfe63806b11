"""Text layouts of the built-in result kinds, one function each (like kubectl's describe printers).

Each takes the result's data and returns lines; setup.cfg registers each under
`aicr.layouts` by its kind, as a site package registers its own. The strings in quotes in
../shared/spec/cli.md are the upstream plugin's and are matched exactly.
"""
from __future__ import annotations

from typing import Any

from aicr_core.lines import fields, table, value
from aicr_renderers.policy_layouts import policy_file_text


def rollout_description(d: dict[str, Any]) -> list[str]:
    transition = d.get("transition") or {}
    frm, to = transition.get("from"), transition.get("to")
    inventory = d.get("inventory") or {}
    lines = fields([
        ("Rollout", value(d.get("rollout"))),
        ("Runtime UID", value(d.get("runtimeUID"))),
        ("Transition", f"{value(frm) if frm else 'none (initial install)'} -> {value(to)}"),
        ("Phase", value(d.get("phase"))),
        ("Outcome", value(d.get("outcome"))),
        ("Deadline", value(d.get("deadline"))),
        ("Approval", approval_text(d.get("approval") or {})),
        *([("Overrides", overrides_text(d["overrides"]))] if d.get("overrides") else []),
        ("Message", value(d.get("message"))),
        ("Inventory", f"{value(inventory.get('releases'), '0')} releases, {value(inventory.get('digest'))}"),
    ])
    lines += ["", "Steps:"]
    steps = d.get("steps") or []
    if steps:
        lines += table(["#", "RELEASE", "OPERATION", "ASSESSMENT", "CRDS", "STATE"], [
            [str(i), value(s.get("release")), value(s.get("operation")), value(s.get("assessment")),
             value(bool(s.get("changesCRDs"))), step_state(s.get("state"))]
            for i, s in enumerate(steps, 1)])
    else:
        lines.append("  none")
    lines += ["", *assessment_lines(d.get("assessment") or {})]
    records = d.get("records") or []
    if records:
        lines += ["", "Recorded steps:"]
        for record in records:
            lines.append(f"  {value(record.get('release'))}: {value(record.get('summary'))}")
            if record.get("precondition"):
                lines.append(f"    before: {value(record.get('precondition'))}")
            for label, key in (("before apply:", "beforeApply"), ("after apply: ", "afterApply")):
                for step in record.get(key) or []:
                    lines.append(f"    {label} {value(step.get('id'))}: {value(step.get('description'))}")
    acks = d.get("acknowledgements") or []
    if acks:
        lines.append("")
        lines += [f"Acknowledged: {value(a.get('release'))} by {value(a.get('user'))}" for a in acks]
    return lines


def approval_text(a: dict[str, Any]) -> str:
    revocation = a.get("revocation")
    if revocation:
        return (f"revoked by {value(revocation.get('user'))} at {value(revocation.get('time'))}"
                f" ({value(revocation.get('reason'))})")
    if a.get("user"):
        return f"approved by {value(a.get('user'))} until {value(a.get('expires'))} ({value(a.get('reason'))})"
    return "required, pending" if a.get("required") else "not required"


def overrides_text(overrides: list[dict[str, Any]]) -> str:
    """`change-window by alice at approve (2026-11-30T10:00:00Z)`, one per override, `; ` between."""
    return "; ".join(f"{', '.join(value(p) for p in o.get('policies') or [])} by {value(o.get('user'))} "
                     f"at {value(o.get('action'))} ({value(o.get('time'))})" for o in overrides)


def step_state(state: Any) -> str:
    return "in flight" if state == "InFlight" else value(state)


def assessment_lines(a: dict[str, Any]) -> list[str]:
    status = a.get("status")
    if status == "verified":
        lines = [f"Assessment: {value(a.get('digest'))} (verified)"]
        components = a.get("components") or []
        if components:
            lines += table(["COMPONENT", "CHANGE", "FROM", "TO", "VERDICT", "NOTES"], [
                [value(c.get("component")), value(c.get("change")), value(c.get("from")),
                 value(c.get("to")), value(c.get("verdict")), value(c.get("notes"))] for c in components])
        if a.get("summary"):
            lines.append(f"  Summary: {value(a.get('summary'))}")
        return lines
    if status == "unverified" and not a.get("reportDigest"):
        return [f"Assessment: unverified (the rollout records {value(a.get('digest'))}, "
                f"but {value(a.get('configMap'), 'its ConfigMap')} holds no report.json)"]
    if status == "unverified":
        return [f"Assessment: unverified (the rollout records {value(a.get('digest'))}, "
                f"the report's content is {value(a.get('reportDigest'))}; not shown)"]
    if status == "invalid":
        return [f"Assessment: {value(a.get('digest'))} (verified, but not valid JSON: {value(a.get('error'))})"]
    if status == "missing":
        return [f"Assessment: none (the rollout records {value(a.get('digest'))}, "
                f"but no report {value(a.get('configMap'))} was found)"]
    if status == "unavailable":
        return [f"Assessment: unavailable ({value(a.get('error'))})"]
    return ["Assessment: none"]


def approval(d: dict[str, Any]) -> list[str]:
    return [f"rollout {value(d.get('rollout'))} approved by {value(d.get('user'))} until {value(d.get('expires'))}"]


def revocation(d: dict[str, Any]) -> list[str]:
    return [f"rollout {value(d.get('rollout'))} revoked by {value(d.get('user'))}"]


def acknowledgement(d: dict[str, Any]) -> list[str]:
    return [f"rollout {value(d.get('rollout'))}: {value(d.get('release'))} acknowledged by {value(d.get('user'))}"]


def reproduction(d: dict[str, Any]) -> list[str]:
    commands = d.get("commands") or {}
    lines = fields([
        ("Plan", value(d.get("plan"))),
        ("AICR image", value(d.get("aicrImage"))),
        ("Bundle", value(d.get("bundle"))),
        ("Recipe", value(d.get("recipe"))),
    ])
    lines += ["", "Render the recipe with the AICR CLI, pull the operator's bundle, and compare them",
              "(no output from diff: the operator deployed exactly what the AICR CLI renders):", ""]
    lines += [f"  {value(commands.get(step))}" for step in ("render", "pull", "diff")]
    return lines


def help_overview(d: dict[str, Any]) -> list[str]:
    lines = [value(d.get("description")), "", "Usage:"]
    lines += [f"  {value(u)}" for u in d.get("usage") or []]
    lines += ["", "Commands:"]
    commands = d.get("commands") or []
    if commands:
        lines += table(["NAME", "SUMMARY"], [[value(c.get("name")), value(c.get("summary"))] for c in commands])[1:]
    lines += ["", "Flags (accepted by every command, before or after the name):"]
    lines += [f"  {value(f)}" for f in d.get("flags") or []]
    lines += ["", value(d.get("footer"))]
    return lines


def command_help(d: dict[str, Any]) -> list[str]:
    return str(d.get("help", "")).rstrip("\n").splitlines()


def plugin_list(d: dict[str, Any]) -> list[str]:
    rows = [[value(p.get("group")), value(p.get("name")), value(p.get("distribution")), value(p.get("version")),
             value(p.get("active")), value(p.get("mode")),
             value(p.get("status")) + (f": {value(p.get('error'))}" if p.get("error") else "")]
            for p in d.get("plugins") or []]
    lines = table(["GROUP", "NAME", "DISTRIBUTION", "VERSION", "ACTIVE", "MODE", "STATUS"], rows, indent="")
    return [*lines, "", f"Policy file: {policy_file_text(d.get('policyFile'))}"]
