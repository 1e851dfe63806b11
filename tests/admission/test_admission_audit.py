"""The audit trail's pure parts: annotations, the Event of a decision, the recorder's queue and series."""
from __future__ import annotations

import datetime as dt
from typing import Any

from testfixtures import compare

from aicr_admission.audit import (
    EVENTS_PATH,
    NOTE_BYTES,
    SERIES_WINDOW,
    EventRecorder,
    Regarding,
    audit_annotations,
    event_of,
    note_of,
)
from aicr_admission.review import Answer
from aicr_core.errors import AicrError, Code

ROLLOUT = Regarding("operator.aicr.run/v1alpha1", "RuntimeRollout", "rollout-1", "uid-1")
NOW = dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.timezone.utc)
DENIED = Answer("u", False, "[POLICY_DENIED] 1 policy violation(s); nothing was written\nchange-window: it is 09:30",
                "POLICY_DENIED", "alice", "rollout-1", ["approve"], ["change-window"])


def test_annotations_carry_the_verdict_the_deciding_policies_and_overrides() -> None:
    compare(audit_annotations(DENIED), expected={"verdict": "deny", "actions": "approve",
                                                 "policies": "change-window"})
    allowed = Answer("u", True, user="bob", actions=["revoke"], overridden=["four-eyes"],
                     decided=["change-window", "max-approval"])
    compare(audit_annotations(allowed), expected={"verdict": "allow", "actions": "revoke",
                                                  "policies": "change-window,max-approval",
                                                  "overrides": "four-eyes"})
    compare(audit_annotations(Answer("u", True)), expected={})  # adds nothing a policy decides


def test_the_event_of_a_decision() -> None:
    event = event_of(DENIED, ROLLOUT, "aicr-admission-7d9f-abcde", NOW)
    assert event["metadata"].pop("name").startswith("rollout-1.")
    compare(event, expected={
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"namespace": "default"},
        "eventTime": "2026-12-01T09:30:00.000000Z", "reportingController": "aicr-admission",
        "reportingInstance": "aicr-admission-7d9f-abcde", "action": "approve", "reason": "PolicyDenied",
        "type": "Warning", "regarding": {"apiVersion": "operator.aicr.run/v1alpha1", "kind": "RuntimeRollout",
                                         "name": "rollout-1", "uid": "uid-1"},
        "note": "alice: approve denied by change-window: [POLICY_DENIED] 1 policy violation(s); nothing was written"})


def test_the_rollout_is_named_from_the_review() -> None:
    request = {"kind": {"group": "operator.aicr.run", "version": "v1alpha1", "kind": "RuntimeRollout"},
               "name": "rollout-1", "oldObject": {"metadata": {"uid": "uid-1"}}}
    compare(Regarding.of(request), expected=ROLLOUT)
    compare(Regarding.of({"name": "x", "kind": "junk"}), expected=Regarding("", "", "x", ""))


def test_a_long_note_is_cut_to_what_the_api_server_accepts() -> None:
    answer = Answer("u", True, user="é" * 2000, actions=["approve"])
    note = note_of(answer)
    assert len(note.encode()) <= NOTE_BYTES and note.endswith("..."), len(note.encode())


class Sink:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.patched: list[tuple[str, dict[str, Any]]] = []
        self.dropped = 0
        self.fail = False

    def create(self, event: dict[str, Any]) -> dict[str, Any]:
        if self.fail:
            raise AicrError(Code.UNAVAILABLE, "events are forbidden")
        self.created.append(event)
        return event

    def patch(self, path: str, body: dict[str, Any]) -> None:
        self.patched.append((path, body))

    def drop(self) -> None:
        self.dropped += 1


def test_repeats_within_the_window_become_a_series_and_later_ones_a_new_event() -> None:
    sink, clock = Sink(), [0.0]
    recorder = EventRecorder(sink.create, sink.patch, sink.drop, clock=lambda: NOW, monotonic=lambda: clock[0])
    first = event_of(DENIED, ROLLOUT, "pod", NOW)
    for _ in range(3):
        recorder.send(event_of(DENIED, ROLLOUT, "pod", NOW))
    other = Answer("u", True, user="alice", actions=["approve"])
    recorder.send(event_of(other, ROLLOUT, "pod", NOW))
    clock[0] += SERIES_WINDOW + 1
    recorder.send(first)
    compare([e["reason"] for e in sink.created], expected=["PolicyDenied", "PolicyAllowed", "PolicyDenied"])
    name = sink.created[0]["metadata"]["name"]
    compare(sink.patched, expected=[
        (f"{EVENTS_PATH}/{name}", {"series": {"count": c, "lastObservedTime": "2026-12-01T09:30:00.000000Z"}})
        for c in (2, 3)])


def test_a_full_queue_drops_and_counts_without_blocking_and_a_refused_event_is_counted() -> None:
    sink = Sink()
    recorder = EventRecorder(sink.create, sink.patch, sink.drop, size=2)
    event = event_of(DENIED, ROLLOUT, "pod", NOW)
    compare([recorder.record(event) for _ in range(3)], expected=[True, True, False])  # not started: nothing sent
    compare(sink.dropped, expected=1)
    sink.fail = True
    recorder.start()
    recorder.stop()
    compare((sink.created, sink.dropped), expected=([], 3))  # the one that did not fit, and both refused
