"""Follow one object through the watch API: its state now, then each change as the server reports it.

One GET, then a watch (`fieldSelector=metadata.name=NAME`) from the
resourceVersion that GET read, so no change between the two is missed. When
the server ends a stream (its `timeoutSeconds`), the watch resumes from the
last version seen (bookmarks keep that version fresh). After `410 Gone` (the
version is too old to resume from) or a dropped connection, the object is
read again and the watch starts from that version. Nothing here polls: between
changes it waits on an open stream. A server that stays unreachable for
`RECONNECT_SECONDS` is reported as the error it gave, and all of it stays
within the session's deadline (`TIMEOUT`).

A watch that fails again right after such a re-read (410 once more, a stream
closed at once) backs off as client-go's reflector does: 0.8 s doubling, each
with up to as much again of jitter, at most 30 s; when it keeps failing, a
`warning:` line says so (once a minute at most). Whatever a server answers,
one follower sends at most MAX_REQUESTS requests in any WINDOW_SECONDS: a
server that answered every watch with 410 drew 1,450 requests a second.

It knows Kubernetes, not AICR: the caller gives the collection's path and the
object's name. `follow_collection` does the same for a whole collection
(`list --watch`): one LIST, then the watch of every object from its version.
"""
from __future__ import annotations

import logging
import math
import random
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from aicr_core.errors import AicrError, Code, shown_argument
from aicr_core.session import kube

WATCH_SECONDS = 300       # each stream is asked to end after this, then resumed
RECONNECT_SECONDS = 30.0  # how long a server may stay unreachable before we give up
# client-go's reflector backs off 800 ms doubling, with a jitter factor of 1 (up to as much again), capped at 30 s.
FIRST_BACKOFF, MAX_BACKOFF = 0.8, 30.0
HEALTHY_SECONDS = 10.0    # a watch that lived this long before it failed was working: re-read at once
WINDOW_SECONDS, MAX_REQUESTS = 10.0, 30  # at most 3 requests a second, over any 10 s, from one follower
WARN_EVERY_SECONDS = 60.0
LIST_PAGE = 500  # the session's page of a list
_log = logging.getLogger("aicr.watch")  # a `warning:` line on stderr (the app's handler)


class _Pace:
    """How fast one follower may ask its server: a backoff after failing watches, and a cap on requests."""

    def __init__(self, cluster: kube.KubeSession, what: str) -> None:
        self.cluster, self.what = cluster, what
        self.failures = 0  # watches in a row that failed soon after they started
        self.sent: deque[float] = deque()  # when each of the requests of the last WINDOW_SECONDS was sent
        self.warned = -math.inf

    def request(self, count: int = 1) -> None:
        """Before sending `count` requests: wait while MAX_REQUESTS went out in the last WINDOW_SECONDS."""
        while True:
            now = time.monotonic()
            while self.sent and self.sent[0] <= now - WINDOW_SECONDS:
                self.sent.popleft()
            if not self.sent or len(self.sent) + count <= MAX_REQUESTS:
                break
            self.sleep(self.sent[0] + WINDOW_SECONDS - now)
        self.sent.extend([time.monotonic()] * count)

    def record(self, count: int) -> None:
        """`count` more requests were sent (the further pages of a list)."""
        self.sent.extend([time.monotonic()] * count)

    def ended_well(self) -> None:
        self.failures = 0

    def failed(self, lived: float, why: str) -> None:
        """A watch failed after `lived` seconds: re-read at once the first time, else back off first."""
        self.failures = 1 if lived >= HEALTHY_SECONDS else self.failures + 1
        if self.failures == 1:
            return
        delay = FIRST_BACKOFF * 2 ** min(self.failures - 2, 16)
        # Jitter, so that many clients do not retry in step; the cap holds after it.
        delay = min(MAX_BACKOFF, delay + random.uniform(0, delay))  # noqa: S311
        now = time.monotonic()
        if self.failures >= 3 and now - self.warned >= WARN_EVERY_SECONDS:
            self.warned = now
            _log.warning("the watch of %s keeps failing (%d times in a row: %s); reading it again in %.1fs",
                         self.what, self.failures, shown_argument(why, 200), delay)
        self.sleep(delay)

    def sleep(self, seconds: float) -> None:
        """Within the session's deadline: TIMEOUT as soon as it passes."""
        time.sleep(max(0.0, min(seconds, self.cluster.deadline.remaining())))
        self.cluster.deadline.remaining()


