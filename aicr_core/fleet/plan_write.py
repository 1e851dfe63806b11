"""approve|revoke|acknowledge --plan DIGEST across clusters: pick the plan's rollout, list, confirm, write.

Each cluster's write is the single-cluster write, unchanged (the domain's `rollout_write.write`
on that cluster's session), with one request built once for the fleet (`write_flags.write_request`:
the bounds checked and --policy-file read once) of which each cluster replaces only its rollout
and its context (`for_cluster`): its own refusals, its own policy file and overrides, its own
SelfSubjectReview. What is added is only around it: the rollout picked by the plan's digest, the
listing and the confirmation, and one result word a cluster (`write_items`). The waves
(`approve --plan --waves`) are `wave_runner`'s, on the same pieces.

Called with values: a `Fleet` (the selection), the request, the plan's digest, an `Interruption`
handed in (requested: no new write is sent, a write already sent finishes or ends by its deadline,
each cluster not written is `interrupted`), a callback that confirms (`Confirmation`) and one that
reports progress (`Tally`). It returns its items (`FleetWritten`); the command line's side (the
terminal's prompt, the result, the exit) is aicr_core.fleet.flags'.

Imported when a fleet write runs, not by `help`.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aicr_core.errors import AicrError, Code
from aicr_core.fleet.fan_out import Fleet, Outcome, Turn, errored, tallied
from aicr_core.fleet.write_items import (
    FAILED,
    INTERRUPTED,
    REFUSED,
    SKIPPED,
    Confirmation,
    FleetWritten,
    item,
    listing_lines,
    no_open_rollout,
    outcome_item,
    question,
    refusal_item,
    shared_clusters,
    with_server,
    written_message,
)
from aicr_core.framework.interruption import Interruption

if TYPE_CHECKING:
    from aicr_core.domain import operator_api as api
    from aicr_core.domain.rollout_write import WriteRequest
    from aicr_core.fleet.fan_out import Tally
    from aicr_core.session.kube import KubeSession


# -- the plan's rollout in each cluster ---------------------------------------------------------------

def plan_rollouts(cluster: KubeSession, digest: str) -> list[api.Rollout]:
    """Every rollout to the plan (spec.to.digest compared in full), newest first: one LIST."""
    from aicr_core.domain.rollout_listing import list_rollouts

    # A malformed rollout is no rollout to this plan (list names it).
    found = [r for r in list_rollouts(cluster).rollouts if r.to_digest == digest]
    found.sort(key=lambda r: (attempt(r.name), r.created.timestamp() if r.created else 0.0), reverse=True)
    return found


def attempt(name: str) -> int:
    """`rollout-<hex>-<attempt>`: the attempt number (0 when the name has none)."""
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def open_rollout(rollouts: list[api.Rollout], digest: str) -> api.Rollout | None:
    """The one rollout to the plan that has not ended; two: INVALID_OBJECT naming both."""
    still_open = [r for r in rollouts if not r.ended]
    if len(still_open) > 1:
        raise AicrError(Code.INVALID_OBJECT, f"{len(still_open)} rollouts to plan {digest} have not ended: "
                        + ", ".join(r.name for r in still_open) + "; approve one by name with --context")
    return still_open[0] if still_open else None


def plan_rollout(turn: Turn, digest: str) -> api.Rollout:
    """The plan's open rollout in this cluster; none: NOT_FOUND (`policy check --plan`)."""
    rollout = open_rollout(plan_rollouts(turn.session, digest), digest)
    if rollout is None:
        raise AicrError(Code.NOT_FOUND, no_open_rollout(digest))
    return rollout


@dataclass
class Pick:
    """A cluster's rollouts to the plan, newest first, and the open one (if any)."""

    rollouts: list[api.Rollout]
    open: api.Rollout | None


def pick(turn: Turn, digest: str) -> Pick:
    rollouts = plan_rollouts(turn.session, digest)
    return Pick(rollouts, open_rollout(rollouts, digest))


def would_refuse(request: WriteRequest, rollout: api.Rollout) -> AicrError | None:
    """The action's own refusal of this rollout, as the command would say it (before its policies), or None."""
    from aicr_core import clock

    try:  # the Action's own refusals, as the command runs them (the value it would propose is not needed)
        request.action.propose(rollout, "", clock.now(), "", request.expires)
    except AicrError as err:
        return err
    return None


# -- one cluster's write ----------------------------------------------------------------------------------

def for_cluster(request: WriteRequest, context: str, rollout: str) -> WriteRequest:
    """The fleet's one request, for one cluster: only its rollout, and the flags the policies see (its context,
    its rollout), replaced; nothing is read again."""
    return dataclasses.replace(request, rollout=rollout, flags={**request.flags, "context": context,
                                                                "rollout": rollout})


