"""Text layouts of the built-in result kinds, one function each (like kubectl's describe printers).

Each takes the result's data and returns lines; setup.cfg registers each under
`aicr.layouts` by its kind, as a site package registers its own. The strings in quotes in
docs/upstream.md ("Output") are the upstream plugin's and are matched exactly.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from aicr_core.plugin import clock, fields, listing, table, value
from aicr_renderers import colours
from aicr_renderers import human_durations as durations
from aicr_renderers.policy_layouts import policy_file_text


def rollout_description(d: dict[str, Any]) -> list[str]:
    transition = d.get("transition") or {}
    frm, to = transition.get("from"), transition.get("to")
    inventory = d.get("inventory") or {}
    now = clock.now()
    lines = fields([
        ("Rollout", value(d.get("rollout"))),
        ("Runtime UID", value(d.get("runtimeUID"))),
        ("Transition", f"{value(frm) if frm else 'none (initial install)'} -> {value(to)}"),
        ("Phase", colours.phase(value(d.get("phase")), d.get("phase"))),
        ("Outcome", colours.outcome(value(d.get("outcome")), d.get("outcome"))),
        ("Deadline", deadline_text(d.get("deadline"), now)),
        ("Approval", approval_text(d.get("approval") or {})),
        *([("Overrides", overrides_text(d["overrides"]))] if d.get("overrides") else []),
        *([("Decided by", decisions_text(d["policyDecisions"]))] if d.get("policyDecisions") else []),
        ("Message", value(d.get("message"))),
        ("Inventory", f"{value(inventory.get('releases'), '0')} releases, {value(inventory.get('digest'))}"),
    ])
    lines += ["", "Steps:"]
    steps = d.get("steps") or []
    if steps:
        lines += table(["#", "RELEASE", "OPERATION", "ASSESSMENT", "CRDS", "STATE", "MESSAGE"], [
            [str(i), value(s.get("release")), value(s.get("operation")),
             colours.verdict(value(s.get("assessment")), s.get("assessment")),
             value(bool(s.get("changesCRDs"))), step_state(s.get("state")), value(s.get("message"))]
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
        lines += [f"Acknowledged: {value(a.get('release'))} by {value(a.get('user'))} at {value(a.get('time'))}"
                  for a in acks]
    conditions = d.get("conditions") or []
    if conditions:
        lines += ["", "Conditions:"]
        lines += table(["TYPE", "STATUS", "REASON", "LAST TRANSITION", "MESSAGE"], [
            [value(c.get("type")), value(c.get("status")), value(c.get("reason")),
             value(c.get("lastTransitionTime")), value(c.get("message"))] for c in conditions])
    if d.get("events") is not None:  # None: not asked for, or not readable (no warning)
        lines += ["", *events_lines(d["events"])]
    return lines


def events_lines(events: list[dict[str, Any]]) -> list[str]:
    """As `kubectl describe` ends: `Events:` and a table, or `Events:  <none>`."""
    if not events:
        return ["Events:  <none>"]
    now = clock.now()
    rows = []
    for e in events:
        age = since(e.get("last"), now, durations.age)
        if (e.get("count") or 1) > 1:
            age += f" (x{e['count']} over {since(e.get('first'), now, durations.age)})"
        rows.append([value(e.get("type")), value(e.get("reason")), age, value(e.get("from")),
                     value(e.get("note"))])
    return ["Events:", *table(["Type", "Reason", "Age", "From", "Message"], rows)]


def approval_cell(a: dict[str, Any], now: datetime) -> str:
    """list's APPROVAL: who, and the time left as kubectl words durations (`bob, 1h59m left`); the times
    themselves are in -o wide and -o json."""
    revocation = a.get("revocation")
    if revocation:
        return f"revoked by {value(revocation.get('user'))}"
    if a.get("user"):
        try:
            left = (clock.parse_time(str(a.get("expires"))) - now).total_seconds()
        except ValueError:
            return f"{value(a.get('user'))}, until {value(a.get('expires'))}"
        return f"{value(a.get('user'))}, " + (f"{durations.countdown(left)} left" if left > 0
                                               else f"expired {_expired(a.get('expires'))}")
    return "pending" if a.get("required") else "not required"


def approval_text(a: dict[str, Any], brief: bool = False) -> str:
    """describe's wording of an approval; `brief` (list -o wide) leaves out reasons and times of revocation."""
    revocation = a.get("revocation")
    if revocation:
        if brief:
            return f"revoked by {value(revocation.get('user'))}"
        return (f"revoked by {value(revocation.get('user'))} at {value(revocation.get('time'))}"
                f" ({value(revocation.get('reason'))})")
    if a.get("user"):
        ended = _expired(a.get("expires"))
        approved = (f"approved by {value(a.get('user'))}, expired {ended}" if ended
                    else f"approved by {value(a.get('user'))} until {value(a.get('expires'))}")
        return approved if brief else f"{approved} ({value(a.get('reason'))})"
    if a.get("required"):
        return "pending" if brief else "required, pending"
    return "not required"


