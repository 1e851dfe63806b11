"""From an AdmissionReview to the very hook calls the CLI makes, and back to a verdict (pure logic, no server).

The end-to-end tests (test_admission_e2e.py) run the same through the real
API server; these pin down each rule with in-memory policies.
"""
from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from testfixtures import compare

from aicr_admission import review
from aicr_admission.policy_source import PolicySource
from aicr_core.domain import operator_api as api
from aicr_core.domain.hookspecs import Identity, Violation, hookimpl
from aicr_core.domain.policy_engine import PolicyEngine, policy_set
from aicr_core.domain.rollouts import parse_rollout
from aicr_core.errors import AicrError, Code

from support.samples import rollout as sample

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)
HEAD = "apiVersion: aicr.run/v1alpha1\nkind: ApprovalPolicy\n"
USER_INFO = {"username": "alice", "uid": "42", "groups": ["aicr:approvers", "system:authenticated"],
             "extra": {"authentication.kubernetes.io/credential-id": ["JTI=do-not-log-me"]}}


def at(**delta: float) -> str:
    return (NOW + timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


APPROVAL = {"user": "alice", "expires": at(hours=2), "reason": "CHG-7 upgrade"}


def request(old: dict[str, Any], new: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"uid": "uid-1", "name": old["metadata"]["name"], "operation": "UPDATE", "userInfo": USER_INFO,
            "oldObject": old, "object": new, "dryRun": False, **extra}


def adding(overrides: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    """A request whose object adds `spec` (and `overrides` to the annotation) to the sample rollout."""
    old = sample()
    new = copy.deepcopy(old)
    new["spec"].update(spec)
    if overrides is not None:
        annotate(new, overrides)
    return request(old, new)


def annotate(obj: dict[str, Any], overrides: list[dict[str, Any]] | str) -> dict[str, Any]:
    text = overrides if isinstance(overrides, str) else json.dumps(overrides)
    obj["metadata"].setdefault("annotations", {})[api.ANNOTATION_OVERRIDES] = text
    return obj


class Spy:
    """Records what each hook is given; refuses when told to."""

    def __init__(self, refuse: bool = False) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.refuse = refuse

    def _record(self, hook: str, **kwargs: Any) -> Violation | None:
        self.calls.append((hook, kwargs))
        return Violation("spy", f"refused {hook}") if self.refuse else None

    @hookimpl
    def aicr_pre_approve(self, rollout, approval, user, context):  # type: ignore[no-untyped-def]
        return self._record("approve", rollout=rollout, approval=approval, user=user, context=context)

    @hookimpl
    def aicr_pre_revoke(self, rollout, revocation, user, context):  # type: ignore[no-untyped-def]
        return self._record("revoke", rollout=rollout, revocation=revocation, user=user, context=context)

    @hookimpl
    def aicr_pre_acknowledge(self, rollout, acknowledgement, user, context):  # type: ignore[no-untyped-def]
        return self._record("acknowledge", rollout=rollout, acknowledgement=acknowledgement, user=user,
                            context=context)


class Raises:
    @hookimpl
    def aicr_pre_approve(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("ticket system down")


class ReturnsJunk:
    @hookimpl
    def aicr_pre_approve(self):  # type: ignore[no-untyped-def]
        return "fine by me"


def engine(policies: dict[str, object], text: str | None = None) -> PolicyEngine:
    return PolicyEngine.build(policy_set(policies), text, "ConfigMap aicr-system/aicr-approval-policy")


def no_assessment(rollout: api.Rollout) -> api.Assessment:
    raise AssertionError("the assessment was read although no policy asked for it")


def decide(req: dict[str, Any], policies: PolicyEngine | AicrError, **kw: Any) -> review.Answer:
    return review.answer_review(req, policies, kw.pop("read_assessment", no_assessment), NOW)


def test_the_hooks_get_what_the_cli_passes() -> None:
    spy = Spy()
    answer = decide(adding(approval=APPROVAL), engine({"spy": spy}))
    compare(answer.allowed, expected=True)
    ((hook, given),) = spy.calls
    compare(hook, expected="approve")
    compare(given["rollout"], expected=parse_rollout(sample()))  # the stored object, as the CLI reads it
    compare(given["approval"], expected=api.Approval("alice", NOW + timedelta(hours=2), "CHG-7 upgrade"))
    compare(given["user"], expected=Identity("alice", ("aicr:approvers", "system:authenticated")))
    compare((given["context"].command, dict(given["context"].flags), given["context"].now),
            expected=("admission", {}, NOW))


def test_revocations_and_each_new_acknowledgement_are_decided() -> None:
    old = sample(approval=APPROVAL, acknowledgements=[{"release": "a", "user": "bob", "time": at(hours=-1)}],
                 status={"phase": "AwaitingAcknowledgement", "awaitingRelease": "b"})
    new = copy.deepcopy(old)
    new["spec"]["acknowledgements"] += [{"release": "b", "user": "alice", "time": at(seconds=-20)},
                                        {"release": "c", "user": "alice", "time": at(seconds=30)}]
    new["spec"]["revocation"] = {"user": "alice", "time": at(), "reason": "stop"}
    spy = Spy()
    answer = decide(request(old, new), engine({"spy": spy}))
    compare(answer.allowed, expected=True)
    compare(answer.actions, expected=["revoke", "acknowledge", "acknowledge"])
    compare([(h, g.get("revocation") or g.get("acknowledgement")) for h, g in spy.calls], expected=[
        ("revoke", api.Revocation("alice", NOW, "stop")),
        ("acknowledge", api.Acknowledgement("b", "alice", NOW - timedelta(seconds=20))),
        ("acknowledge", api.Acknowledgement("c", "alice", NOW + timedelta(seconds=30)))])


def test_an_update_that_adds_nothing_a_person_writes_is_allowed_without_asking() -> None:
    spy = Spy(refuse=True)
    old = sample(approval=APPROVAL)
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"x": "y"}
    answer = decide(request(old, new), engine({"spy": spy}))
    compare((answer.allowed, answer.actions, spy.calls), expected=(True, [], []))


@pytest.mark.parametrize("spec, words", [
    ({"approval": {**APPROVAL, "expires": at(seconds=-1)}},
     "the approval expires at 2026-11-30T09:59:59Z, which is not in the future"),
    ({"approval": {**APPROVAL, "expires": at()}}, "the approval expires at 2026-11-30T10:00:00Z, which is not"),
    ({"approval": APPROVAL, "revocation": {"user": "alice", "time": at(minutes=-2), "reason": "stop"}},
     "the revocation is dated 2026-11-30T09:58:00Z, more than a minute from now"),
    ({"acknowledgements": [{"release": "b", "user": "alice", "time": at(seconds=61)}]},
     "the acknowledgement of b is dated 2026-11-30T10:01:01Z, more than a minute from now"),
])
def test_what_cel_cannot_check_is_checked_with_the_servers_clock(spec: dict[str, Any], words: str) -> None:
    spy = Spy()
    old = sample(approval=APPROVAL) if "revocation" in spec else sample()
    new = copy.deepcopy(old)
    new["spec"].update(spec)
    answer = decide(request(old, new), engine({"spy": spy}))
    compare((answer.allowed, answer.code, spy.calls), expected=(False, "ADMISSION_DENIED", []))
    assert answer.message.startswith(words), answer.message
    compare(answer.response()["response"]["status"], expected={
        "code": 403, "reason": "Forbidden", "message": answer.message})


def test_a_refusal_names_the_policy_and_its_message_as_the_cli_does() -> None:
    answer = decide(adding(approval=APPROVAL), engine({"spy": Spy(refuse=True)}))
    compare((answer.allowed, answer.code, answer.violated), expected=(False, "POLICY_DENIED", ["spy"]))
    compare(answer.message, expected="[POLICY_DENIED] 1 policy violation(s); nothing was written\nspy: refused approve")


@pytest.mark.parametrize("plugin, words", [
    (Raises(), "[POLICY_ERROR] a policy failed; refusing (fail closed)\nbad: raised RuntimeError: ticket system down"),
    (ReturnsJunk(), "[POLICY_ERROR] a policy failed; refusing (fail closed)\nbad: returned str, not a Violation"),
])
def test_a_policy_that_raises_or_returns_junk_denies(plugin: object, words: str) -> None:
    answer = decide(adding(approval=APPROVAL), engine({"bad": plugin, "spy": Spy()}))
    compare((answer.allowed, answer.code, answer.message, answer.violated),
            expected=(False, "POLICY_ERROR", words, ["bad"]))


def test_a_policy_that_did_not_load_denies() -> None:
    class Misspelt:
        @hookimpl
        def aicr_pre_aprove(self):  # type: ignore[no-untyped-def]
            return None

    answer = decide(adding(approval=APPROVAL), engine({"typo": Misspelt(), "spy": Spy()}))
    compare((answer.allowed, answer.code, answer.violated), expected=(False, "POLICY_ERROR", ["typo"]))
    assert answer.message.startswith("[POLICY_ERROR] policy plugins failed to load; refusing (fail closed)\ntypo: "), \
        answer.message


def test_a_policy_file_that_does_not_validate_denies_naming_the_error() -> None:
    bad = HEAD + "policies:\n  spy:\n    mode: sometimes\n"
    answer = decide(adding(approval=APPROVAL), engine({"spy": Spy()}, bad))
    compare((answer.allowed, answer.code), expected=(False, "POLICY_ERROR"))
    assert "does not validate" in answer.message and "policies.spy.mode" in answer.message, answer.message


def test_without_an_engine_every_decided_write_is_denied_with_the_reason() -> None:
    why = AicrError(Code.POLICY_ERROR, "cannot read the policy file (forbidden); refusing (fail closed)")
    answer = decide(adding(approval=APPROVAL), why)
    compare((answer.allowed, answer.message), expected=(False, f"[POLICY_ERROR] {why.message}"))


OVERRIDABLE = HEAD + "policies:\n  spy:\n    overridable: true\n"


@pytest.mark.parametrize("override, allowed", [
    ({"user": "alice", "action": "approve", "policies": ["spy"]}, True),
    ({"user": "bob", "action": "approve", "policies": ["spy"]}, False),  # somebody else's override
    ({"user": "alice", "action": "revoke", "policies": ["spy"]}, False),  # another action's
])
def test_an_override_the_write_records_is_honoured_as_the_cli_honours_it(override: dict[str, Any],
                                                                       allowed: bool) -> None:
    answer = decide(adding(approval=APPROVAL, overrides=[{**override, "time": at()}]),
                    engine({"spy": Spy(refuse=True)}, OVERRIDABLE))
    compare(answer.allowed, expected=allowed, suffix=answer.message)
    if allowed:
        compare((answer.overridden, answer.response()["response"]["warnings"]),
                expected=(["spy"], ["spy: refused approve (overridden)"]))


def test_an_override_of_a_policy_that_is_not_overridable_is_refused() -> None:
    answer = decide(adding(approval=APPROVAL, overrides=[{"user": "alice", "action": "approve", "policies": ["spy"],
                                                          "time": at()}]), engine({"spy": Spy(refuse=True)}))
    compare(answer.allowed, expected=False)
    assert "--override spy: the policy is not overridable" in answer.message, answer.message


def test_an_override_recorded_earlier_is_not_reused() -> None:
    old = annotate(sample(), [{"user": "alice", "action": "approve", "policies": ["spy"], "time": at(hours=-1)}])
    new = copy.deepcopy(old)
    new["spec"]["approval"] = APPROVAL
    answer = decide(request(old, new), engine({"spy": Spy(refuse=True)}, OVERRIDABLE))
    compare((answer.allowed, answer.code), expected=(False, "POLICY_DENIED"))


EARLIER = {"user": "bob", "action": "approve", "policies": ["spy"], "time": at(hours=-1)}
MINE = {"user": "alice", "action": "approve", "policies": ["spy"], "time": at()}


@pytest.mark.parametrize("old_record, new_record, approve, words", [
    ([EARLIER], [{**EARLIER, "policies": ["other"]}], False, "only grows"),  # an entry rewritten
    ([EARLIER], [], False, "only grows"),  # removed
    ([EARLIER], None, False, "only grows"),  # the annotation deleted
    ([EARLIER], [MINE], True, "only grows"),  # replaced by one's own
    (None, "not json", True, "is not JSON"),
    (None, json.dumps({"user": "alice"}), True, "not a JSON list of objects"),
    (None, [{**MINE, "extra": 1}], True, "is not {user, action, policies[], time}"),
    (None, [{**MINE, "policies": []}], True, "is not {user, action, policies[], time}"),
    (None, [{**MINE, "action": "delete"}], True, "is not {user, action, policies[], time}"),  # no such action
    (None, [{**MINE, "action": ""}], True, "is not {user, action, policies[], time}"),
    (None, [MINE], False, "only in the write of the approval, revocation or acknowledgement it overrides"),
    (None, [{**MINE, "action": "revoke"}], True, "only in the write of the approval"),
    (None, [MINE, MINE], True, "only in the write of the approval"),
    (None, [{**MINE, "user": "bob"}], True, "an override must name the requesting user alice"),
    ("junk", [MINE], True, "as stored; it cannot be changed"),
])
def test_the_webhook_guards_the_override_record(old_record: Any, new_record: Any, approve: bool,
                                                words: str) -> None:
    """What the CRD rule and the admission policy checked of 0.1.0's spec.overrides, now of the annotation."""
    old = sample() if old_record is None else annotate(sample(), old_record)
    new = copy.deepcopy(old)
    if new_record is None:
        del new["metadata"]["annotations"][api.ANNOTATION_OVERRIDES]
    else:
        annotate(new, new_record)
    if approve:
        new["spec"]["approval"] = APPROVAL
    answer = decide(request(old, new), engine({"spy": Spy(refuse=True)}, OVERRIDABLE))
    compare(answer.allowed, expected=False, suffix=answer.message)
    assert words in answer.message, answer.message


def test_a_record_reformatted_but_equal_is_no_decided_write() -> None:
    old = annotate(sample(), [EARLIER])
    new = annotate(copy.deepcopy(old), json.dumps([EARLIER], indent=2))
    answer = decide(request(old, new), engine({"spy": Spy(refuse=True)}, OVERRIDABLE))
    compare((answer.allowed, answer.actions), expected=(True, []))


def test_warn_mode_allows_and_warns() -> None:
    warn = HEAD + "policies:\n  spy:\n    mode: warn\n"
    answer = decide(adding(approval=APPROVAL), engine({"spy": Spy(refuse=True)}, warn))
    compare((answer.allowed, answer.response()["response"].get("warnings")), expected=(True, ["spy: refused approve"]))


def test_the_assessment_is_read_only_when_a_policy_asks_and_a_failed_read_denies() -> None:
    class WantsReport:
        @hookimpl
        def aicr_pre_approve(self, assessment):  # type: ignore[no-untyped-def]
            seen.append(assessment)

    seen: list[Any] = []
    report = api.Assessment("verified", "sha256:" + "0" * 64)
    answer = decide(adding(approval=APPROVAL), engine({"report": WantsReport()}), read_assessment=lambda r: report)
    compare((answer.allowed, seen), expected=(True, [report]))

    def unreachable(rollout: api.Rollout) -> api.Assessment:
        raise AicrError(Code.TIMEOUT, "the API calls of this command did not finish within 2s")

    answer = decide(adding(approval=APPROVAL), engine({"report": WantsReport()}), read_assessment=unreachable)
    compare((answer.allowed, answer.code), expected=(False, "POLICY_ERROR"))
    assert "cannot read the assessment report: the API calls" in answer.message


def test_the_log_line_says_who_what_and_why_but_never_the_token_or_the_object() -> None:
    answer = decide(adding(approval=APPROVAL), engine({"spy": Spy(refuse=True)}))
    line = json.dumps(answer.log_fields())
    compare({k: answer.log_fields()[k] for k in ("user", "rollout", "actions", "verdict", "violated")}, expected={
        "user": "alice", "rollout": "rollout-3f9a1c0d2b7e4a51-1", "actions": ["approve"], "verdict": "deny",
        "violated": ["spy"]})
    for secret in ("JTI=do-not-log-me", "credential-id", "startingInventory", "uid\": \"42"):
        assert secret not in line, secret


@pytest.mark.parametrize("body", [
    None, [], {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "x"}},
    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
    {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": ""}},
])
def test_a_body_that_is_no_admission_review_is_a_bad_request(body: Any) -> None:
    with pytest.raises(review.BadReview):
        review.request_of(body)


def test_an_object_that_cannot_be_parsed_denies() -> None:
    answer = decide(adding(approval={**APPROVAL, "expires": "soon"}), engine({"spy": Spy()}))
    compare((answer.allowed, answer.code), expected=(False, "INVALID_OBJECT"))


# -- the policy file as the webhook keeps it ----------------------------------------------------------

class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_policy_source_rebuilds_on_change_and_fails_closed_when_it_cannot_read() -> None:
    clock, reads = Clock(), [(None, "CM")]

    def read() -> tuple[str | None, str]:
        outcome = reads[-1]
        if isinstance(outcome, AicrError):
            raise outcome
        return outcome

    source = PolicySource(policy_set({"spy": Spy()}), read, stale_after=10, monotonic=clock)
    assert isinstance(source.engine(), AicrError)  # never read: refuse
    source.refresh()
    first = source.engine()
    assert isinstance(first, PolicyEngine) and first.digest is None
    source.refresh()
    assert source.engine() is first  # the same text: the same engine
    reads.append((HEAD + "policies:\n  spy:\n    mode: warn\n", "CM"))
    source.refresh()
    second = source.engine()
    assert isinstance(second, PolicyEngine) and second is not first and second.setup("spy").mode == "warn"
    reads.append(AicrError(Code.UNAVAILABLE, "cannot connect to the API server: refused"))
    clock.now += 9
    source.refresh()
    assert source.engine() is second  # a passing outage: the last file stays in force ...
    clock.now += 2
    stale = source.engine()
    assert isinstance(stale, AicrError) and "could not be read for 11s (cannot connect" in stale.message  # ... 10 s
    assert source.state().startswith("denying every decided write: the policy file could not be read")
    reads.append(AicrError(Code.POLICY_ERROR, "cannot read the policy file: forbidden; refusing (fail closed)"))
    source.refresh()
    compare(source.engine(), expected=reads[-1])  # a definite answer refuses at once
    reads.append((None, "CM"))
    source.refresh()
    assert isinstance(source.engine(), PolicyEngine)


def test_the_policy_source_survives_a_failure_it_did_not_expect() -> None:
    clock, logged = Clock(), []

    def read() -> tuple[str | None, str]:
        raise RuntimeError("a bug")

    source = PolicySource(policy_set({"spy": Spy()}), read, monotonic=clock,
                          log=lambda msg, **fields: logged.append((msg, fields.get("error"))))
    source.refresh()  # in the refresh thread: raising would end it, silently
    refusal = source.engine()
    assert isinstance(refusal, AicrError) and "(RuntimeError: a bug)" in refusal.message, refusal
    compare(logged, expected=[("cannot read the policy file", "RuntimeError: a bug")])


FILE_TEXT = HEAD + "policies: {}\n"


def decided_under(location: str, digest: str | None, user: str = "alice", action: str = "approve") -> dict[str, Any]:
    return {"user": user, "action": action, "time": at(), "location": location, "digest": digest}


@pytest.mark.parametrize("entry, allowed, words", [
    (decided_under("the source", api.sha256_digest(FILE_TEXT)), True, ""),
    (decided_under("the source", api.sha256_digest(FILE_TEXT + "# edited\n")), False, "decided under the source"),
    (decided_under("ConfigMap team/aicr-approval-policy (key policy.yaml)", None), False, "the policy file in force"),
    (decided_under("the source", api.sha256_digest(FILE_TEXT), user="bob"), False, "requesting user alice"),
    (decided_under("the source", api.sha256_digest(FILE_TEXT), action="revoke"), False, "goes only with"),
])
def test_a_write_decided_under_another_policy_file_is_refused(entry: dict[str, Any], allowed: bool,
                                                             words: str) -> None:
    old = sample()
    new = copy.deepcopy(old)
    new["spec"]["approval"] = APPROVAL
    new["metadata"]["annotations"] = {api.ANNOTATION_DECISIONS: json.dumps([entry])}
    built = PolicyEngine.build(policy_set({}), FILE_TEXT, "the source")
    answer = review.answer_review(request(old, new), built, no_assessment, NOW)
    compare(answer.allowed, expected=allowed, suffix=answer.message)
    assert words in answer.message, answer.message


def test_only_the_policies_set_up_for_the_action_are_named_as_deciding_it() -> None:
    from aicr_admission.audit import note_of
    from aicr_policies import four_eyes, reason_format

    text = HEAD + "policies:\n  four-eyes: {}\n  reason-format:\n    pattern: '^CHG-'\n"
    policies = engine({"four-eyes": four_eyes, "reason-format": reason_format}, text)
    old = sample(approval={**APPROVAL, "user": "bob"}, status={"phase": "AwaitingAcknowledgement",
                                                               "awaitingRelease": "b"})
    new = copy.deepcopy(old)
    new["spec"]["acknowledgements"] = [{"release": "b", "user": "alice", "time": at(seconds=-20)}]
    answer = decide(request(old, new), policies)
    compare((answer.allowed, answer.decided), expected=(True, ["four-eyes"]))
    compare(note_of(answer), expected="alice: acknowledge allowed (policies: four-eyes)")
    revoked = copy.deepcopy(old)
    revoked["spec"]["revocation"] = {"user": "alice", "time": at(), "reason": "stop"}  # no ticket: not asked
    answer = decide(request(old, revoked), policies)
    compare((answer.allowed, answer.decided, note_of(answer)),
            expected=(True, [], "alice: revoke allowed (policies: none)"))
