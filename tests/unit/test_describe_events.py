"""describe's Events section: the Events read, their document, and the text as `kubectl describe` ends."""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from testfixtures import compare

from aicr_core.domain import rollout_events
from aicr_core.errors import AicrError, Code
from aicr_core.session.deadline import Deadline
from aicr_renderers.layouts import events_lines


def item(reason: str, when: str, series: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    return {"type": "Warning", "reason": reason, "action": "approve", "reportingController": "aicr-admission",
            "note": f"alice: {reason}", "eventTime": when, **({"series": series} if series else {}), **more}


def test_events_are_ordered_by_last_seen_and_cut_to_the_latest() -> None:
    items = [item("PolicyDenied", "2026-12-01T09:00:00.123456Z",
                  {"count": 3, "lastObservedTime": "2026-12-01T09:05:00.000001Z"}),
             item("PolicyOverridden", "2026-12-01T09:02:00.000000Z")]
    compare(rollout_events.recent(items), expected=[
        {"type": "Warning", "reason": "PolicyOverridden", "action": "approve", "from": "aicr-admission",
         "note": "alice: PolicyOverridden", "count": 1, "first": "2026-12-01T09:02:00Z",
         "last": "2026-12-01T09:02:00Z"},
        {"type": "Warning", "reason": "PolicyDenied", "action": "approve", "from": "aicr-admission",
         "note": "alice: PolicyDenied", "count": 3, "first": "2026-12-01T09:00:00Z", "last": "2026-12-01T09:05:00Z"}])
    many = [item("PolicyAllowed", f"2026-12-01T09:{m:02d}:00.000000Z") for m in range(30)]
    compare([e["first"] for e in rollout_events.recent(many)][0], expected="2026-12-01T09:10:00Z")


class Refusing:
    def __init__(self) -> None:
        self.deadline = Deadline(5)

    def with_deadline(self, deadline: Deadline) -> Refusing:
        return self

    def list(self, path: str, params: dict[str, str]) -> tuple[list[dict[str, Any]], str]:
        raise AicrError(Code.FORBIDDEN, "events is forbidden")


def test_events_a_user_may_not_list_are_none_without_a_word() -> None:
    compare(rollout_events.start_reading(Refusing(), "rollout-1")(), expected=None)  # type: ignore[arg-type]


def test_the_text_ends_as_kubectl_describe_does(monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_renderers import layouts

    monkeypatch.setattr(layouts.clock, "now", lambda: dt.datetime(2026, 12, 1, 9, 10, tzinfo=dt.timezone.utc))
    compare(events_lines([]), expected=["Events:  <none>"])
    compare(events_lines(rollout_events.recent([item("PolicyDenied", "2026-12-01T09:00:00Z",
                                               {"count": 3, "lastObservedTime": "2026-12-01T09:05:00Z"})])),
            expected=["Events:",
                      "  Type     Reason        Age               From            Message",
                      "  Warning  PolicyDenied  5m (x3 over 10m)  aicr-admission  alice: PolicyDenied"])