def follow(cluster: kube.KubeSession, collection: str, name: str, what: str | None = None) -> Iterator[dict[str, Any]]:
    """Yield the object `collection/name` now, then every new version of it, until the caller stops.

    NOT_FOUND when it does not exist or is deleted; TIMEOUT when the cluster's
    deadline runs out; UNAVAILABLE when the server stays unreachable.
    """
    what = what or name
    reader = _Follower(cluster, collection, name, what)
    yield from reader.run()


class _Follower:
    def __init__(self, cluster: kube.KubeSession, collection: str, name: str, what: str) -> None:
        self.cluster, self.collection, self.name, self.what = cluster, collection, name, what
        self.version = ""
        self.pace = _Pace(cluster, what)

    def run(self) -> Iterator[dict[str, Any]]:
        current = self.read()
        yield current
        unreachable_since: float | None = None
        while True:
            started = time.monotonic()
            try:
                for obj in self.stream():
                    unreachable_since = None
                    yield obj
                self.pace.ended_well()
                continue  # the server ended the stream: resume from the last version seen
            except kube.Gone as gone:  # too old to resume from: read again below
                self.pace.failed(time.monotonic() - started, f"410 Gone: {gone}")
            except AicrError as err:
                if not self.dropped(err):
                    raise
                unreachable_since = unreachable_since or time.monotonic()
                if time.monotonic() - unreachable_since > RECONNECT_SECONDS:
                    raise
                self.pace.failed(time.monotonic() - started, err.message)
            try:
                fresh = self.read()
            except AicrError as err:
                if err.code != Code.UNAVAILABLE:
                    raise
                continue  # still unreachable: the next watch attempt counts towards the limit
            if _version(fresh) != _version(current):
                current = fresh
                yield current

    def dropped(self, err: AicrError) -> bool:
        """A lost connection, or a stream silent for longer than a live one ever is (while time is left)."""
        if err.code == Code.UNAVAILABLE:
            return True
        if err.code == Code.TIMEOUT:
            self.cluster.deadline.remaining()  # raises TIMEOUT when the deadline itself has passed
            return True
        return False

    def read(self) -> dict[str, Any]:
        self.pace.request()
        try:
            obj = self.cluster.get(f"{self.collection}/{self.name}")
        except AicrError as err:
            if err.code == Code.NOT_FOUND:
                raise AicrError(Code.NOT_FOUND, f"{self.what} not found") from None
            raise
        self.version = _version(obj) or self.version
        return obj

    def stream(self) -> Iterator[dict[str, Any]]:
        """One watch request: the changes after `self.version`, until the server ends the stream."""
        remaining = self.cluster.deadline.remaining()
        seconds = WATCH_SECONDS if math.isinf(remaining) else max(1, min(WATCH_SECONDS, math.ceil(remaining)))
        started, events = time.monotonic(), 0
        self.pace.request()
        for event in self.cluster.watch(self.collection, {
                "fieldSelector": f"metadata.name={self.name}", "resourceVersion": self.version,
                "allowWatchBookmarks": "true", "timeoutSeconds": str(seconds)}):
            kind, obj = event.get("type"), event.get("object")
            if not isinstance(obj, dict):
                continue
            events += 1
            if kind == "BOOKMARK":
                self.version = _version(obj) or self.version
            elif kind in ("ADDED", "MODIFIED"):
                self.version = _version(obj) or self.version
                yield obj
            elif kind == "DELETED":
                raise AicrError(Code.NOT_FOUND, f"{self.what} was deleted")
            # ERROR events never get here: the session raises them (Gone for 410, else UNAVAILABLE).
        if not events and time.monotonic() - started < 1:
            # A stream that ends at once with nothing in it is a failure, not a quiet period:
            # resuming right away would spin.
            raise AicrError(Code.UNAVAILABLE, f"the API server ended the watch of {self.what} at once")


