"""The demo's operator stand-in decides what the operator would write next: its rules, as pure logic.

(tests/cluster/test_demo_fleet.py runs it against real control planes.)
"""
from __future__ import annotations

import datetime as dt
import threading
import time
from typing import Any

import envtest
import pytest
from testfixtures import compare

from aicr_core.domain import operator_api as api
from aicr_core.domain.rollouts import parse_rollout

import demo_operator

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
APPROVAL = {"user": "alice", "expires": "2026-12-01T14:00:00Z", "reason": "CHG-1"}


def rollout(phase: str = "AwaitingApproval", states: tuple[str, str] = ("Pending", "Pending"),
            awaiting: str = "", deadline: str = "2026-12-01T20:00:00Z", **spec: Any) -> api.Rollout:
    obj = {"metadata": {"name": "rollout-0123456789abcdef-1", "resourceVersion": "1"},
           "spec": {"runtime": {"name": "cluster", "uid": "u"}, "to": {"digest": envtest.random_digest()},
                    "deadline": deadline, "approvalRequired": True,
                    "startingInventory": {"releases": 1, "digest": envtest.random_digest()},
                    "steps": envtest.SAMPLE_STEPS, "records": envtest.SAMPLE_RECORDS, **spec},
           "status": {"phase": phase, "awaitingRelease": awaiting,
                      "steps": [{"release": "gpu-operator", "state": states[0]},
                                {"release": "nvsentinel", "state": states[1]}]}}
    return parse_rollout(obj)


def shape(status: dict[str, Any] | None) -> tuple[Any, ...] | None:
    if status is None:
        return None
    return (status["phase"], status.get("outcome"), status["awaitingRelease"],
            tuple(s["state"] for s in status["steps"]))


def test_a_waiting_rollout_waits_and_expires_at_its_deadline() -> None:
    compare(demo_operator.next_status(rollout(), NOW), expected=None)
    compare(shape(demo_operator.next_status(rollout(deadline="2026-12-01T11:59:59Z"), NOW)),
            expected=("Ended", "Expired", "", ("Pending", "Pending")))


def test_an_approved_rollout_progresses_step_by_step() -> None:
    compare(shape(demo_operator.next_status(rollout(approval=APPROVAL), NOW)),
            expected=("Progressing", None, "", ("InFlight", "Pending")))
    without_post_apply = [envtest.SAMPLE_RECORDS[0] | {"afterApply": []}]
    compare(shape(demo_operator.next_status(rollout("Progressing", ("InFlight", "Pending"), approval=APPROVAL,
                                                    records=without_post_apply), NOW)),
            expected=("Progressing", None, "", ("Ready", "InFlight")))
    compare(shape(demo_operator.next_status(rollout("Progressing", ("Ready", "InFlight"), approval=APPROVAL,
                                                    records=without_post_apply), NOW)),
            expected=("Validating", None, "", ("Ready", "Ready")))
    compare(shape(demo_operator.next_status(rollout("Validating", ("Ready", "Ready"), approval=APPROVAL), NOW)),
            expected=("Ended", "Succeeded", "", ("Ready", "Ready")))


def test_a_release_with_after_apply_steps_waits_for_its_acknowledgement() -> None:
    applied = rollout("Progressing", ("InFlight", "Pending"), approval=APPROVAL)
    compare(shape(demo_operator.next_status(applied, NOW)),
            expected=("AwaitingAcknowledgement", None, "gpu-operator", ("AwaitingAcknowledgement", "Pending")))
    waiting = rollout("AwaitingAcknowledgement", ("AwaitingAcknowledgement", "Pending"), awaiting="gpu-operator",
                      approval=APPROVAL)
    compare(demo_operator.next_status(waiting, NOW), expected=None)
    acknowledged = rollout("AwaitingAcknowledgement", ("AwaitingAcknowledgement", "Pending"),
                           awaiting="gpu-operator", approval=APPROVAL,
                           acknowledgements=[{"release": "gpu-operator", "user": "bob",
                                              "time": "2026-12-01T11:00:00Z"}])
    compare(shape(demo_operator.next_status(acknowledged, NOW)),
            expected=("Progressing", None, "", ("Ready", "InFlight")))


def test_a_revocation_ends_the_rollout_and_an_ended_one_is_left_alone() -> None:
    revoked = rollout("Progressing", ("InFlight", "Pending"), approval=APPROVAL,
                      revocation={"user": "bob", "time": "2026-12-01T11:30:00Z", "reason": "called off"})
    status = demo_operator.next_status(revoked, NOW)
    compare(shape(status), expected=("Ended", "Revoked", "", ("InFlight", "Pending")))
    assert status is not None and status["message"] == "revoked by bob: called off", status
    compare(demo_operator.next_status(rollout("Ended", ("Ready", "Ready"), approval=APPROVAL), NOW), expected=None)


def test_a_rollout_that_needs_no_approval_starts_at_once() -> None:
    compare(shape(demo_operator.next_status(rollout(approvalRequired=False), NOW)),
            expected=("Progressing", None, "", ("InFlight", "Pending")))


def test_a_step_already_in_flight_is_the_one_that_progresses() -> None:
    """The demo seeds its waiting rollout with its first step in flight: approved, that step goes on."""
    compare(shape(demo_operator.next_status(rollout(states=("InFlight", "Pending"), approval=APPROVAL), NOW)),
            expected=("Progressing", None, "", ("InFlight", "Pending")))


class _StuckCluster:
    """A cluster whose listing hangs until released, then fails as a stopped plane's would."""

    context = "stuck"

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()

    def rollouts(self) -> list[dict[str, Any]]:
        self.entered.set()
        self.release.wait(30)
        raise ConnectionRefusedError("the plane is gone")


def test_a_stop_waits_for_a_round_in_flight_one_second_at_most_and_prints_nothing_of_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    stand_in = demo_operator.OperatorStandIn([])
    stuck = _StuckCluster()
    stand_in.clusters = [stuck]  # type: ignore[list-item]
    stand_in.start()
    assert stuck.entered.wait(10), "the stand-in never began a round"
    began = time.monotonic()
    stand_in.stop()
    waited = time.monotonic() - began
    stuck.release.set()
    stand_in._thread.join(10)
    compare((round(waited), stand_in._thread.is_alive(), capsys.readouterr().err), expected=(
        round(demo_operator.STOP_SECONDS), False, ""), prefix=f"waited {waited:.2f}s")
