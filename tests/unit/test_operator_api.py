"""The mapping module: raw objects to typed values, domain writes to patches."""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from testfixtures import ShouldRaise, compare

from aicr_core.domain import operator_api as api
from aicr_core.domain.rollouts import parse_rollout
from aicr_core.errors import AicrError

from support.samples import FROM, REPORT, TO, rollout

UTC = dt.timezone.utc


def test_parse_rollout() -> None:
    r = parse_rollout(rollout())
    compare((r.name, r.resource_version, r.from_digest, r.to_digest, r.deadline, r.phase, r.ended),
            expected=("rollout-3f9a1c0d2b7e4a51-1", "42", FROM, TO, dt.datetime(2026, 11, 30, 6, tzinfo=UTC),
                      "AwaitingApproval", False))
    compare(r.steps, expected=(api.Step("gpu-operator", "Upgrade", "manual", True, "InFlight"),
                               api.Step("nvsentinel", "Install", "", False, "Pending")))
    compare(r.records[0].before_apply, expected=(api.RecordedStep("checkpoint", "checkpoint training jobs"),))


def test_wrong_types_are_invalid_objects_not_tracebacks() -> None:
    with ShouldRaise(AicrError("INVALID_OBJECT", "runtimerollout rollout-3f9a1c0d2b7e4a51-1: "
                                                 "approvalRequired has an unexpected type")):
        parse_rollout(rollout(approvalRequired="yes"))
    with ShouldRaise(AicrError):
        parse_rollout(rollout(deadline="tomorrow"))


def test_patches_carry_the_resource_version() -> None:
    r = parse_rollout(rollout(acknowledgements=[{"release": "a", "user": "bob", "time": "2026-11-29T21:00:00.5Z"}]))
    when = dt.datetime(2026, 11, 29, 22, tzinfo=UTC)
    compare(api.approval_patch(r, api.Approval("alice", when, "why")), expected={
        "metadata": {"resourceVersion": "42"},
        "spec": {"approval": {"user": "alice", "expires": "2026-11-29T22:00:00Z", "reason": "why"}}})
    compare(api.acknowledgement_patch(r, api.Acknowledgement("b", "alice", when))["spec"], expected={
        "acknowledgements": [{"release": "a", "user": "bob", "time": "2026-11-29T21:00:00.5Z"},  # byte for byte
                             {"release": "b", "user": "alice", "time": "2026-11-29T22:00:00Z"}]})


def test_plan_names() -> None:
    digest = "sha256:" + "ab" * 32
    compare(api.plan_names(digest), expected=("aicr-plan-abababababababab", digest))
    compare(api.plan_names("aicr-plan-0123456789abcdef"), expected=("aicr-plan-0123456789abcdef", None))
    for bad in ("aicr-plan-XYZ", "aicr-plan-0123456789abcdef\n", digest + "\n"):
        with ShouldRaise(AicrError):
            api.plan_names(bad)


def test_parse_plan_and_report() -> None:
    plan = api.parse_plan({"metadata": {"name": "aicr-plan-x", "annotations": {
        "operator.aicr.run/digest": "sha256:" + "a" * 64, "operator.aicr.run/source": "recipe"}},
        "data": {"recipe.json": "{}", "recipeDigest": "sha256:1", "renderFlags": '["--a", "b"]'}})
    compare((plan.render_flags, plan.recipe, plan.from_applications), expected=(("--a", "b"), "{}", False))
    with ShouldRaise(AicrError):
        api.parse_plan({"metadata": {"name": "p"}, "data": {"renderFlags": '{"not": "a list"}'}})
    report = api.parse_report(REPORT)
    compare((report.components[0].notes, report.summary), expected=("1 minor; 1 step", "1 manual"))
    for bad in ("{not json", "[" * 100_000):  # the second nests deeper than json.loads can recurse
        with ShouldRaise(AicrError):
            api.parse_report(bad)
        with ShouldRaise(AicrError):
            api.report_verdicts(bad)


def test_a_release_that_appears_twice_gets_the_state_of_its_own_step() -> None:
    steps = [{"release": "gpu-operator", "operation": "Upgrade"}, {"release": "nvsentinel", "operation": "Install"},
             {"release": "gpu-operator", "operation": "Verify"}]
    same_order = [{"release": "gpu-operator", "state": "Ready"}, {"release": "nvsentinel", "state": "Ready"},
                  {"release": "gpu-operator", "state": "InFlight", "message": "verifying"}]
    r = parse_rollout(rollout(steps=steps, status={"steps": same_order}))
    compare([(s.operation, s.state, s.message) for s in r.steps],
            expected=[("Upgrade", "Ready", ""), ("Install", "Ready", ""), ("Verify", "InFlight", "verifying")])
    # another order in status: the n-th gpu-operator entry still belongs to the n-th gpu-operator step
    other_order = [same_order[1], same_order[0], same_order[2]]
    r = parse_rollout(rollout(steps=steps, status={"steps": other_order}))
    compare([s.state for s in r.steps], expected=["Ready", "Ready", "InFlight"])
    # the operator has reported only the first gpu-operator step: the second is Pending
    r = parse_rollout(rollout(steps=steps, status={"steps": same_order[:1]}))
    compare([s.state for s in r.steps], expected=["Ready", "Pending", "Pending"])


