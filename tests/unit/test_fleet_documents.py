"""The fleet's documents and words, in-process: picking the plan's rollout, result words, the FleetWrite lines."""
from __future__ import annotations

import copy
from typing import Any

import pytest
from testfixtures import compare

from aicr_core.domain import operator_api as api
from aicr_core.domain.rollouts import parse_rollout
from aicr_core.errors import AicrError, Code
from aicr_core.fleet import plan_write as _fleet
from aicr_core.fleet import write_items as _items
from aicr_renderers.fleet_layouts import fleet_write, per_context

from support.samples import ROLLOUT, TO


def parsed(name: str, phase: str = "AwaitingApproval", outcome: str = "") -> api.Rollout:
    obj: dict[str, Any] = copy.deepcopy(ROLLOUT)
    obj["metadata"]["name"] = name
    obj["status"].update(phase=phase, **({"outcome": outcome} if outcome else {}))
    return parse_rollout(obj)


def test_two_open_rollouts_to_one_plan_fail_that_cluster_naming_both() -> None:
    rollouts = [parsed("rollout-3f9a1c0d2b7e4a51-2"), parsed("rollout-3f9a1c0d2b7e4a51-1")]
    with pytest.raises(AicrError) as raised:
        _fleet.open_rollout(rollouts, TO)
    compare(raised.value.code, expected=Code.INVALID_OBJECT)
    assert "rollout-3f9a1c0d2b7e4a51-2, rollout-3f9a1c0d2b7e4a51-1" in raised.value.message


def test_the_open_one_among_ended_attempts_and_attempts_ordered_by_number() -> None:
    ended = parsed("rollout-3f9a1c0d2b7e4a51-1", "Ended", "Failed")
    retry = parsed("rollout-3f9a1c0d2b7e4a51-2")
    compare(_fleet.open_rollout([ended, retry], TO), expected=retry)
    compare(_fleet.open_rollout([ended], TO), expected=None)
    compare(sorted(["rollout-x-2", "rollout-x-10", "rollout-x-1"], key=_fleet.attempt), expected=[
        "rollout-x-1", "rollout-x-2", "rollout-x-10"])


@pytest.mark.parametrize(("code", "word"), [
    (Code.ALREADY_APPROVED, "already-approved"), (Code.APPROVAL_NOT_REQUIRED, "skipped"),
    (Code.NOT_AWAITING_ACKNOWLEDGEMENT, "skipped"), (Code.NOT_APPROVED, "skipped"),
    (Code.POLICY_DENIED, "refused"), (Code.FORBIDDEN, "refused"), (Code.ADMISSION_DENIED, "refused"),
    (Code.DEADLINE_PASSED, "refused"), (Code.CONFLICT, "refused"), (Code.POLICY_ERROR, "refused"),
    (Code.UNAVAILABLE, "failed"), (Code.TIMEOUT, "failed"), (Code.INVALID_OBJECT, "failed"),
    (Code.KUBECONFIG, "failed"), (Code.UNAUTHORIZED, "failed"), (Code.NOT_FOUND, "failed"),
])
def test_the_single_commands_answers_as_result_words(code: Code, word: str) -> None:
    entry = _items.refusal_item("c", "r", AicrError(code, "why", ["first detail", "second"]), reach="--context c")
    compare(entry, expected={"context": "c", "rollout": "r", "result": word, "code": str(code),
                             "message": "why: first detail; second"})


def test_fleet_write_text_is_one_line_a_cluster() -> None:
    items = [_items.item("gpu-lab-1", "approved", "rollout-a-1", None, "approved by alice until T"),
             _items.item("gpu-eu-1", "refused", "rollout-a-1", "POLICY_DENIED", "1 policy violation"),
             _items.item("gpu-down", "failed", None, "UNAVAILABLE", "cannot connect\x1b[31m")]
    lines = fleet_write({"items": items, "errors": []})
    compare(len(lines), expected=3)
    compare([line.split()[:3] for line in lines], expected=[
        ["gpu-lab-1", "rollout-a-1", "approved"], ["gpu-eu-1", "rollout-a-1", "refused"],
        ["gpu-down", "-", "failed"]])
    assert lines[1].endswith("[POLICY_DENIED] 1 policy violation")
    assert "\x1b" not in "".join(lines)  # cluster text is escaped
    waves = fleet_write({"items": [{**items[0], "wave": "canary"}], "errors": []})
    compare(waves[0].split()[:4], expected=["gpu-lab-1", "canary", "rollout-a-1", "approved"])


def test_per_context_output_under_headings() -> None:
    document = {"items": [
        {"kind": "Version", "context": "a", "client": {"kubectlAicr": "1"}, "server": None},
        {"kind": "Version", "context": "b", "client": {"kubectlAicr": "1"}, "server": None}], "errors": []}
    lines = per_context(document)
    compare([line for line in lines if line.startswith("==")], expected=["== a ==", "== b =="])
    compare(lines[1], expected="Client Version: 1")