def _version(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    version = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return version if isinstance(version, str) else ""


class Change(NamedTuple):
    """One object of a collection as it is now: listed at the start, or changed since (`kind`: the event)."""

    kind: str  # LISTED, ADDED, MODIFIED, DELETED
    object: dict[str, Any]


Reachability = Callable[[AicrError | None], None]


def follow_collection(cluster: kube.KubeSession, collection: str, params: Mapping[str, str] | None = None,
                      what: str | None = None, reachability: Reachability | None = None) -> Iterator[list[Change]]:
    """Yield every object of the collection now (one batch, from one paginated LIST), then each change.

    As `follow` does for one object: watch from the list's resourceVersion, resume from the last
    version seen when a stream ends, and after `410 Gone` or a dropped connection list again and
    yield what changed meanwhile (objects whose resourceVersion moved, and those gone, as DELETED).
    `params` (a labelSelector) apply to the list and to the watch alike. `reachability` (a long-lived
    program's, a dashboard's) is told the error of each failed reconnect (a LIST again that found the
    server unreachable), and None at the first that succeeds after one: it can say "disconnected" at
    once rather than when the follower gives up (RECONNECT_SECONDS).
    """
    reader = _CollectionFollower(cluster, collection, dict(params or {}), what or collection, reachability)
    yield from reader.run_collection()


class _CollectionFollower(_Follower):
    def __init__(self, cluster: kube.KubeSession, collection: str, params: dict[str, str], what: str,
                 reachability: Reachability | None = None) -> None:
        super().__init__(cluster, collection, "", what)
        self.params = params
        self.reachability = reachability
        self.unreachable = False
        self.seen: dict[str, tuple[str, dict[str, Any]]] = {}  # name -> (resourceVersion, object)

    def run_collection(self) -> Iterator[list[Change]]:
        yield [Change("LISTED", obj) for obj in self.relist()]
        unreachable_since: float | None = None
        while True:
            started = time.monotonic()
            try:
                for change in self.stream_changes():
                    unreachable_since = None
                    yield [change]
                self.pace.ended_well()
                continue
            except kube.Gone as gone:
                self.pace.failed(time.monotonic() - started, f"410 Gone: {gone}")
            except AicrError as err:
                if not self.dropped(err):
                    raise
                unreachable_since = unreachable_since or time.monotonic()
                if time.monotonic() - unreachable_since > RECONNECT_SECONDS:
                    raise
                self.pace.failed(time.monotonic() - started, err.message)
            before = dict(self.seen)
            try:
                current = self.relist()
            except AicrError as err:
                if err.code != Code.UNAVAILABLE:
                    raise
                self.unreachable = True
                if self.reachability is not None:
                    self.reachability(err)
                continue
            if self.unreachable:
                self.unreachable = False
                if self.reachability is not None:
                    self.reachability(None)
            changes = [Change("MODIFIED" if _name(obj) in before else "ADDED", obj) for obj in current
                       if before.get(_name(obj), ("", None))[0] != _version(obj)]
            names = {_name(obj) for obj in current}
            changes += [Change("DELETED", obj) for name, (_, obj) in before.items() if name not in names]
            if changes:
                yield changes

    def relist(self) -> list[dict[str, Any]]:
        self.pace.request()
        objects, self.version = self.cluster.list(self.collection, self.params, limit=LIST_PAGE)
        self.pace.record(max(0, math.ceil(len(objects) / LIST_PAGE) - 1))  # the pages after the first
        self.seen = {_name(obj): (_version(obj), obj) for obj in objects}
        return objects

    def stream_changes(self) -> Iterator[Change]:
        remaining = self.cluster.deadline.remaining()
        seconds = WATCH_SECONDS if math.isinf(remaining) else max(1, min(WATCH_SECONDS, math.ceil(remaining)))
        started, events = time.monotonic(), 0
        self.pace.request()
        for event in self.cluster.watch(self.collection, {
                **self.params, "resourceVersion": self.version, "allowWatchBookmarks": "true",
                "timeoutSeconds": str(seconds)}):
            kind, obj = event.get("type"), event.get("object")
            if not isinstance(obj, dict):
                continue
            events += 1
            self.version = _version(obj) or self.version
            if kind in ("ADDED", "MODIFIED"):
                self.seen[_name(obj)] = (_version(obj), obj)
                yield Change(str(kind), obj)
            elif kind == "DELETED":
                self.seen.pop(_name(obj), None)
                yield Change("DELETED", obj)
        if not events and time.monotonic() - started < 1:
            raise AicrError(Code.UNAVAILABLE, f"the API server ended the watch of {self.what} at once")


def _name(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""