@pytest.mark.parametrize("report", [
    REPORT,
    json.dumps({"components": [{"component": "a", "change": 1, "verdict": "safe"}]}),
    json.dumps({"components": [{"component": "a", "change": "version", "verdict": "safe", "steps": "x"}]}),
    json.dumps({"components": [{"component": "a", "verdict": 3}]}),
    json.dumps({"components": {"a": 1}}),
    json.dumps({"components": ["not an object", {"component": "b", "verdict": "blocked"}]}),
    "not json",
])
def test_a_listing_and_describe_agree_on_every_report(report: str) -> None:
    """list reads verdicts only; a report is invalid for both, or has the same verdicts in both."""
    def outcome(read: Any) -> Any:
        try:
            return read(report)
        except AicrError as err:
            return err.code
    full = outcome(lambda text: [(c.component, c.verdict) for c in api.parse_report(text).components])
    compare(outcome(lambda text: [(c.component, c.verdict) for c in api.report_verdicts(text)]), expected=full)


OVERRIDE = {"user": "alice", "action": "approve", "policies": ["change-window"], "time": "2026-11-30T10:00:00Z"}


def test_an_override_is_written_to_the_annotation_in_the_same_patch() -> None:
    r = parse_rollout(rollout())
    approval = api.Approval("alice", dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc), "CHG-1")
    at = dt.datetime(2026, 11, 30, 10, tzinfo=dt.timezone.utc)
    override = api.Override("alice", "approve", ("change-window",), at)
    patch = api.with_override(r, api.approval_patch(r, approval), override)
    compare(sorted(patch["spec"]), expected=["approval"])  # nothing in the operator's spec but its own field
    compare(patch["metadata"]["resourceVersion"], expected=r.resource_version)
    compare(json.loads(patch["metadata"]["annotations"][api.ANNOTATION_OVERRIDES]), expected=[OVERRIDE])
    again = parse_rollout({**rollout(), "metadata": {**rollout()["metadata"], **patch["metadata"]}})
    second = override._replace(action="revoke")
    appended = json.loads(api.with_override(again, api.revocation_patch(
        again, api.Revocation("alice", second.time, "stop")), second)["metadata"]["annotations"][
        api.ANNOTATION_OVERRIDES])
    compare(appended, expected=[OVERRIDE, {**OVERRIDE, "action": "revoke"}])


def test_overrides_of_0_1_0_in_spec_are_still_shown_before_the_annotations() -> None:
    obj = rollout(overrides=[{**OVERRIDE, "user": "bob"}])
    obj["metadata"]["annotations"] = {api.ANNOTATION_OVERRIDES: json.dumps([OVERRIDE])}
    r = parse_rollout(obj)
    compare([(o.user, o.action, o.policies) for o in r.overrides],
            expected=[("bob", "approve", ("change-window",)), ("alice", "approve", ("change-window",))])
    compare(r.stored_overrides, expected=(OVERRIDE,))  # what a new write appends to: the annotation's alone


@pytest.mark.parametrize("text", ["not json", "{}", "[1]", json.dumps([{"user": "alice"}])])
def test_a_damaged_override_record_does_not_make_the_rollout_unreadable(text: str) -> None:
    obj = rollout()
    obj["metadata"]["annotations"] = {api.ANNOTATION_OVERRIDES: text}
    compare(parse_rollout(obj).overrides, expected=())


def test_a_record_naming_an_action_the_table_lacks_is_a_damaged_one() -> None:
    """The domain hands operator_api the Action table's names: a record naming another is left out, as
    a damaged one is; the names the table holds are kept (operator_api itself names no action)."""
    from aicr_core.domain import rollouts

    for action, kept in (("delete", ()), ("revoke", (("alice", "revoke"),))):
        obj = rollout()
        obj["metadata"]["annotations"] = {api.ANNOTATION_OVERRIDES: json.dumps([{**OVERRIDE, "action": action}])}
        compare([(o.user, o.action) for o in rollouts.parse_rollout(obj).overrides], expected=list(kept))


def test_one_short_form_of_a_digest_names_plans_reports_and_rollouts() -> None:
    digest = "sha256:3f9a1c0d2b7e4a51" + "0" * 48
    compare((api.short_digest(digest), api.plan_configmap_name(digest), api.assessment_configmap_name(digest)),
            expected=("3f9a1c0d2b7e4a51", "aicr-plan-3f9a1c0d2b7e4a51", "aicr-assessment-3f9a1c0d2b7e4a51"))
    compare(api.short_digest(None), expected="none")
