"""`kubectl aicr list`: the rollouts, and which of them wait for a person."""
from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from aicr_commands import _fleet_forms as _fleet
from aicr_commands import _rollout_args as _rollouts
from aicr_core.errors import UsageError, shown
from aicr_core.fleet import flags as fleet
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Progress, Result, Rows, Stream

if TYPE_CHECKING:  # the domain is imported when the command runs, so that `help` stays fast
    from aicr_core.domain.assessments import Assessments
    from aicr_core.domain.live_listing import Update
    from aicr_core.domain.rollout_listing import RolloutFilter
    from aicr_core.framework.jsonpath import Template
    from aicr_core.session.kube import KubeSession
    from aicr_core.session.watch import Change

# The operator's phases (operator_api.PHASES, spelled here so that `help` need not import the API module).
PHASES = ("Pending", "AwaitingApproval", "Progressing", "AwaitingAcknowledgement", "Validating", "Ended")


def phase_name(text: str) -> str:
    if text not in PHASES:
        raise argparse.ArgumentTypeError(f"unknown phase {shown(text)}: use one of {', '.join(PHASES)}")
    return text


class List(AicrCommand):
    """List rollouts that have not ended, newest first, and what each waits for.

    Columns: NAME, PHASE (with the outcome once ended), APPROVAL (worded as
    describe words it), DEADLINE (and the time left), WAITING-ON (the release
    whose acknowledgement the rollout awaits), ASSESSMENT (the worst verdict of
    AICR's report, only when its sha256 matches the digest the rollout records:
    blocked > unknown > manual > unversioned > safe; else unverified, missing,
    invalid, none, or unavailable when you may not read the reports), AGE.
    -o wide adds the transition and the number of steps; -o name prints
    runtimerollout.operator.aicr.run/<name> lines; -o jsonpath=TEMPLATE and
    -o custom-columns=SPEC work on the -o json document (custom columns on
    each items[] element). -l sends a label selector to the server (the
    operator labels ended rollouts operator.aicr.run/outcome=<outcome>);
    --sort-by orders the items as kubectl get --sort-by does. With --watch,
    the table, then one row each time a rollout changes (the watch API), as
    kubectl get -w prints them; with -o json one items[] document per row,
    the first rows included.

    Two API requests whatever the number of rollouts: one paginated LIST of
    rollouts and one LIST of assessment ConfigMaps (label
    operator.aicr.run/role=assessment) in the operator namespace. Without
    permission to list ConfigMaps you still get the list, with a warning.

    Examples:
      # What waits for me?
      kubectl aicr list --pending

      # Every rollout, ended ones too, with transitions and step counts
      kubectl aicr list --all -o wide

      # Names of those in one phase across the kubeconfig's clusters (CONTEXT/runtimerollout.../NAME)
      kubectl aicr list --contexts 'gpu-*,!gpu-lab-*' --phase AwaitingAcknowledgement -o name

    Codes:
      USAGE      a --selector or --sort-by that does not parse, a --sort-by found on no item
      NOT_FOUND  the API server does not serve RuntimeRollouts (no operator CRDs)
      FORBIDDEN  you may not list rollouts
      TIMEOUT    (without --watch, which runs until Ctrl-C)
      API
    """

    uses_flags = ("operator_namespace",)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--all", action="store_true", help="include rollouts that have ended")
        parser.add_argument("--pending", action="store_true",
                            help="only rollouts waiting for a person: AwaitingApproval with no approval yet, or "
                                 "AwaitingAcknowledgement of a release nobody has acknowledged")
        action = parser.add_argument(
            "--phase", metavar="PHASE", type=phase_name, action="append", default=[],
            help="only rollouts in this phase (repeatable; Ended lists ended ones without --all): "
                 + ", ".join(PHASES))
        action.completer = lambda prefix, **_: [p for p in PHASES if p.startswith(prefix)]  # type: ignore[attr-defined]
        parser.add_argument("-l", "--selector", metavar="SELECTOR", type=parse_selector,
                            help="only rollouts whose labels match, sent to the server as labelSelector "
                                 "(key=value, key!=value, key in (a,b), !key; e.g. operator.aicr.run/outcome=Failed "
                                 "with --all)")
        parser.add_argument("--sort-by", metavar="JSONPATH", type=parse_sort_by,
                            help="order by this path of each items[] element of -o json, as kubectl get --sort-by "
                                 "(e.g. .deadline, .assessment.verdict)")
        parser.add_argument("-w", "--watch", action="store_true",
                            help="after the list, print a row each time a rollout changes, until Ctrl-C")
        fleet.add_selection_flags(parser)

    def take_action(self, args: argparse.Namespace) -> Result | Stream:
        if _fleet.read_form(args):
            return across_clusters(self, args)
        if args.watch:
            import math

            from aicr_core.session.deadline import Deadline

            return Stream(watch(_rollouts.session(args, Deadline(math.inf)), args), rows=ROWS)
        return self.take_action_on(args, _rollouts.session(args), beside=True)

    def take_action_on(self, args: argparse.Namespace, cluster: KubeSession, *, beside: bool = False) -> Result:
        """The list of one cluster, on its session (the fleet passes each cluster's): the domain's listing
        (`rollout_listing.read_listing`; `beside`, one cluster alone: its reports read beside the rollouts)
        in --sort-by's order."""
        from aicr_core.domain.rollout_listing import read_listing

        found = read_listing(cluster, args.operator_namespace, wanted(args), args.selector, reports_beside=beside)
        return listing(found.items, args, found.warnings)


