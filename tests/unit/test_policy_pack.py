"""The built-in policies, one by one, through the same engine as the CLI (the site authors' kit: policy_verdict).

The clock is frozen (aicr_clock); change windows are checked across DST
changes (Europe/Berlin: 2026-03-29 01:00 UTC spring forward, 2026-10-25
01:00 UTC fall back; America/New_York: 2026-03-08 07:00 UTC, 2026-11-01
06:00 UTC), midnight and week boundaries, overlapping windows and blackouts.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from testfixtures import compare

from aicr_core.errors import AicrError
from aicr_core.testing import FrozenClock, PolicyVerdict, approval, assessment, identity, rollout, step
from aicr_policies import assessment as assessment_policy
from aicr_policies import change_window, four_eyes, max_approval, reason_format
from aicr_policies.groups import approver_groups, crd_changes

ALL_DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
OFFICE = {"timeZone": "Europe/Berlin", "windows": [{"days": ["Mon", "Tue", "Wed", "Thu"], "from": "09:00",
                                                   "to": "17:00"}]}


def window(clock: FrozenClock, at: str, settings: dict[str, Any], expires: timedelta = timedelta(minutes=1)
           ) -> PolicyVerdict:
    from aicr_core.testing import policy_verdict

    clock.set(at)
    return policy_verdict(change_window, "approve", settings=settings, approval=approval(expires=expires))


# -- change-window: weekly windows in a time zone ------------------------------------------------------

@pytest.mark.parametrize("at,verdict", [
    ("2026-11-30T07:59:00Z", "deny"),   # Mon 08:59 CET
    ("2026-11-30T08:00:00Z", "allow"),  # Mon 09:00 CET: from is included
    ("2026-11-30T15:59:59Z", "allow"),  # Mon 16:59:59 CET
    ("2026-11-30T16:00:00Z", "deny"),   # Mon 17:00 CET: to is excluded
    ("2026-12-04T10:00:00Z", "deny"),   # Fri
    ("2026-06-01T14:30:00Z", "allow"),  # Mon 16:30 CEST
    ("2026-06-01T15:30:00Z", "deny"),   # Mon 17:30 CEST: the same UTC time is inside in winter...
    ("2026-11-30T15:30:00Z", "allow"),  # ...Mon 16:30 CET
])
def test_weekly_windows_in_the_policy_time_zone(aicr_clock: FrozenClock, at: str, verdict: str) -> None:
    compare(window(aicr_clock, at, OFFICE).verdict, expected=verdict)


def test_outside_says_when_it_is_and_which_windows_there_are(aicr_clock: FrozenClock) -> None:
    result = window(aicr_clock, "2026-12-04T17:02:00Z", OFFICE)
    compare((result.code, result.messages), expected=("POLICY_DENIED", [
        "it is Fri 2026-12-04 18:02 CET, outside every change window (Mon,Tue,Wed,Thu 09:00-17:00 Europe/Berlin)"]))
    compare(result.facts, expected={"now": "Fri 2026-12-04 18:02 CET", "timeZone": "Europe/Berlin",
                                    "windows": "Mon,Tue,Wed,Thu 09:00-17:00"})


SPRING_SUNDAY = {"timeZone": "Europe/Berlin", "expiryWithinWindow": True,
                 "windows": [{"days": ["Sun"], "from": "01:00", "to": "05:00"}]}


@pytest.mark.parametrize("at,verdict", [
    ("2026-03-28T23:59:00Z", "deny"),   # Sun 00:59 CET
    ("2026-03-29T00:00:00Z", "allow"),  # Sun 01:00 CET: opens
    ("2026-03-29T00:59:00Z", "allow"),  # Sun 01:59 CET, then the clock jumps to 03:00 CEST
    ("2026-03-29T01:00:00Z", "allow"),  # Sun 03:00 CEST
    ("2026-03-29T02:59:00Z", "allow"),  # Sun 04:59 CEST
    ("2026-03-29T03:00:00Z", "deny"),   # Sun 05:00 CEST: three real hours after it opened
])
def test_a_window_across_the_spring_forward_change(aicr_clock: FrozenClock, at: str, verdict: str) -> None:
    compare(window(aicr_clock, at, SPRING_SUNDAY).verdict, expected=verdict)


def test_expiry_within_a_window_that_loses_an_hour(aicr_clock: FrozenClock) -> None:
    compare(window(aicr_clock, "2026-03-29T00:30:00Z", SPRING_SUNDAY, timedelta(hours=2, minutes=30)).verdict,
            expected="allow")  # closes 03:00 UTC
    result = window(aicr_clock, "2026-03-29T00:30:00Z", SPRING_SUNDAY, timedelta(hours=2, minutes=31))
    compare(result.messages, expected=[
        "the approval would expire at Sun 2026-03-29 05:01 CEST, after its window closes at Sun 2026-03-29 05:00 "
        "CEST; pass --expires 2h30m or less"])


@pytest.mark.parametrize("at,verdict", [
    ("2026-10-24T22:59:00Z", "deny"),   # Sun 00:59 CEST
    ("2026-10-24T23:00:00Z", "allow"),  # Sun 01:00 CEST
    ("2026-10-25T00:30:00Z", "allow"),  # Sun 02:30 CEST (first time)
    ("2026-10-25T01:30:00Z", "allow"),  # Sun 02:30 CET (second time)
    ("2026-10-25T03:59:00Z", "allow"),  # Sun 04:59 CET
    ("2026-10-25T04:00:00Z", "deny"),   # Sun 05:00 CET: five real hours after it opened
])
def test_a_window_across_the_fall_back_change(aicr_clock: FrozenClock, at: str, verdict: str) -> None:
    compare(window(aicr_clock, at, SPRING_SUNDAY).verdict, expected=verdict)


@pytest.mark.parametrize("at,verdict", [
    ("2026-10-25T00:15:00Z", "allow"),  # 02:15 CEST, the first 02:15
    ("2026-10-25T00:30:00Z", "deny"),   # 02:30 CEST: the window closes the first time the clock reads its `to`
    ("2026-10-25T01:15:00Z", "deny"),   # 02:15 CET: the repeated hour is after the close
])
def test_a_window_ending_in_the_repeated_hour_closes_at_its_first_occurrence(aicr_clock: FrozenClock, at: str,
                                                                              verdict: str) -> None:
    settings = {"timeZone": "Europe/Berlin", "windows": [{"days": ["Sun"], "from": "00:00", "to": "02:30"}]}
    compare(window(aicr_clock, at, settings).verdict, expected=verdict)


@pytest.mark.parametrize("at,verdict", [
    ("2026-03-29T01:15:00Z", "deny"),   # 03:15 CEST
    ("2026-03-29T01:30:00Z", "allow"),  # 03:30 CEST: 02:30 does not exist that day; read with the winter offset
])
def test_a_window_opening_in_the_skipped_hour(aicr_clock: FrozenClock, at: str, verdict: str) -> None:
    settings = {"timeZone": "Europe/Berlin", "windows": [{"days": ["Sun"], "from": "02:30", "to": "04:00"}]}
    compare(window(aicr_clock, at, settings).verdict, expected=verdict)


@pytest.mark.parametrize("at,verdict", [
    ("2026-03-08T13:59:00Z", "deny"),   # Sun 09:59 EDT (the day the US springs forward)
    ("2026-03-08T14:00:00Z", "allow"),  # Sun 10:00 EDT
    ("2026-11-01T14:59:00Z", "deny"),   # Sun 09:59 EST (the day it falls back)
    ("2026-11-01T15:00:00Z", "allow"),  # Sun 10:00 EST
])
def test_another_zone_changes_on_other_days(aicr_clock: FrozenClock, at: str, verdict: str) -> None:
    settings = {"timeZone": "America/New_York", "windows": [{"days": ["Sun"], "from": "10:00", "to": "12:00"}]}
    compare(window(aicr_clock, at, settings).verdict, expected=verdict)


FRIDAY_NIGHT = {"windows": [{"days": ["Fri"], "from": "22:00", "to": "24:00"},
                            {"days": ["Sat"], "from": "00:00", "to": "04:00"}], "expiryWithinWindow": True}


@pytest.mark.parametrize("at,verdict", [
    ("2026-12-04T21:59:00Z", "deny"), ("2026-12-04T22:00:00Z", "allow"), ("2026-12-04T23:59:59Z", "allow"),
    ("2026-12-05T00:00:00Z", "allow"), ("2026-12-05T03:59:00Z", "allow"), ("2026-12-05T04:00:00Z", "deny"),
])
def test_a_window_across_midnight_is_two_windows(aicr_clock: FrozenClock, at: str, verdict: str) -> None:
    compare(window(aicr_clock, at, FRIDAY_NIGHT).verdict, expected=verdict)


def test_expiry_follows_windows_that_touch_across_midnight_and_the_week(aicr_clock: FrozenClock) -> None:
    compare(window(aicr_clock, "2026-12-04T23:00:00Z", FRIDAY_NIGHT, timedelta(hours=5)).verdict, expected="allow")
    result = window(aicr_clock, "2026-12-04T23:00:00Z", FRIDAY_NIGHT, timedelta(hours=5, minutes=1))
    assert result.messages[0].endswith("after its window closes at Sat 2026-12-05 04:00 UTC; pass --expires 5h "
                                       "or less"), result.messages
    sunday_to_monday = {"expiryWithinWindow": True, "windows": [{"days": ["Sun"], "from": "22:00", "to": "24:00"},
                                                                {"days": ["Mon"], "from": "00:00", "to": "02:00"}]}
    compare(window(aicr_clock, "2026-12-06T23:00:00Z", sunday_to_monday, timedelta(hours=3)).verdict, expected="allow")
    compare(window(aicr_clock, "2026-12-06T23:00:00Z", sunday_to_monday, timedelta(hours=3, seconds=1)).verdict,
            expected="deny")


def test_overlapping_windows_count_as_one(aicr_clock: FrozenClock) -> None:
    settings = {"expiryWithinWindow": True, "windows": [
        {"days": ["Mon"], "from": "09:00", "to": "12:00"},
        {"days": ["Mon", "Tue"], "from": "11:00", "to": "15:00"},
        {"days": ["Mon"], "from": "10:00", "to": "11:30"}]}
    compare(window(aicr_clock, "2026-11-30T10:00:00Z", settings, timedelta(hours=5)).verdict, expected="allow")
    compare(window(aicr_clock, "2026-11-30T10:00:00Z", settings, timedelta(hours=5, minutes=1)).verdict,
            expected="deny")
    compare(window(aicr_clock, "2026-12-01T10:00:00Z", settings).verdict, expected="deny")  # Tue 10:00: only 11-15


def test_windows_around_the_clock_never_close(aicr_clock: FrozenClock) -> None:
    settings = {"expiryWithinWindow": True, "windows": [{"days": ALL_DAYS, "from": "00:00", "to": "24:00"}]}
    compare(window(aicr_clock, "2026-11-30T10:00:00Z", settings, timedelta(days=40)).verdict, expected="allow")


# -- change-window: blackouts ---------------------------------------------------------------------------

YEAR_END = {"timeZone": "Europe/Berlin", "blackouts": [{"name": "year-end freeze", "from": "2026-12-20",
                                                        "to": "2027-01-04"}]}


@pytest.mark.parametrize("at,verdict", [
    ("2026-12-19T22:59:59Z", "allow"),  # Sat 19 Dec 23:59:59 CET
    ("2026-12-19T23:00:00Z", "deny"),   # Sun 20 Dec 00:00 CET: dates are whole days in the time zone
    ("2027-01-04T22:59:59Z", "deny"),   # Mon 4 Jan 23:59:59 CET: `to` is included
    ("2027-01-04T23:00:00Z", "allow"),
])
def test_a_blackout_of_whole_days(aicr_clock: FrozenClock, at: str, verdict: str) -> None:
    compare(window(aicr_clock, at, YEAR_END).verdict, expected=verdict)


def test_a_blackout_names_itself_and_wins_over_a_window(aicr_clock: FrozenClock) -> None:
    settings = {**OFFICE, "blackouts": [{"name": "datacenter move", "from": "2026-11-30T09:30:00Z",
                                         "to": "2026-11-30T12:00:00+01:00"}]}
    result = window(aicr_clock, "2026-11-30T10:00:00Z", settings)
    compare(result.messages, expected=["it is Mon 2026-11-30 11:00 CET, inside the blackout 'datacenter move' "
                                       "(2026-11-30T09:30:00Z to 2026-11-30T11:00:00Z)"])
    compare(window(aicr_clock, "2026-11-30T11:00:00Z", settings).verdict, expected="allow")  # `to` is excluded


def test_a_coming_blackout_ends_the_window_for_the_expiry(aicr_clock: FrozenClock) -> None:
    settings = {**OFFICE, "expiryWithinWindow": True,
                "blackouts": [{"name": "freeze", "from": "2026-11-30T11:00:00Z", "to": "2026-12-01T00:00:00Z"},
                              {"name": "later", "from": "2026-12-24", "to": "2026-12-26"}]}
    result = window(aicr_clock, "2026-11-30T09:00:00Z", settings, timedelta(hours=3))
    compare(result.messages, expected=[
        "the approval would expire at Mon 2026-11-30 13:00 CET, after the blackout 'freeze' (2026-11-30T11:00:00Z to "
        "2026-12-01T00:00:00Z) starts at Mon 2026-11-30 12:00 CET; pass --expires 2h or less"])
    compare(window(aicr_clock, "2026-11-30T09:00:00Z", settings, timedelta(hours=2)).verdict, expected="allow")


# -- change-window: settings that do not validate -------------------------------------------------------

@pytest.mark.parametrize("settings,problem", [
    ({}, "policies.change-window: set windows, blackouts or both (an empty change-window allows everything)"),
    ({"windows": [{"days": ["Mon"], "from": "17:00", "to": "09:00"}]},
     "policies.change-window.windows[0].to: 09:00 is not after from (17:00); a window across midnight is two windows "
     "(to \"24:00\", then from \"00:00\" the next day)"),
    ({"windows": [{"days": ["Mon"], "from": "24:00", "to": "24:00"}]},
     "policies.change-window.windows[0].from: a window cannot open at 24:00; use 00:00 of the next day"),
    ({"windows": [{"days": ["Mon"], "from": "9:00", "to": "17:00"}]},
     "policies.change-window.windows[0].from: '9:00' is not a time of day HH:MM (00:00 to 24:00)"),
    ({"windows": [{"days": ["Mon"], "from": "09:00\n", "to": "17:00"}]},
     "policies.change-window.windows[0].from: '09:00\\n' is not a time of day HH:MM (00:00 to 24:00)"),
    ({"windows": [{"days": [], "from": "09:00", "to": "17:00"}]},
     "policies.change-window.windows[0].days: List should have at least 1 item after validation, not 0"),
    ({"windows": [{"days": ["Mon"], "from": "09:00"}]},
     "policies.change-window.windows[0].to: required key is missing"),
    ({"timeZone": "CET+1", "blackouts": [{"name": "x", "from": "2026-12-20", "to": "2026-12-21"}]},
     "policies.change-window.timeZone: 'CET+1' is not an IANA time zone (such as Europe/Berlin or UTC)"),
    ({"blackouts": [{"name": "x", "from": "2026-12-20", "to": "2026-12-21T00:00:00Z"}]},
     "policies.change-window.blackouts[0].to: from and to must both be dates or both be RFC 3339 times"),
    ({"blackouts": [{"name": "x", "from": "2026-12-20", "to": "2026-12-19"}]},
     "policies.change-window.blackouts[0].to: 2026-12-19 is before from (2026-12-20)"),
    ({"blackouts": [{"name": "x", "from": "2026-12-20T10:00:00", "to": "2026-12-21T00:00:00Z"}]},
     "policies.change-window.blackouts[0].from: '2026-12-20T10:00:00' is neither a date (2026-12-20) nor an RFC 3339 "
     "time with an offset (2026-12-20T18:00:00Z)"),
    ({"blackouts": [{"name": " ", "from": "2026-12-20", "to": "2026-12-21"}]},
     "policies.change-window.blackouts[0].name: must not be empty"),
    ({"expiryWithinWindow": "yes", "blackouts": [{"name": "x", "from": "2026-12-20", "to": "2026-12-21"}]},
     "policies.change-window.expiryWithinWindow: Input should be a valid boolean (got 'yes')"),
])
def test_change_window_settings_that_do_not_validate(aicr_clock: FrozenClock, settings: dict[str, Any],
                                                     problem: str) -> None:
    with pytest.raises(AicrError) as raised:
        window(aicr_clock, "2026-11-30T10:00:00Z", settings)
    compare((raised.value.code, raised.value.details), expected=("POLICY_ERROR", [problem]))


def test_revocations_and_acknowledgements_never_wait_for_a_window(aicr_clock: FrozenClock) -> None:
    from aicr_core.testing import policy_verdict

    aicr_clock.set("2026-12-04T17:02:00Z")  # outside
    for action in ("revoke", "acknowledge"):
        compare(policy_verdict(change_window, action, settings=OFFICE).refusal, expected=None)


# -- max-approval -------------------------------------------------------------------------------------

def test_max_approval(aicr_clock: FrozenClock, policy_verdict: Any) -> None:
    long = policy_verdict(max_approval, settings={"max": "8h"},
                          approval=approval(expires=timedelta(hours=8, minutes=1)))
    compare((long.verdict, long.messages), expected=(
        "deny", ["an approval of 8h1m is longer than the 8h allowed; pass --expires 8h or less"]))
    exact = policy_verdict(max_approval, settings={"max": "1h30m"}, approval=approval(expires=timedelta(minutes=90)))
    compare((exact.verdict, exact.facts), expected=("allow", {"length": "1h30m", "max": "1h30m"}))


@pytest.mark.parametrize("value,problem", [
    ("0s", "policies.max-approval.max: must be more than zero"),
    ("8 hours", 'policies.max-approval.max: time: unknown unit " hours" in duration "8 hours"'),
    ("-8h", "policies.max-approval.max: '-8h' is negative"),
    (8, "policies.max-approval.max: must be a Go duration string such as 8h or 90m, not 8"),
])
def test_max_approval_settings(policy_verdict: Any, value: Any, problem: str) -> None:
    with pytest.raises(AicrError) as raised:
        policy_verdict(max_approval, settings={"max": value})
    compare(raised.value.details, expected=[problem])


# -- reason-format --------------------------------------------------------------------------------------

def test_reason_format(policy_verdict: Any) -> None:
    settings = {"pattern": r"^CHG-[0-9]+", "message": "cite a change ticket (CHG-1234) first"}
    compare(policy_verdict(reason_format, settings=settings, approval=approval(reason="CHG-12 go")).verdict,
            expected="allow")
    refused = policy_verdict(reason_format, settings=settings, approval=approval(reason="go, CHG-12"))
    compare(refused.messages, expected=["cite a change ticket (CHG-1234) first"])  # matched from the start
    default = policy_verdict(reason_format, settings={"pattern": "^T"}, approval=approval(reason="x"))
    compare(default.messages, expected=["the reason must match ^T: 'x'"])
    # Revocations are checked only when asked: an emergency stop must not hunt for a ticket.
    compare(policy_verdict(reason_format, "revoke", settings=settings).verdict, expected="allow")
    both = {**settings, "actions": ["approve", "revoke"]}
    compare(policy_verdict(reason_format, "revoke", settings=both).verdict, expected="deny")
    with pytest.raises(AicrError, match="POLICY_ERROR"):
        policy_verdict(reason_format, settings={"pattern": "([a-z"})


# -- approver-groups, crd-changes ----------------------------------------------------------------------

def test_approver_groups_per_action(policy_verdict: Any) -> None:
    settings = {"approve": ["platform-leads", "sre"], "acknowledge": ["sre"]}
    lead = identity("lena", groups=["platform-leads"])
    compare(policy_verdict(approver_groups, "approve", settings=settings, user=lead).verdict, expected="allow")
    refused = policy_verdict(approver_groups, "approve", settings=settings)  # alice: aicr:approvers
    compare(refused.messages, expected=["to approve needs a member of platform-leads, sre; alice is in "
                                        "aicr:approvers, system:authenticated"])
    compare(policy_verdict(approver_groups, "acknowledge", settings=settings, user=lead).verdict, expected="deny")
    compare(policy_verdict(approver_groups, "revoke", settings=settings).verdict, expected="allow")  # not set
    with pytest.raises(AicrError, match="POLICY_ERROR"):
        policy_verdict(approver_groups, settings={})


def test_crd_changes(policy_verdict: Any) -> None:
    settings = {"groups": ["platform-leads"]}
    refused = policy_verdict(crd_changes, settings=settings)  # the default rollout's gpu-operator changes CRDs
    compare((refused.verdict, refused.facts["crdSteps"]), expected=("deny", "gpu-operator"))
    lead = identity("lena", groups=["platform-leads"])
    compare(policy_verdict(crd_changes, settings=settings, user=lead).verdict, expected="allow")
    plain = rollout(steps=[step("nvsentinel", "Install")])
    compare(policy_verdict(crd_changes, settings=settings, rollout=plain).messages, expected=["no step changes CRDs"])


# -- assessment ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("report,settings,verdict", [
    (assessment("verified", {"gpu-operator": "manual", "nvsentinel": "blocked"}), {}, "deny"),
    (assessment("verified", {"gpu-operator": "manual"}), {}, "allow"),
    (assessment("verified", {"gpu-operator": "manual"}), {"refuseVerdicts": ["manual"]}, "deny"),
    (assessment("unverified"), {}, "deny"),
    (assessment("invalid"), {}, "deny"),
    (assessment("unavailable"), {}, "deny"),
    (assessment("unverified"), {"refuseUnverified": False}, "allow"),
    (assessment("none"), {}, "allow"),
    (assessment("missing"), {}, "allow"),
    (assessment("none"), {"refuseMissing": True}, "deny"),
    (assessment("missing"), {"refuseMissing": True}, "deny"),
    (None, {}, "deny"),  # a caller that could not read it: unverified
])
def test_assessment(policy_verdict: Any, report: Any, settings: dict[str, Any], verdict: str) -> None:
    compare(policy_verdict(assessment_policy, settings=settings, assessment=report).verdict, expected=verdict)


def test_assessment_names_the_components(policy_verdict: Any) -> None:
    refused = policy_verdict(assessment_policy, assessment=assessment(
        "verified", {"gpu-operator": "blocked", "nvsentinel": "safe", "dcgm": "blocked"}))
    compare(refused.messages, expected=["AICR's verified assessment refuses: gpu-operator: blocked, dcgm: blocked"])
    with pytest.raises(AicrError, match="POLICY_ERROR"):
        policy_verdict(assessment_policy, settings={"refuseVerdicts": ["terrible"]})


# -- four-eyes -------------------------------------------------------------------------------------------

def test_four_eyes(policy_verdict: Any) -> None:
    bob = identity("bob")
    # The kit's rollout for acknowledge and revoke was approved by bob.
    compare(policy_verdict(four_eyes, "acknowledge", user=bob).messages,
            expected=["bob approved this rollout, so someone else must acknowledge it"])
    compare(policy_verdict(four_eyes, "acknowledge").verdict, expected="allow")  # alice
    compare(policy_verdict(four_eyes, "revoke", user=bob).verdict, expected="allow")  # revoke is off by default
    compare(policy_verdict(four_eyes, "revoke", user=bob, settings={"revoke": True}).verdict, expected="deny")
    compare(policy_verdict(four_eyes, "acknowledge", user=bob, settings={"acknowledge": False}).verdict,
            expected="allow")


# -- several policies at once ------------------------------------------------------------------------------

def test_every_policy_of_the_pack_through_one_engine(aicr_clock: FrozenClock) -> None:
    """Overlapping rules all run and all are listed; warn mode and overrides apply per policy."""
    import yaml

    from aicr_core.domain.hookspecs import PolicyContext
    from aicr_core.domain.policy_engine import PolicyEngine, load_policies

    aicr_clock.set("2026-12-04T17:02:00Z")  # Friday evening in Berlin
    text = yaml.safe_dump({"apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicy", "policies": {
        "change-window": {**OFFICE, "overridable": True}, "max-approval": {"max": "1h"},
        "reason-format": {"pattern": "^CHG-", "mode": "warn"}, "crd-changes": {"groups": ["platform-leads"]},
        "assessment": {}, "four-eyes": {}, "approver-groups": {"approve": ["aicr:approvers"]}}})
    engine = PolicyEngine.build(load_policies(), text, "pack.yaml")
    decision = engine.decision("approve", rollout=rollout(), user=identity(), overrides=["change-window"],
                             context=PolicyContext("approve"), approval=approval(reason="go"),
                             assessment=assessment("verified", {"gpu-operator": "blocked"}))
    compare({o.policy: o.verdict for o in decision.outcomes}, expected={
        "approver-groups": "allow", "assessment": "deny", "change-window": "overridden", "crd-changes": "deny",
        "max-approval": "deny", "reason-format": "warn"})  # four-eyes has no say on approvals
    refusal = decision.refusal()
    assert refusal is not None
    compare([line.split(":")[0] for line in refusal.details], expected=["assessment", "crd-changes", "max-approval"])
