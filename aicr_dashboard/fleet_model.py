"""The clusters' rollouts in memory, as their watches keep them: what every page and JSON answer is made of.

One `ClusterLine` a selected cluster (in the selection's order): who the API server says the user
is there, whether the user may approve there, connected or its last error, and its rows (every
rollout its watch sees, ended ones too: a rollout approved and then ended keeps its page). The
watches (`cluster_watch`) write into it from their threads; the pages read it from the server's
loop: each change is made under one lock, and each reader copies what it needs under it. Listeners
(the event streams) are told of each change after the lock is released.

The documents are the CLI's: `listing()` is `list -o json`'s (`list --pending -o json`'s), made of
the listing items the core makes (`aicr_core.domain.rollout_documents.item`, through the live
listing), filtered and ordered as `list` filters and orders them.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from aicr_core import clock
from aicr_core.errors import AicrError

if TYPE_CHECKING:
    from aicr_core.session.kube import KubeSession

ENDED = "Ended"  # operator_api.PHASE_ENDED, spelled here: the model imports no Kubernetes client
NOT_LISTED_CODE, NOT_LISTED = "UNAVAILABLE", "its watch has not listed the rollouts yet"

Listener = Callable[[int, str, dict[str, Any]], None]  # (event id, event name, data): `rollout` or `cluster`


@dataclass
class ClusterLine:
    """One selected cluster, as the inbox's line above the rows shows it."""

    context: str
    server: str | None = None        # a ClusterProfile member's HOST:PORT (None for a context)
    shared: bool = False             # another selected member has the same server (the fleet write flags it)
    reach: str | None = None         # the flags by which a single-cluster command reaches it (`--context C`)
    user: str | None = None          # who the API server says the user is there
    may_approve: bool | None = None  # an access review of update on runtimerollouts/approve (None: not known)
    connected: bool = False
    listed: bool = False             # its watch has listed at least once
    error: AicrError | None = None   # its last error, while it is not connected
    last_answer: datetime | None = None
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> listing item
    objects: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # name -> the object last seen
    session: KubeSession | None = None  # the watch's session: writes and reviews take it under a deadline of their own

    def data(self) -> dict[str, Any]:
        """The cluster's line as plain data (the `cluster` event's)."""
        return {"context": self.context, "server": self.server, "shared": self.shared, "user": self.user,
                "mayApprove": self.may_approve, "connected": self.connected, "listed": self.listed,
                "error": ({"code": str(self.error.code), "message": self.error.message}
                          if self.error is not None else None),
                "lastAnswer": clock.format_time(self.last_answer) if self.last_answer else None}


