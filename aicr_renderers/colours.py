"""Which words of the built-in layouts are coloured, and what they mean
(aicr_core/framework/output_options.py paints them).

Phases, outcomes and verdicts only: what an approver scans a table for. The
text is the same with or without colour.
"""
from __future__ import annotations

from typing import Any

from aicr_core.plugin import paint

PHASES = {"AwaitingApproval": "waiting", "AwaitingAcknowledgement": "waiting",
          "Progressing": "active", "Validating": "active"}
OUTCOMES = {"Succeeded": "good", "Failed": "bad", "Expired": "muted", "Revoked": "muted"}
# AICR's verdicts, and the statuses list's ASSESSMENT shows instead of one.
VERDICTS = {"safe": "good", "unversioned": "waiting", "manual": "waiting", "unknown": "bad", "blocked": "bad",
            "unverified": "bad", "invalid": "bad", "missing": "muted", "unavailable": "muted"}
POLICY_VERDICTS = {"allow": "good", "warn": "waiting", "overridden": "waiting", "deny": "bad", "error": "bad"}


def phase(text: str, phase_name: Any, outcome: Any = None) -> str:
    """A phase (or `Ended/<outcome>`): coloured by the outcome once there is one."""
    role = OUTCOMES.get(outcome) if outcome else PHASES.get(phase_name) if isinstance(phase_name, str) else None
    return paint(text, role)


def outcome(text: str, outcome_name: Any) -> str:
    return paint(text, OUTCOMES.get(outcome_name) if isinstance(outcome_name, str) else None)


def verdict(text: str, verdict_name: Any) -> str:
    return paint(text, VERDICTS.get(verdict_name) if isinstance(verdict_name, str) else None)


def policy_verdict(text: str, verdict_name: Any) -> str:
    return paint(text, POLICY_VERDICTS.get(verdict_name) if isinstance(verdict_name, str) else None)


def allowed(text: str, yes: bool) -> str:
    return paint(text, "good" if yes else "bad")