def _expired(expires: Any) -> str | None:
    """When an approval's expiry has passed: `08:17Z` that day, else the whole time; None while it holds."""
    try:
        moment = clock.parse_time(expires) if isinstance(expires, str) else None
    except ValueError:
        return None
    now = clock.now()
    if moment is None or moment > now:
        return None
    return moment.strftime("%H:%MZ") if moment.date() == now.date() else clock.format_time(moment)


def overrides_text(overrides: list[dict[str, Any]]) -> str:
    """`change-window by alice at approve (2026-11-30T10:00:00Z)`, one per override, `; ` between."""
    return "; ".join(f"{', '.join(value(p) for p in o.get('policies') or [])} by {value(o.get('user'))} "
                     f"at {value(o.get('action'))} ({value(o.get('time'))})" for o in overrides)


def decisions_text(decisions: list[dict[str, Any]]) -> str:
    """`approve by alice under ConfigMap aicr-system/aicr-approval-policy (key policy.yaml) sha256:3f9a1c0d2b7e4a51`."""
    return "; ".join(f"{value(d.get('action'))} by {value(d.get('user'))} under {value(d.get('location'))} "
                     f"{value((d.get('digest') or 'no file')[:23])}" for d in decisions)


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
                 value(c.get("to")), colours.verdict(value(c.get("verdict")), c.get("verdict")),
                 value(c.get("notes"))] for c in components])
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


def rollout_list(d: dict[str, Any], wide: bool = False) -> list[str]:
    items = d.get("items") or []
    if not items:  # across clusters that all failed: nothing on stdout (each failure is its line on stderr)
        return ["No rollouts found."] if not d.get("errors") or d.get("read") else []
    now = clock.now()
    headers = ["NAME", "PHASE", "APPROVAL", "DEADLINE", "WAITING-ON", "ASSESSMENT", "AGE"]
    if wide:
        headers += ["TRANSITION", "STEPS"]
    fleet = "errors" in d  # across clusters (--contexts): CONTEXT first
    if fleet:
        headers.insert(0, "CONTEXT")
    rows = []
    for item in items:
        assessment = item.get("assessment") or {}
        status = assessment.get("status")
        phase, outcome = item.get("phase"), item.get("outcome")
        verdict = assessment.get("verdict") if status == "verified" else status
        row = [value(item.get("name")), colours.phase(phase_text(phase, outcome), phase, outcome),
               approval_text(item.get("approval") or {}, brief=True) if wide
               else approval_cell(item.get("approval") or {}, now),
               deadline_text(item.get("deadline"), now) if wide else deadline_left(item.get("deadline"), now),
               value(item.get("waitingOn")),
               colours.verdict(value(verdict), verdict),
               since(item.get("created"), now, durations.age)]
        if wide:
            transition = item.get("transition") or {}
            row += [f"{short_digest(transition.get('from'))}->{short_digest(transition.get('to'))}",
                    value(item.get("steps"), "0")]
        if fleet:
            row.insert(0, value(item.get("context")))
        rows.append(row)
    return listing(headers, rows)


def rollout_list_wide(d: dict[str, Any]) -> list[str]:
    return rollout_list(d, wide=True)


def phase_text(phase: Any, outcome: Any) -> str:
    return f"{value(phase)}/{value(outcome)}" if outcome else value(phase)


def deadline_text(deadline: Any, now: datetime) -> str:
    """`2026-11-30T06:00:00Z (in 2h10m)`, or `... (passed)`."""
    if not deadline:
        return "-"
    try:
        left = (clock.parse_time(str(deadline)) - now).total_seconds()
    except ValueError:
        return value(deadline)
    return f"{value(deadline)} ({'in ' + durations.countdown(left) if left > 0 else 'passed'})"


def deadline_left(deadline: Any, now: datetime) -> str:
    """list's DEADLINE: `in 2h10m`, or `passed` (the time itself is in -o wide and -o json)."""
    text = deadline_text(deadline, now)
    return text.rsplit(" (", 1)[1].rstrip(")") if text.endswith(")") else text


def since(moment: Any, now: datetime, humanize: Callable[[float], str]) -> str:
    if not moment:
        return "-"
    try:
        return humanize((now - clock.parse_time(str(moment))).total_seconds())
    except ValueError:
        return value(moment)


def short_digest(digest: Any) -> str:
    """sha256:3f9a1c0d2b7e4a51... -> 3f9a1c0d2b7e4a51 (the 16 hex digits names are made of), as a table cell."""
    from aicr_core.plugin import short_digest as plain  # the operator API's module: loaded by the command already

    return value(plain(digest))


def condition_met(d: dict[str, Any]) -> list[str]:
    outcome = f", {value(d.get('outcome'))}" if d.get("outcome") else ""
    return [f"rollout {value(d.get('rollout'))}: {value(d.get('condition'))} met "
            f"(phase {value(d.get('phase'))}{outcome})"]