def write_one(turn: Turn, request: WriteRequest, rollout: str, reach: str | None = None
              ) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The single-cluster write of `request` on this cluster's rollout, with its session: its result word, and
    its warnings. `reach`: how a single-cluster command reaches this member, for the messages (`Fleet.reach`)."""
    from aicr_core.domain.rollout_write import write

    try:
        written = write(turn.session, for_cluster(request, turn.context, rollout))
    except AicrError as err:
        if err.code is Code.USAGE:  # the command's usage error (the fleet re-raises it), not this rollout's refusal
            raise
        return refusal_item(turn.context, rollout, err, reach=reach), ()
    warnings = tuple(f"context {turn.context}: {w}" for w in written.warnings)
    return item(turn.context, request.action.past, rollout, None, written_message(request.action, written.data)), \
        warnings


def written_badly(outcome: Outcome[tuple[dict[str, Any], tuple[str, ...]]]) -> bool:
    """A write's failure, for the progress: an error, or a cluster that refused or failed."""
    return outcome.value is None or outcome.value[0]["result"] in (REFUSED, FAILED)


# -- across the fleet ---------------------------------------------------------------------------------------

def fleet_write(fleet: Fleet, request: WriteRequest, plan: str, *, confirm: Callable[[Confirmation], bool],
                ask: bool = True, interruption: Interruption | None = None,
                progress: Callable[[Tally], None] | None = None) -> FleetWritten:
    """`request.action` on the open rollout to `plan` in each cluster of `fleet`: one item a cluster.

    `confirm` is shown what will be written (`Confirmation`) before anything is, and asked when `ask`
    and the request is no dry run: False writes nothing ([USAGE] "not confirmed"). `interruption`
    (a new one when None) stops it as a signal does; `progress` is told how far each phase (the reads,
    then the writes) has got. A signal on the way is recorded, not raised: the items come back all the
    same, each cluster not written `interrupted`.

    In steps: pick the plan's rollout in each cluster, list, confirm, write; once the interruption is
    requested, nothing more is written.
    """
    from aicr_core.errors import UsageError

    stop = interruption or Interruption()
    action = request.action
    picks = sorted_outcomes(fleet, tallied(fleet.events(lambda turn: pick(turn, plan), interruption=stop),
                                           len(fleet.contexts), progress, errored))
    items: dict[str, dict[str, Any]] = {}
    to_write: list[tuple[str, api.Rollout]] = []
    for outcome in picks:
        if outcome.value is None:
            items[outcome.context] = outcome_item(outcome, None, fleet.reach(outcome.context))
            continue
        rollout = outcome.value.open
        if rollout is None:
            items[outcome.context] = item(outcome.context, SKIPPED, message=no_open_rollout(plan))
            continue
        refusal = would_refuse(request, rollout)
        if refusal is not None:
            items[outcome.context] = refusal_item(outcome.context, rollout.name, refusal,
                                                  reach=fleet.reach(outcome.context))
        else:
            to_write.append((outcome.context, rollout))
    if to_write and not stop.requested:
        servers = {context: fleet.members.server(context) for context, _ in to_write}
        asking = ask and request.dry_run == "none"
        shown = Confirmation(listing_lines(action, plan, to_write, servers),
                             shared_clusters(servers, {context: r.runtime_uid for context, r in to_write}),
                             question(action, len(to_write), len(to_write)) if asking else None)
        confirmed = confirm(shown)  # a signal while it asks: False, and `stop` is requested
        if asking and not confirmed and not stop.requested:
            raise UsageError("not confirmed; nothing was written")
    if stop.requested:  # no write is sent after a signal
        for context, rollout in to_write:
            items[context] = item(context, INTERRUPTED, rollout.name, None,
                                  f"not written: interrupted ({stop.name}) before its turn")
        to_write = []
    names = dict(to_write)
    warnings: list[str] = []
    writes = fleet.events(lambda turn: write_one(turn, request, names[turn.context].name, fleet.reach(turn.context)),
                          [context for context, _ in to_write], interruption=stop)
    for done in sorted_outcomes(fleet, tallied(writes, len(to_write), progress if to_write else None, written_badly)):
        if done.value is None:
            items[done.context] = outcome_item(done, names[done.context].name, fleet.reach(done.context))
            continue
        items[done.context], cluster_warnings = done.value
        warnings += cluster_warnings
    ordered = [with_server(items[context], fleet) for context in fleet.contexts if context in items]
    return FleetWritten(ordered, warnings, interruption=stop)


def sorted_outcomes(fleet: Fleet, events: Any) -> list[Outcome[Any]]:
    """The outcomes among `events`, in the members' order."""
    order = {name: i for i, name in enumerate(fleet.contexts)}
    return sorted((e for e in events if isinstance(e, Outcome)), key=lambda o: order[o.context])

