"""The audit trail of the webhook's decisions: auditAnnotations on each answer, and one Event per decided write.

The API server writes a review's `auditAnnotations` into its audit log beside
the request (keys prefixed with the webhook's name:
`policies.admission.aicr.run/verdict`). Events (`events.k8s.io/v1`, in
`default`, as Kubernetes records them for cluster-scoped objects) are what
`kubectl aicr describe` and `kubectl get events` show: who was allowed,
refused or overrode what, in the cluster's own view.

Events never delay or change an answer: `EventRecorder.record` puts them on
a bounded queue that a background thread sends; what does not fit, or what
the API server refuses, is counted (aicr_admission_events_dropped_total).
Repeats of the same event (same rollout, action, reason and note) within
SERIES_WINDOW are aggregated as Kubernetes' own event recorder does: the
first is created, the next ones update its `series` (count, last seen).
"""
from __future__ import annotations

import datetime as dt
import queue
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aicr_admission.review import Answer
from aicr_core.errors import AicrError

EVENTS_PATH = "/apis/events.k8s.io/v1/namespaces/default/events"
CONTROLLER = "aicr-admission"
SERIES_WINDOW = 6 * 60.0  # client-go's events recorder: isomorphic events within 6 minutes form a series
NOTE_BYTES = 1024  # the API server refuses a longer note

Log = Callable[..., None]


def decided_policies(answer: Answer) -> list[str]:
    """The policies that decided: those that refused a denied write, else those that passed it (only the
    policies set up for the write's actions: reason-format, say, takes no part in an acknowledgement)."""
    return sorted(answer.violated) if not answer.allowed else sorted(answer.decided)


def audit_annotations(answer: Answer) -> dict[str, str]:
    """The review's auditAnnotations (none for a write that adds nothing a policy decides)."""
    if not answer.actions:
        return {}
    from aicr_admission.metrics import labels_of

    found = {"verdict": labels_of(answer)[1], "actions": ",".join(answer.actions),
             "policies": ",".join(decided_policies(answer)),
             "overrides": ",".join(sorted(set(answer.overridden)))}
    return {key: value for key, value in found.items() if value}


@dataclass(frozen=True)
class Regarding:
    """The rollout a review is about, as an Event's `regarding` names it."""

    api_version: str
    kind: str
    name: str
    uid: str

    @classmethod
    def of(cls, request: Mapping[str, Any]) -> Regarding:
        kind, old = _mapping(request.get("kind")), _mapping(request.get("oldObject"))
        metadata = _mapping(old.get("metadata"))
        group, version = str(kind.get("group") or ""), str(kind.get("version") or "")
        return cls(f"{group}/{version}" if group else version, str(kind.get("kind") or ""),
                   str(request.get("name") or ""), str(metadata.get("uid") or ""))


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def reason_of(answer: Answer) -> tuple[str, str]:
    """(reason, type) of the Event."""
    if not answer.allowed:
        return "PolicyDenied", "Warning"
    if answer.overridden:
        return "PolicyOverridden", "Warning"
    return "PolicyAllowed", "Normal"


def note_of(answer: Answer) -> str:
    """The verdict line, with the user and the policies (and why, for a refusal), at most NOTE_BYTES."""
    actions = ", ".join(answer.actions)
    policies = ", ".join(decided_policies(answer)) or "none"
    if not answer.allowed:
        why = answer.message.splitlines()[0] if answer.message else "denied"
        text = f"{answer.user or '(no user)'}: {actions} denied by {policies}: {why}"
    elif answer.overridden:
        text = (f"{answer.user}: {actions} allowed with override of {', '.join(sorted(set(answer.overridden)))} "
                f"(policies: {policies})")
    else:
        text = f"{answer.user}: {actions} allowed (policies: {policies})"
    data = text.encode()
    return text if len(data) <= NOTE_BYTES else data[:NOTE_BYTES - 3].decode(errors="ignore") + "..."


def micro_time(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_of(answer: Answer, regarding: Regarding, instance: str,
             now: dt.datetime) -> dict[str, Any]:
    reason, kind = reason_of(answer)
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": f"{regarding.name}.{secrets.token_hex(8)}", "namespace": "default"},
        "eventTime": micro_time(now),
        "reportingController": CONTROLLER, "reportingInstance": instance[:128],
        "action": ",".join(answer.actions)[:128], "reason": reason, "type": kind,
        "regarding": {"apiVersion": regarding.api_version, "kind": regarding.kind, "name": regarding.name,
                      **({"uid": regarding.uid} if regarding.uid else {})},
        "note": note_of(answer),
    }


@dataclass
class _Seen:
    name: str  # the Event created for the first occurrence
    count: int
    last: float  # monotonic


class EventRecorder:
    """A bounded queue of Events and the thread that sends them."""

    def __init__(self, create: Callable[[dict[str, Any]], Any], patch: Callable[[str, dict[str, Any]], Any],
                 dropped: Callable[[], None], log: Log | None = None, *, size: int = 256,
                 clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.create, self.patch, self.dropped = create, patch, dropped
        self.log = log or (lambda *a, **k: None)
        self.clock, self.monotonic = clock, monotonic
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(size)
        self._seen: dict[tuple[str, str, str, str], _Seen] = {}
        self._thread: threading.Thread | None = None

    def record(self, event: dict[str, Any]) -> bool:
        """Queue `event` for sending; False (and counted as dropped) when the queue is full. Never blocks."""
        try:
            self._queue.put_nowait(event)
            return True
        except queue.Full:
            self.dropped()
            return False

    def start(self) -> EventRecorder:
        self._thread = threading.Thread(target=self._run, name="events", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Send what is queued (for at most `timeout` seconds), then end the thread."""
        if self._thread is None:
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)

    def _run(self) -> None:
        while (event := self._queue.get()) is not None:
            try:
                self.send(event)
            except Exception as err:  # noqa: BLE001 - an Event lost must not end the thread
                self.dropped()
                words = err.message if isinstance(err, AicrError) else f"{type(err).__name__}: {err}"
                self.log("event not recorded", level="warning", rollout=event["regarding"]["name"],
                         reason=event["reason"], error=words)

    def send(self, event: dict[str, Any]) -> None:
        """Create the Event, or add to the series of its first occurrence."""
        key = (event["regarding"]["name"], event["action"], event["reason"], event["note"])
        now = self.monotonic()
        self._seen = {k: v for k, v in self._seen.items() if now - v.last <= SERIES_WINDOW}
        seen = self._seen.get(key)
        if seen is None:
            created = self.create(event)
            name = created.get("metadata", {}).get("name") if isinstance(created, dict) else None
            self._seen[key] = _Seen(str(name or event["metadata"]["name"]), 1, now)
            return
        seen.count, seen.last = seen.count + 1, now
        try:
            self.patch(f"{EVENTS_PATH}/{seen.name}",
                       {"series": {"count": seen.count, "lastObservedTime": micro_time(self.clock())}})
        except AicrError:  # the first one is gone (deleted, or expired: the API server keeps Events 1 h)
            del self._seen[key]
            self.send(event)