def version(d: dict[str, Any]) -> list[str]:
    """As `kubectl version` prints it: one `X Version: v` line each."""
    client, server = d.get("client") or {}, d.get("server")
    commit = client.get("commit")
    lines = [f"Client Version: {value(client.get('kubectlAicr'), 'unknown')}",
             f"Installed: {value(client.get('installed'), 'unknown')}",
             f"Commit: {value(commit[:12] if isinstance(commit, str) else None, 'unknown')}",
             f"Build Time: {value(client.get('buildTime'), 'unknown')}",
             f"Python Version: {value(client.get('python'))}",
             f"Kubernetes Client Version: {value(client.get('kubernetesClient'), 'unknown')}"]
    if server:
        operator = server.get("operatorAPI") or {}
        served = operator.get("runtimeRolloutsServed")
        state = "unknown" if served is None else ("served" if served else "not served")
        lines += [f"Server Version: {value(server.get('version'), 'unknown')}",
                  f"Operator API: {value(operator.get('groupVersion'))} RuntimeRollouts {state}"]
    return lines


def approval(d: dict[str, Any]) -> list[str]:
    return dry_run(d, f"rollout {value(d.get('rollout'))} approved by {value(d.get('user'))} "
                      f"until {value(d.get('expires'))}")


def revocation(d: dict[str, Any]) -> list[str]:
    return dry_run(d, f"rollout {value(d.get('rollout'))} revoked by {value(d.get('user'))}")


def acknowledgement(d: dict[str, Any]) -> list[str]:
    return dry_run(d, f"rollout {value(d.get('rollout'))}: {value(d.get('release'))} "
                      f"acknowledged by {value(d.get('user'))}")


def dry_run(d: dict[str, Any], line: str) -> list[str]:
    """The write's line; a dry run says so, and a client one shows the request it did not send."""
    mode = d.get("dryRun")
    if mode not in ("client", "server"):
        return [line]
    lines = [f"{line} ({mode} dry run)"]
    request = d.get("request")
    if mode == "client" and isinstance(request, dict):
        lines += [f"  would send: {value(request.get('method'))} {value(request.get('path'))}",
                  f"  {value(json.dumps(request.get('body'), sort_keys=True))}"]
    return lines


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


HOOKS_PREFIX = "aicr.commands."


def plugin_list(d: dict[str, Any]) -> list[str]:
    """The entry points of the four groups, then cliff's CommandHooks (by command), then the folders'
    distributions that declare none; the policy file last."""
    plugins = [p for p in d.get("plugins") or [] if isinstance(p, dict)]
    hooks = [p for p in plugins if str(p.get("group")).startswith(HOOKS_PREFIX)]
    rows = [[value(p.get("group")), value(p.get("name")), value(p.get("distribution")), value(p.get("version")),
             value(p.get("origin")), value(p.get("active")), value(p.get("mode")), status_text(p)]
            for p in plugins if p not in hooks]
    lines = listing(["GROUP", "NAME", "DISTRIBUTION", "VERSION", "ORIGIN", "ACTIVE", "MODE", "STATUS"], rows)
    if hooks:
        lines += ["", "Command hooks (aicr.commands.COMMAND):", *listing(
            ["COMMAND", "NAME", "DISTRIBUTION", "VERSION", "ORIGIN", "STATUS"],
            [[value(str(p.get("group")).removeprefix(HOOKS_PREFIX)), value(p.get("name")),
              value(p.get("distribution")), value(p.get("version")), value(p.get("origin")), status_text(p)]
             for p in hooks])]
    quiet = [[value(q.get("distribution")), value(q.get("version")), value(q.get("origin")),
              ", ".join(value(m) for m in q.get("modules") or []) or "-"]
             for q in d.get("withoutEntryPoints") or [] if isinstance(q, dict)]
    if quiet:
        lines += ["", "Distributions without entry points (importable, named by no plugin):",
                  *listing(["DISTRIBUTION", "VERSION", "ORIGIN", "MODULES"], quiet)]
    return [*lines, "", f"Policy file: {policy_file_text(d.get('policyFile'))}"]


def status_text(p: dict[str, Any]) -> str:
    return value(p.get("status")) + (f": {value(p.get('error'))}" if p.get("error") else "")


def plugin_change(d: dict[str, Any]) -> list[str]:
    """One line a distribution installed into, or uninstalled from, the plugin folder."""
    done = "installed into" if d.get("action") == "install" else "uninstalled from"
    return [f"{value(x.get('name'))} {value(x.get('version'))} {done} {value(d.get('folder'))}"
            for x in d.get("distributions") or []]


def who_am_i(d: dict[str, Any]) -> list[str]:
    may = d.get("mayApprove")
    answer = "yes" if may is True else "no"
    return fields([("Username", value(d.get("username"))),
                   ("Groups", ", ".join(value(g) for g in d.get("groups") or []) or "-"),
                   ("May approve", f"{answer} ({value(d.get('approverPermission'))}, as RBAC says; "
                                   "the approval policies decide each approval)")])
