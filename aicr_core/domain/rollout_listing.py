"""The rollouts of one cluster as a listing shows them: `list`'s, the fleet's, completion's, a dashboard's.

One paginated LIST of the rollouts, parsed as the domain parses them (`rollouts.parse_rollout`,
without the transition records a listing never shows), a damaged rollout named in a warning and
never a reason to list nothing; what `--all`, `--phase` and `--pending` keep (`RolloutFilter`);
newest first; each item with its assessment verified from one LIST of the reports. The items are
`rollout_documents.item`'s (docs/output.md, "RolloutList"); the order a user asks for
(`--sort-by`) is the command's. The cyclic collector is paused while the thousands of objects are
made (aicr_core.gc_pause).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from aicr_core import clock
from aicr_core.domain import operator_api as api
from aicr_core.domain.rollout_documents import item, waits_for_person
from aicr_core.domain.rollouts import parse_rollout
from aicr_core.errors import AicrError, Code
from aicr_core.gc_pause import paused_gc

if TYPE_CHECKING:
    from aicr_core.session.kube import KubeSession

MAX_WARNINGS = 5  # about damaged rollouts: a handful named, the rest counted
_EPOCH = clock.parse_time("1970-01-01T00:00:00Z")


class RolloutFilter(NamedTuple):
    """Which rollouts a listing keeps (`list`'s `--all`, `--phase`, `--pending`); the default: those not ended.

    `include_ended`: ended ones too. `phases`: only those in one of these phases (naming `Ended` keeps
    ended ones without `include_ended`). `pending`: only those waiting for a person
    (`rollout_documents.waits_for_person`).
    """

    include_ended: bool = False
    phases: tuple[str, ...] = ()
    pending: bool = False

    def keeps(self, rollout: api.Rollout) -> bool:
        return ((self.include_ended or not rollout.ended or api.PHASE_ENDED in self.phases)
                and (not self.phases or rollout.phase in self.phases)
                and (not self.pending or waits_for_person(rollout)))


NOT_ENDED = RolloutFilter()  # what `list` shows without flags


class ListedRollouts(NamedTuple):
    """The rollouts that parse, in the server's order, and a warning for those that do not."""

    rollouts: list[api.Rollout]
    warnings: list[str]


class Listing(NamedTuple):
    """A cluster's listing: RolloutList's `items[]` (newest first) and the `warning:` lines to print beside it."""

    items: list[dict[str, Any]]
    warnings: list[str]


def list_rollouts(session: KubeSession, selector: str | None = None) -> ListedRollouts:
    """Every rollout of the cluster that parses (one paginated LIST), without its transition records.

    The one read of many rollouts: `list`, its fleet form, `--plan`'s rollouts in each cluster and the
    completion of ROLLOUT and `--plan` all list through it. `selector`, a label selector, is sent to the
    server. A damaged rollout is left out and named in `warnings` (`parse_all`); a server without the
    operator's CRDs is NOT_FOUND saying so.
    """
    with paused_gc():
        with crds_named():
            objects, _version = session.list(api.rollouts_path(), selector_params(selector))
        return ListedRollouts(*parse_all(objects))


def parse_all(objects: Iterable[Mapping[str, Any]]) -> tuple[list[api.Rollout], list[str]]:
    """Every rollout that parses (transition records left out); one that does not is named in a warning
    (at most MAX_WARNINGS by name, the rest counted), never a reason to list nothing."""
    rollouts, bad = [], []
    for obj in objects:
        try:
            rollouts.append(parse_rollout(obj, records=False))
        except AicrError as err:
            if err.code != Code.INVALID_OBJECT:
                raise
            bad.append(err.message)
    warnings = [f"not listed: {message}" for message in bad[:MAX_WARNINGS]]
    if len(bad) > MAX_WARNINGS:
        warnings.append(f"not listed: {len(bad) - MAX_WARNINGS} more malformed rollouts")
    return rollouts, warnings


def newest_first(rollouts: list[api.Rollout]) -> list[api.Rollout]:
    """Sorted in place, newest first (by creation), ties by name; returned."""
    rollouts.sort(key=lambda r: r.name)
    rollouts.sort(key=lambda r: r.created or _EPOCH, reverse=True)
    return rollouts


def read_listing(session: KubeSession, namespace: str = api.DEFAULT_OPERATOR_NAMESPACE,
                 wanted: RolloutFilter = NOT_ENDED, selector: str | None = None, *,
                 reports_beside: bool = False) -> Listing:
    """The listing of one cluster: two API reads whatever the number of rollouts, the rollouts' LIST and
    the LIST of the assessment reports in `namespace` (without permission to list those, every
    assessment is `unavailable`, and a warning says so when a kept rollout records a report).

    `reports_beside`: the reports are read on a thread beside the rollouts, on a second connection of
    the session's pool, under the same deadline (a round trip is most of a lone cluster's time; its
    watchdog ends that read as it ends the session's). A fleet's turn reads them after, on the kept
    connection: the clusters' round trips overlap already, and a second connection would cost each
    another TLS handshake (docs/performance.md, "Fleet").
    """
    from aicr_core.domain.assessments import Assessments, read_reports
    from aicr_core.session.deadline import in_background

    with paused_gc():
        reading = (in_background(read_reports, session.with_deadline(session.deadline), namespace)
                   if reports_beside else None)
        rollouts, warnings = list_rollouts(session, selector)  # its raw JSON, most of the memory, freed here
        rollouts = newest_first([r for r in rollouts if wanted.keeps(r)])
        if reading is not None:
            reports, warning = reading.result(session.deadline)
        else:
            reports, warning = read_reports(session, namespace)
        if warning and any(r.assessment_digest for r in rollouts):
            warnings.append(warning)
        assessments = Assessments(reports, namespace)
        return Listing([item(r, assessments.of(r.assessment_digest)) for r in rollouts], warnings)


def selector_params(selector: str | None) -> dict[str, str]:
    """The query of a label selector (none: no parameter)."""
    return {"labelSelector": selector} if selector else {}


@contextlib.contextmanager
def crds_named() -> Iterator[None]:
    """A 404 from the rollouts' collection means the operator's CRDs are missing: say so in words."""
    try:
        yield
    except AicrError as err:
        if err.code == Code.NOT_FOUND:
            raise AicrError(Code.NOT_FOUND, f"this API server does not serve {api.GROUP}/{api.VERSION} "
                            "RuntimeRollouts: the AICR operator's CRDs are not installed") from None
        raise