ROWS = Rows("items", "RolloutListItem")  # list --watch: rows of RolloutList's table, items[] documents


def across_clusters(command: List, args: argparse.Namespace) -> Result:
    """list in each selected cluster: one table, CONTEXT first, grouped in kubeconfig order (--sort-by: all rows)."""
    from aicr_core.domain import operator_api as api
    from aicr_core.framework.sort_by import sort_items

    if args.watch:
        raise UsageError("--watch cannot be used with --contexts or --all-contexts: it follows one cluster")
    result = fleet.read_across(command, args, "RolloutList", items_of=fleet.each_item,
                               single=lambda turn: fleet.run_single(command, args, turn, sort_by=None))
    if args.sort_by is None:
        return result
    items = sort_items(result.data["items"], args.sort_by)
    return Result(result.kind, {**result.data, "items": items}, result.exit_code,
                  tuple(f"{i['context']}/{api.rollout_reference(i['name'])}" for i in items), result.warnings)


def wanted(args: argparse.Namespace) -> RolloutFilter:
    """What --all, --phase and --pending keep."""
    from aicr_core.domain.rollout_listing import RolloutFilter

    return RolloutFilter(include_ended=args.all, phases=tuple(args.phase), pending=args.pending)


def listing(items: list[dict[str, Any]], args: argparse.Namespace, warnings: list[str]) -> Result:
    """The RolloutList result of these items, in --sort-by's order when given."""
    from aicr_core.domain import operator_api as api
    from aicr_core.framework.sort_by import sort_items

    if args.sort_by is not None:
        items = sort_items(items, args.sort_by)
    return Result("RolloutList", {"items": items}, names=tuple(api.rollout_reference(i["name"]) for i in items),
                  warnings=tuple(warnings))


def parse_selector(text: str) -> str:
    from aicr_core.session.label_selector import SelectorError, valid_selector

    try:
        return valid_selector(text)
    except SelectorError as err:
        raise argparse.ArgumentTypeError(f"invalid selector {shown(text)}: {err}") from None


def parse_sort_by(text: str) -> Template:
    from aicr_core.framework.sort_by import parse_sort_by as parse

    try:
        return parse(text)
    except UsageError as err:
        raise argparse.ArgumentTypeError(err.message) from None


def watch(cluster: KubeSession, args: argparse.Namespace) -> Iterator[Result | Progress]:
    """The list now, then one row per change of a rollout (kubectl get -w), until interrupted: the domain's
    live listing (`live_listing.LiveListing`), its rows as results."""
    from aicr_core.domain.live_listing import LiveListing

    live = LiveListing(cluster, args.operator_namespace, wanted(args), args.selector)
    yield from (shown_as(update, args) for update in live)


def watch_rows(batches: Iterator[list[Change]], args: argparse.Namespace, assessments: Assessments,
               warning: str | None) -> Iterator[Result | Progress]:
    """The rows of these batches of a collection's watch, as `watch` shows them."""
    from aicr_core.domain.live_listing import LiveRows

    rows = LiveRows(wanted(args), assessments, warning)
    for batch in batches:
        yield from (shown_as(update, args) for update in rows.apply(batch))


def shown_as(update: Update, args: argparse.Namespace) -> Result | Progress:
    """A live listing's update as list --watch prints it: the table (in --sort-by's order), a row, a warning."""
    from aicr_core.domain import operator_api as api
    from aicr_core.domain.live_listing import Listed, NotListed

    if isinstance(update, Listed):
        return listing(update.items, args, update.warnings)
    if isinstance(update, NotListed):
        return Progress(f"warning: {update.warning}")
    return Result("RolloutList", {"items": [update.item]}, names=(api.rollout_reference(update.item["name"]),))
