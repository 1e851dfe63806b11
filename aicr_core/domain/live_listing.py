"""A cluster's listing kept live by one watch: `list --watch`'s rows, a dashboard's table of one cluster.

One LIST of the rollouts, then the watch of the collection from its resourceVersion
(session/watch.py's `follow_collection`: resumed when a stream ends, listed again after 410 Gone
or a dropped connection, backing off as client-go does, at most 30 requests in any 10 s, within the
session's deadline). What it yields, in order:

- `Listed(items, warnings)`: the whole listing, once, first (`rollout_listing`'s items, newest first);
- `RowChanged(item, kind, kept)`: a rollout changed (`kind`: ADDED, MODIFIED, DELETED). A change is
  shown when the rollout passes the filter now (`kept`), or was shown before: its leaving (its end,
  say, or its deletion) is seen once, `kept` false, then no more of it;
- `NotListed(warning)`: a changed rollout that does not parse (named as a listing names it).

`items()` is the listing as it stands after what was yielded, newest first; `object_of(name)` the
object a shown rollout was last seen as (a dashboard describes it from that, with no read). Reports
are read once at the start; a new digest's report is read when it first appears.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, Union

from aicr_core.domain import operator_api as api
from aicr_core.domain.rollout_documents import item
from aicr_core.domain.rollout_listing import (
    NOT_ENDED,
    RolloutFilter,
    crds_named,
    newest_first,
    parse_all,
    selector_params,
)

if TYPE_CHECKING:
    from aicr_core.domain.assessments import Assessments
    from aicr_core.session.kube import KubeSession
    from aicr_core.session.watch import Change, Reachability


class Listed(NamedTuple):
    """The whole listing, as read at the start: RolloutList's `items[]` and the warnings beside them."""

    items: list[dict[str, Any]]
    warnings: list[str]


class RowChanged(NamedTuple):
    """One rollout's row after a change: its item, the watch's event, whether it stays in the listing."""

    item: dict[str, Any]
    kind: str  # ADDED, MODIFIED, DELETED
    kept: bool  # False: it leaves the listing with this row (no longer passes the filter, or deleted)


class NotListed(NamedTuple):
    """A changed rollout that does not parse: `not listed: ...`."""

    warning: str


Update = Union[Listed, RowChanged, NotListed]


class LiveRows:
    """The rows of a listing as changes arrive: no I/O of its own but an assessment's read of a new digest.

    `apply` each batch of `follow_collection` (its first one LISTED) in order; `items()` is the listing now.
    The first batch is the listing even when it is empty (a cluster with no rollouts has listed too).
    """

    def __init__(self, wanted: RolloutFilter, assessments: Assessments, warning: str | None = None) -> None:
        self.wanted, self.assessments, self.warning = wanted, assessments, warning
        self.rows: dict[str, dict[str, Any]] = {}  # name -> item, the rollouts shown
        self.objects: dict[str, dict[str, Any]] = {}  # name -> the object each shown rollout was last seen as
        self.listed = False

    def apply(self, batch: list[Change]) -> Iterator[Update]:
        if not self.listed or (batch and batch[0].kind == "LISTED"):
            self.listed = True
            rollouts, warnings = parse_all(change.object for change in batch)
            rollouts = newest_first([r for r in rollouts if self.wanted.keeps(r)])
            if self.warning and any(r.assessment_digest for r in rollouts):
                warnings.append(self.warning)
            items = [item(r, self.assessments.of(r.assessment_digest)) for r in rollouts]
            self.rows = {i["name"]: i for i in items}
            by_name = {_name(change.object): change.object for change in batch}
            self.objects = {name: by_name[name] for name in self.rows if name in by_name}
            yield Listed(items, warnings)
            return
        for change in batch:
            rollouts, warnings = parse_all([change.object])
            for text in warnings:
                yield NotListed(text)
            for r in rollouts:
                kept = self.wanted.keeps(r) and change.kind != "DELETED"
                if not kept and r.name not in self.rows:
                    continue  # never shown: nothing to say
                row = item(r, self.assessments.of(r.assessment_digest))
                if kept:
                    self.rows[r.name] = row
                    self.objects[r.name] = change.object
                else:
                    del self.rows[r.name]
                    self.objects.pop(r.name, None)
                yield RowChanged(row, change.kind, kept)

    def items(self) -> list[dict[str, Any]]:
        """The rows now, newest first (ties by name), as a listing orders them. Another thread may ask while
        `apply` runs: the rows are copied in one step (under the interpreter lock) before they are sorted."""
        rows = list(self.rows.values())
        rows.sort(key=lambda i: i["name"])
        rows.sort(key=lambda i: i["created"] or "", reverse=True)  # the documents' times sort as text
        return rows


def _name(obj: Any) -> str:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


class LiveListing:
    """The listing of one cluster (`rollout_listing.read_listing`'s items), kept live by one watch.

    Iterate it to start: it reads the reports (one LIST), lists the rollouts and follows them,
    yielding `Listed` first, then `RowChanged` and `NotListed` as changes come, until the caller stops
    (closing the iterator ends the watch) or the session fails: NOT_FOUND in words without the
    operator's CRDs, UNAVAILABLE when the server stays unreachable for 30 s, TIMEOUT at the session's
    deadline (a `Deadline(math.inf)` watches until stopped). `items()`: the listing as it stands.
    One iteration a LiveListing; one per cluster.
    """

    def __init__(self, session: KubeSession, namespace: str = api.DEFAULT_OPERATOR_NAMESPACE,
                 wanted: RolloutFilter = NOT_ENDED, selector: str | None = None,
                 reachability: Reachability | None = None) -> None:
        self.session, self.namespace, self.wanted, self.selector = session, namespace, wanted, selector
        self.reachability = reachability  # told each failed reconnect, and the recovery (watch.follow_collection)
        self.rows: LiveRows | None = None

    def __iter__(self) -> Iterator[Update]:
        from aicr_core.domain.assessments import Assessments, read_reports
        from aicr_core.session.watch import follow_collection

        reports, warning = read_reports(self.session, self.namespace)
        self.rows = LiveRows(self.wanted, Assessments(reports, self.namespace, self.session), warning)
        with crds_named():
            for batch in follow_collection(self.session, api.rollouts_path(), selector_params(self.selector),
                                           "rollouts", self.reachability):
                yield from self.rows.apply(batch)

    def items(self) -> list[dict[str, Any]]:
        """The listing as it stands (`LiveRows.items`); none before the iteration has started."""
        rows = self.rows
        return rows.items() if rows is not None else []

    def object_of(self, name: str) -> dict[str, Any] | None:
        """The object rollout `name` was last seen as, while it is shown; None otherwise."""
        rows = self.rows
        return rows.objects.get(name) if rows is not None else None