def newest_first(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A listing's order (`live_listing.LiveRows.items`): newest first, ties by name."""
    rows = sorted(items, key=lambda i: i["name"])
    rows.sort(key=lambda i: i["created"] or "", reverse=True)  # the documents' times sort as text
    return rows


def kept_by_list(item: dict[str, Any], pending: bool) -> bool:
    """What `list` keeps without flags (not ended), and with `--pending` (waiting for a person)."""
    return item["phase"] != ENDED and (not pending or bool(item["waitingForPerson"]))


class FleetModel:
    """Every selected cluster's line and rows; `fleet_form`: the selection is `list`'s fleet form (its
    document has `context`, `errors` and `read`), else one cluster's RolloutList."""

    def __init__(self, lines: list[ClusterLine], fleet_form: bool) -> None:
        self.fleet_form = fleet_form
        self._lines = {line.context: line for line in lines}
        self._order = [line.context for line in lines]
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self._event_id = 0

    # -- reading ---------------------------------------------------------------------------------

    @property
    def contexts(self) -> list[str]:
        return list(self._order)

    def line(self, context: str) -> ClusterLine | None:
        return self._lines.get(context)

    def cluster_data(self) -> list[dict[str, Any]]:
        with self._lock:
            return [self._lines[c].data() for c in self._order]

    def item(self, context: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            line = self._lines.get(context)
            found = line.rows.get(name) if line is not None else None
            return dict(found) if found is not None else None

    def object_of(self, context: str, name: str) -> dict[str, Any] | None:
        """The object the cluster's watch last saw rollout `name` as (None: not seen)."""
        with self._lock:
            line = self._lines.get(context)
            return line.objects.get(name) if line is not None else None

    def unlisted(self) -> dict[str, str] | None:
        """One cluster alone that is not listed now (not yet, or disconnected): the error `list` would end
        with (`code`, `message`), in place of a listing; None when it is listed (or for the fleet form,
        whose document has `errors`)."""
        with self._lock:
            line = self._lines[self._order[0]]
            if self.fleet_form or (line.listed and line.connected):
                return None
            error = line.error
            return {"code": str(error.code) if error else NOT_LISTED_CODE,
                    "message": error.message if error else NOT_LISTED}

    def listing(self, pending: bool = False) -> dict[str, Any]:
        """`kubectl aicr list -o json` (`--pending`) with the same selection, from what the watches keep."""
        with self._lock:
            if not self.fleet_form:
                line = self._lines[self._order[0]]
                return {"kind": "RolloutList",
                        "items": [i for i in newest_first(list(line.rows.values())) if kept_by_list(i, pending)]}
            items: list[dict[str, Any]] = []
            errors: list[dict[str, Any]] = []
            read: list[str] = []
            for context in self._order:
                line = self._lines[context]
                if not (line.listed and line.connected):
                    error = line.error
                    errors.append({"context": context, "code": str(error.code) if error else NOT_LISTED_CODE,
                                   "message": error.message if error else NOT_LISTED})
                    continue
                read.append(context)
                items += [{"context": context, **i} for i in newest_first(list(line.rows.values()))
                          if kept_by_list(i, pending)]
            return {"kind": "RolloutList", "items": items, "errors": errors, "read": read}

    def inbox(self) -> list[dict[str, Any]]:
        """Every cluster's rollouts waiting for a person (a disconnected cluster's kept, `stale`), soonest
        deadline first (none last), ties by the clusters' order, then name."""
        rows: list[tuple[tuple[int, str, int, str], dict[str, Any]]] = []
        with self._lock:
            for index, context in enumerate(self._order):
                line = self._lines[context]
                stale = clock.format_time(line.last_answer) if (not line.connected and line.last_answer) else None
                for item in line.rows.values():
                    if kept_by_list(item, pending=True):
                        deadline = item["deadline"]
                        key = (0 if deadline else 1, deadline or "", index, item["name"])
                        rows.append((key, {"context": context, **item, "staleSince": stale}))
        rows.sort(key=lambda pair: pair[0])
        return [row for _, row in rows]

    # -- the watches' side ---------------------------------------------------------------------------

    def listed(self, context: str, items: list[dict[str, Any]], session: KubeSession | None = None,
               objects: dict[str, dict[str, Any] | None] | None = None) -> None:
        """A cluster's whole listing (its watch listed, or listed again): its rows (and objects) replaced."""
        with self._lock:
            line = self._lines[context]
            before = set(line.rows)
            line.rows = {i["name"]: i for i in items}
            line.objects = dict(objects or {})
            line.listed = line.connected = True
            line.error, line.last_answer = None, clock.now()
            if session is not None:
                line.session = session
            events = [("cluster", line.data())]
            events += [("rollout", {"context": context, "name": n, "removed": True}) for n in before - set(line.rows)]
            events += [("rollout", {"context": context, **i}) for i in items]
        self._tell(events)

    def changed(self, context: str, item: dict[str, Any], kept: bool, obj: dict[str, Any] | None = None) -> None:
        """One rollout changed (`kept` False: deleted, it leaves the model), `obj` what it is now."""
        with self._lock:
            line = self._lines[context]
            line.last_answer = clock.now()
            if kept:
                line.rows[item["name"]] = item
                line.objects[item["name"]] = obj
                event = {"context": context, **item}
            else:
                line.rows.pop(item["name"], None)
                line.objects.pop(item["name"], None)
                event = {"context": context, "name": item["name"], "removed": True}
        self._tell([("rollout", event)])

    def failed(self, context: str, error: AicrError) -> None:
        """The cluster stopped answering (or never did): disconnected, its rows kept, its last error."""
        with self._lock:
            line = self._lines[context]
            line.connected, line.error = False, error
            data = line.data()
        self._tell([("cluster", data)])

    def reconnected(self, context: str) -> None:
        """The cluster answers again (its watch listed again: the changes meanwhile follow)."""
        with self._lock:
            line = self._lines[context]
            line.connected, line.error, line.last_answer = True, None, clock.now()
            data = line.data()
        self._tell([("cluster", data)])

    def identity(self, context: str, user: str | None, may_approve: bool | None,
                 session: KubeSession | None = None) -> None:
        """Who the user is there, and whether they may approve there."""
        with self._lock:
            line = self._lines[context]
            line.user, line.may_approve = user, may_approve
            if session is not None:
                line.session = session
            data = line.data()
        self._tell([("cluster", data)])

    # -- listeners ---------------------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> list[tuple[int, str, dict[str, Any]]]:
        """Add `listener`; returns every current row and cluster line as events (with their ids), the
        first a new stream sends: taken under the lock, so nothing is missed between the two."""
        with self._lock:
            self._listeners.append(listener)
            first: list[tuple[int, str, dict[str, Any]]] = []
            for context in self._order:
                line = self._lines[context]
                first.append((self._next_id(), "cluster", line.data()))
                first += [(self._next_id(), "rollout", {"context": context, **i})
                          for i in newest_first(list(line.rows.values()))]
            return first

    def unsubscribe(self, listener: Listener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _next_id(self) -> int:
        self._event_id += 1
        return self._event_id

    def _tell(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        with self._lock:
            listeners = list(self._listeners)
            numbered = [(self._next_id(), name, data) for name, data in events]
        for listener in listeners:
            for event_id, name, data in numbered:
                listener(event_id, name, data)
