"""This package's own tests, written with kubectl-aicr's pytest plugin.

The fixtures (`policy_verdict`, `aicr_approval`, `aicr_clock`, ...) come from
kubectl-aicr itself (entry point `pytest11`), so these run wherever
kubectl-aicr and this package are installed: `pip install -e '.[test]' && pytest`.
`policy_verdict` runs the hook through the same fail-closed engine as
`kubectl aicr approve`, with the settings the cluster's policy file would give.
"""
from __future__ import annotations

from datetime import timedelta

from aicr_site_example import layouts, policy, ticket


def test_a_reason_without_a_ticket_is_refused(policy_verdict, aicr_approval):
    verdict = policy_verdict(policy, "approve", approval=aicr_approval(reason="routine upgrade"))
    assert (verdict.verdict, verdict.code) == ("deny", "POLICY_DENIED")
    assert verdict.messages == ["the reason must cite a change ticket (CHG-1234): 'routine upgrade'"]


def test_a_ticket_in_the_reason_or_the_flag_passes(policy_verdict, aicr_approval):
    assert policy_verdict(policy, approval=aicr_approval(reason="CHG-42 driver update")).verdict == "allow"
    flagged = policy_verdict(policy, approval=aicr_approval(reason="routine"), flags={"ticket": "CHG-77"})
    assert (flagged.verdict, flagged.facts["ticket"]) == ("allow", "CHG-77")


def test_the_ticket_is_a_valid_write_input_of_approve():
    """Declared under aicr.write_inputs (setup.cfg): kubectl-aicr offers it as --ticket ID and as a form field."""
    assert ticket.TICKET.problem() is None
    assert (ticket.TICKET.name, ticket.TICKET.actions, ticket.TICKET.required) == ("ticket", ("approve",), False)


def test_the_ticket_goes_into_the_reason_unless_cited():
    """So that the webhook, which sees no flags, finds it in the approval it decides on."""
    assert ticket.TICKET.shape_reason("window", "CHG-77") == "window (CHG-77)"
    assert ticket.TICKET.shape_reason("CHG-77 window", "CHG-77") == "CHG-77 window"
    assert ticket.TICKET.shape_reason(None, "CHG-77") is None  # no reason: the command refuses that itself


def test_a_shaped_reason_passes_the_webhook(policy_verdict, aicr_approval):
    """What approve --reason routine --ticket CHG-77 records passes under admission, where only the reason counts."""
    reason = ticket.TICKET.shape_reason("routine", "CHG-77")
    assert policy_verdict(policy, approval=aicr_approval(reason=reason), command="admission").verdict == "allow"


def test_under_admission_only_the_reason_counts(policy_verdict, aicr_approval):
    """The webhook has no flags: a --ticket the CLI saw is not there."""
    verdict = policy_verdict(policy, approval=aicr_approval(reason="routine"), flags={"ticket": "CHG-77"},
                             command="admission")
    assert verdict.verdict == "deny"


def test_the_prefix_is_a_setting_of_the_policy_file(policy_verdict, aicr_approval):
    settings = {"prefix": "INC"}
    assert policy_verdict(policy, settings=settings, approval=aicr_approval(reason="CHG-1")).verdict == "deny"
    assert policy_verdict(policy, settings=settings, approval=aicr_approval(reason="INC-9 fix")).verdict == "allow"


def test_warn_mode_and_overrides(policy_verdict, aicr_approval):
    no_ticket = aicr_approval(reason="routine")
    warned = policy_verdict(policy, mode="warn", approval=no_ticket)
    assert (warned.verdict, warned.refusal, warned.warnings) == (
        "warn", None, ["change-ticket: the reason must cite a change ticket (CHG-1234): 'routine'"])
    overridden = policy_verdict(policy, overridable=True, overrides=["change-ticket"], approval=no_ticket)
    assert (overridden.verdict, overridden.refusal) == ("overridden", None)
    refused = policy_verdict(policy, overrides=["change-ticket"], approval=no_ticket)  # not overridable
    assert refused.code == "POLICY_DENIED"


def test_the_clock_is_frozen(aicr_clock, aicr_approval, aicr_rollout):
    aicr_clock.set("2026-12-24T18:00:00Z")
    approval = aicr_approval(expires=timedelta(hours=2))
    assert approval.expires.isoformat() == "2026-12-24T20:00:00+00:00"
    assert aicr_rollout("AwaitingApproval").deadline == aicr_clock.now() + timedelta(hours=8)


def test_identity_has_a_text_layout():
    assert layouts.identity({"username": "alice", "groups": ["aicr:approvers", "system:authenticated"]}) == [
        "Username:  alice", "Groups:    aicr:approvers, system:authenticated"]
