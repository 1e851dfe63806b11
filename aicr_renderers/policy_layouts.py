"""Text layouts of `policy check` (PolicyDecision) and `policy validate` (PolicyValidation)."""
from __future__ import annotations

from typing import Any

from aicr_core.plugin import table, value
from aicr_renderers import colours


def policy_decision(d: dict[str, Any]) -> list[str]:
    user = d.get("user") or {}
    refused_first = "policyFile" in d and d["policyFile"] is None  # the command's own refusal: no policy ran
    lines = [f"{value(d.get('action'))} {value(d.get('rollout'))} as {value(user.get('username'))} "
             f"at {value(d.get('time'))}", f"Policy file: {policy_file_text(d.get('policyFile'))}" if not refused_first
             else "Policy file: not read (the command refuses before its policies)", ""]
    policies = d.get("policies") or []
    if policies:
        lines += table(["VERDICT", "POLICY", "MODE", "MESSAGE (FACTS)"], [
            [colours.policy_verdict(value(p.get("verdict")), p.get("verdict")), value(p.get("name")),
             value(p.get("mode")), outcome_text(p)]
            for p in policies], indent="")
    elif refused_first:
        lines.append(f"no policy ran: {value(d.get('action'))} refuses this rollout itself")
    elif not d.get("errors"):
        lines.append(f"no active policy decides {value(d.get('action'))}")
    lines += [f"  {value(line)}" for line in [*(d.get("errors") or []), *(d.get("overrideProblems") or [])]]
    lines.append("")
    if d.get("withoutReason"):
        skipped = [value(p.get("name")) for p in policies if p.get("verdict") == "skipped"]
        lines.append("checked without --reason: " + (f"not checked: {', '.join(skipped)} (they read the reason); "
                                                      "pass --reason to check them" if skipped
                                                      else "no active policy reads the reason"))
    if d.get("allowed"):
        lines.append(f"{value(d.get('action'))} {colours.allowed('would go ahead', True)}")
    else:
        lines.append(f"{value(d.get('action'))} {colours.allowed('would be refused', False)}: "
                     f"[{value(d.get('code'))}] {value(d.get('message'))}")
    return lines


def outcome_text(p: dict[str, Any]) -> str:
    text = "; ".join(value(m) for m in p.get("messages") or []) or "-"
    facts = p.get("facts") or {}
    if facts:
        text += " (" + ", ".join(f"{value(k)}: {value(v)}" for k, v in facts.items()) + ")"
    return text


def policy_file_text(f: dict[str, Any] | None) -> str:
    f = f or {}
    if f.get("error"):
        return f"{value(f.get('source'))} not read: {value(f.get('error'))}"
    if not f.get("found"):
        return f"none ({value(f.get('source'))} not found): the built-in policies are inactive"
    return f"{value(f.get('source'))} ({value(f.get('digest'))})"


def policy_validation(d: dict[str, Any]) -> list[str]:
    lines = [f"policy file {value(d.get('file'))} is valid ({value(d.get('digest'))})", ""]
    lines += table(["POLICY", "ACTIVE", "MODE", "OVERRIDABLE", "WHY"], [
        [value(p.get("name")), value(p.get("active")), value(p.get("mode")), value(p.get("overridable")),
         value(p.get("why"))] for p in d.get("policies") or []], indent="")
    return lines


def policy_test_report(d: dict[str, Any]) -> list[str]:
    """`policy test`: a PASS or FAIL line a case (file, then case); under a failure, indented, each
    expectation that differs, the decision's message and the failing policies' messages and facts;
    then the summary line. With --fail-only (`failOnly`), the passing cases are left out."""
    lines: list[str] = []
    for item in d.get("items") or []:
        passed = bool(item.get("passed"))
        if passed and d.get("failOnly"):
            continue
        word = colours.allowed("PASS", True) if passed else colours.allowed("FAIL", False)
        lines.append(f"{word}  {value(item.get('file'))}  {value(item.get('case'))}")
        if not passed:
            lines += [f"    {line}" for line in failure_lines(item)]
    for entry in d.get("unnamedPolicies") or []:
        lines.append(f"note: {value(entry.get('file'))}: installed policies took part that "
                     f"{value(entry.get('policyFile'))} does not name: "
                     + ", ".join(value(name) for name in entry.get("policies") or []))
    failed = d.get("failed") or 0
    lines.append(f"{value(d.get('passed'), '0')} passed, "
                 + (colours.allowed(f"{value(failed)} failed", False) if failed else "0 failed"))
    return lines


def failure_lines(item: dict[str, Any]) -> list[str]:
    """Why a case failed, one line each, plain (no colour): the text layout and the JUnit renderer's."""
    if item.get("error"):
        return [f"could not be decided: {value(item.get('error'))}"]
    lines = [value(diff) for diff in item.get("differences") or []]
    decision = item.get("decision") or {}
    if decision.get("allowed"):
        lines.append(f"decision: {value(decision.get('action'))} would go ahead")
    else:
        lines.append(f"decision: [{value(decision.get('code'))}] {value(decision.get('message'))}")
        lines += [f"  {value(line)}" for line in [*(decision.get("errors") or []),
                                                    *(decision.get("overrideProblems") or [])]]
    wanted = {diff.split(":", 1)[0].removeprefix("policies.") for diff in item.get("differences") or []
              if isinstance(diff, str) and diff.startswith("policies.")}
    for p in decision.get("policies") or []:
        if p.get("verdict") not in ("allow", "skipped") or p.get("name") in wanted:
            lines.append(f"{value(p.get('name'))}: {value(p.get('verdict'))}: {outcome_text(p)}")
    return lines
