"""A rollout's recent Events: those the admission webhook records (in `default`), as describe shows them.

Kubernetes records the Events of a cluster-scoped object in `default`. Events are secondary: a user
who may not list them there (the operator's roles grant none; manifests/admission/ has a Role for
approvers), or any failure to read them, means none shown, and no warning. describe reads them on a
thread beside the rollout's report (`start_reading`), so that it takes no longer for them.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aicr_core.errors import AicrError

if TYPE_CHECKING:
    from aicr_core.session.kube import KubeSession

EVENTS_PATH = "/apis/events.k8s.io/v1/namespaces/default/events"
RECENT = 20  # at most this many, the latest


def read_events(session: KubeSession, rollout: str) -> list[dict[str, Any]] | None:
    """The Events of rollout `rollout` (one LIST, `regarding.name`), as `recent` gives them; None when they
    cannot be read (no permission, any API failure), never an error. Bounded by the session's deadline."""
    try:
        items, _version = session.list(EVENTS_PATH, {"fieldSelector": f"regarding.name={rollout}"})
    except AicrError:
        return None
    return recent(items)


def start_reading(session: KubeSession, rollout: str) -> Callable[[], list[dict[str, Any]] | None]:
    """`read_events` on a daemon thread, started now; the function returned waits for it: its answer.

    The thread reads on the session with a deadline of its own (`with_deadline`, the same time left):
    a Deadline arms its alarm in the main thread only, and counts who holds it, so sharing one would
    disarm the caller's. The wait for the answer is bounded by the caller's deadline: never longer
    (None if the read has not finished by then).
    """
    from aicr_core.session.deadline import Deadline

    found: list[list[dict[str, Any]] | None] = [None]
    beside = session.with_deadline(Deadline(session.deadline.remaining()))

    def read() -> None:
        found[0] = read_events(beside, rollout)

    thread = threading.Thread(target=read, name="events", daemon=True)
    thread.start()

    def result() -> list[dict[str, Any]] | None:
        left = session.deadline.remaining() if session.deadline.bounded else None
        thread.join(left)
        return found[0]

    return result


def recent(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """describe's `events`: `{type, reason, action, from, note, count, first, last}`, by last seen, latest RECENT."""
    events = []
    for item in items:
        series: dict[str, Any] = item["series"] if isinstance(item.get("series"), dict) else {}
        metadata: dict[str, Any] = item["metadata"] if isinstance(item.get("metadata"), dict) else {}
        first = item.get("eventTime") or item.get("deprecatedFirstTimestamp") or metadata.get("creationTimestamp")
        last = series.get("lastObservedTime") or item.get("deprecatedLastTimestamp") or first
        events.append({"type": item.get("type"), "reason": item.get("reason"), "action": item.get("action"),
                       "from": item.get("reportingController") or None, "note": item.get("note"),
                       "count": series.get("count") or item.get("deprecatedCount") or 1,
                       "first": _seconds(first), "last": _seconds(last)})
    events.sort(key=lambda e: str(e["last"] or ""))
    return events[-RECENT:]


def _seconds(moment: Any) -> str | None:
    """An Event's MicroTime (or Time) at second precision, as every other time in the documents."""
    if not isinstance(moment, str) or len(moment) < 19:
        return None
    return moment[:19] + "Z"
