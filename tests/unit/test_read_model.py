"""The domain's read model, its pure parts: what a listing keeps and in which order, the damaged rollouts'
warnings, a live listing's rows as changes arrive, wait's conditions. (tests/cluster/test_read_model.py
calls the reading parts on the real control plane, as the dashboard does.)"""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from testfixtures import compare

from aicr_core.domain.assessments import Assessments
from aicr_core.domain.live_listing import Listed, LiveRows, NotListed, RowChanged
from aicr_core.domain.rollout_listing import NOT_ENDED, RolloutFilter, newest_first, parse_all
from aicr_core.domain.rollouts import parse_rollout
from aicr_core.domain.wait_conditions import condition_names, parse_condition
from aicr_core.errors import UsageError
from aicr_core.session.watch import Change

from support.samples import rollout

APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "r"}


def named(name: str, created: str = "2026-11-29T10:00:00Z", version: str = "1", **spec: Any) -> dict[str, Any]:
    doc = rollout(**spec)
    doc["metadata"] = {**doc["metadata"], "name": name, "creationTimestamp": created, "resourceVersion": version}
    return doc


def damaged(name: str) -> dict[str, Any]:
    return {**named(name), "spec": {**rollout()["spec"], "deadline": "nope"}}


def test_what_a_filter_keeps() -> None:
    waiting = parse_rollout(named("a"))
    approved = parse_rollout(named("b", approval=APPROVED))
    ended = parse_rollout(named("c", status={"phase": "Ended", "outcome": "Failed"}))
    every = [waiting, approved, ended]
    for wanted, kept in [(NOT_ENDED, "ab"), (RolloutFilter(include_ended=True), "abc"),
                         (RolloutFilter(phases=("Ended",)), "c"), (RolloutFilter(pending=True), "a"),
                         (RolloutFilter(phases=("AwaitingApproval",), pending=True), "a")]:
        compare("".join(r.name for r in every if wanted.keeps(r)), expected=kept, prefix=str(wanted))


def test_newest_first_ties_by_name_and_no_time_last() -> None:
    rollouts = [parse_rollout(named(name, created)) for name, created in [
        ("b", "2026-11-29T10:00:00Z"), ("a", "2026-11-29T10:00:00Z"), ("new", "2026-11-30T10:00:00Z")]]
    rollouts.append(parse_rollout({**named("untimed"), "metadata": {"name": "untimed"}}))
    compare([r.name for r in newest_first(rollouts)], expected=["new", "a", "b", "untimed"])


def test_damaged_rollouts_are_named_five_then_counted_never_a_reason_to_list_nothing() -> None:
    rollouts, warnings = parse_all([named("good"), *(damaged(f"bad-{i}") for i in range(7))])
    compare([r.name for r in rollouts], expected=["good"])
    compare(warnings[0], expected="not listed: runtimerollout bad-0: deadline is not a time: 'nope'")
    compare((len(warnings), warnings[-1]), expected=(6, "not listed: 2 more malformed rollouts"))


def test_a_live_listing_keeps_its_rows_as_changes_arrive() -> None:
    rows = LiveRows(NOT_ENDED, Assessments({}, "aicr-system"), "cannot list assessment reports")
    first = list(rows.apply([Change("LISTED", named("old", "2026-11-29T10:00:00Z")),
                             Change("LISTED", named("new", "2026-11-30T10:00:00Z")),
                             Change("LISTED", named("done", status={"phase": "Ended", "outcome": "Succeeded"}))]))
    compare([(type(u).__name__, [i["name"] for i in u.items], u.warnings) for u in first if isinstance(u, Listed)],
            expected=[("Listed", ["new", "old"], ["cannot list assessment reports"])])  # a kept one has a report
    compare([i["name"] for i in rows.items()], expected=["new", "old"])
    changes = [Change("MODIFIED", named("old", version="2", approval=APPROVED)),
               Change("MODIFIED", named("done", version="2", status={"phase": "Ended", "outcome": "Succeeded"})),
               Change("ADDED", damaged("broken")),
               Change("DELETED", named("new", "2026-11-30T10:00:00Z")),
               Change("DELETED", named("new", "2026-11-30T10:00:00Z"))]  # a relist may say it again
    seen = [u for change in changes for u in rows.apply([change])]
    compare([(u.item["name"], u.kind, u.kept) if isinstance(u, RowChanged) else u for u in seen], expected=[
        ("old", "MODIFIED", True),
        NotListed("not listed: runtimerollout broken: deadline is not a time: 'nope'"),
        ("new", "DELETED", False)])  # the ended one was never shown: nothing said of it
    compare([(i["name"], i["approval"]["user"]) for i in rows.items()], expected=[("old", "bob")])
    # The objects the shown rollouts were last seen as (a dashboard describes them from these, with no read).
    compare({name: obj["metadata"]["resourceVersion"] for name, obj in rows.objects.items()}, expected={"old": "2"})


def test_a_cluster_with_no_rollouts_has_listed_too() -> None:
    """The first batch of a collection's watch is its listing, empty or not: a dashboard counts the cluster read."""
    rows = LiveRows(NOT_ENDED, Assessments({}, "aicr-system"))
    compare(list(rows.apply([])), expected=[Listed([], [])])
    seen = list(rows.apply([Change("ADDED", named("r-1"))]))
    compare([(type(u).__name__, u.item["name"]) for u in seen if isinstance(u, RowChanged)],
            expected=[("RowChanged", "r-1")])


def test_a_live_listing_shows_a_rollout_leaving_once() -> None:
    rows = LiveRows(NOT_ENDED, Assessments({}, "aicr-system"))
    list(rows.apply([Change("LISTED", named("r-1"))]))
    ending = [Change("MODIFIED", named("r-1", version=v, status={"phase": "Ended", "outcome": "Failed"}))
              for v in ("2", "3")]
    compare([(u.item["phase"], u.kept) for c in ending for u in rows.apply([c]) if isinstance(u, RowChanged)],
            expected=[("Ended", False)])
    compare(rows.items(), expected=[])


@pytest.mark.parametrize("text", ["approve", "phase=Done", "phase="])
def test_a_condition_that_is_none_says_which_there_are(text: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse_condition(text)
    assert refused.value.message.startswith(f"invalid condition '{text}': use approval, acknowledgement"), refused


def test_the_conditions_completed() -> None:
    compare(condition_names()[:5], expected=["approval", "acknowledgement", "approved", "ended", "phase=Pending"])
    compare(parse_condition("approved").holds(parse_rollout(named("a", approval=APPROVED)),
                                              dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)), expected=True)
