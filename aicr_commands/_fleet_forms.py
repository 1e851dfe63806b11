"""The fleet form of a command: the same command run once per selected cluster, results gathered.

A fleet variant never reimplements a command: it runs the command's own single-cluster body
per cluster (`take_action_on(args, session)`), passing that cluster's session explicitly, and
turns the per-cluster results into one document (items with `context`, `errors`). The writes
(approve, revoke, acknowledge) call the domain's write with each cluster's session (`_fleet_write`).

Imported by command modules at module level: nothing heavy here.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aicr_core.errors import AicrError, Code, UsageError
from aicr_core.fleet import selection as fleet  # light: the running (fan_out) is imported where a fleet runs
from aicr_core.framework.result import Result

if TYPE_CHECKING:
    from aicr_core.domain import operator_api as api
    from aicr_core.fleet.fan_out import Outcome, Turn
    from aicr_core.framework.command import AicrCommand
    from aicr_core.session.kube import KubeSession

# What a per-cluster copy of the arguments must not carry: it is one cluster's command.
_SINGLE = {"contexts": None, "all_contexts": False, "parallel": None, "plan": None, "waves": None, "yes": False,
           "cluster_profiles": False, "profile_namespace": None, "profile_selector": None,
           "cluster_profile_providers": None}


# -- which form -----------------------------------------------------------------------------------

def read_form(args: argparse.Namespace) -> bool:
    """list, version: across clusters with --contexts/--all-contexts/--cluster-profiles; --parallel alone is [USAGE]."""
    if not fleet.selected(args):
        if getattr(args, "parallel", None) is not None:
            raise UsageError("--parallel needs --contexts, --all-contexts or --cluster-profiles")
        return False
    fleet.check_selection(args)
    return True


def plan_form(args: argparse.Namespace, command: str, target: str | None) -> bool:
    """approve|revoke|acknowledge, policy check: ROLLOUT, or --plan DIGEST across clusters (never both)."""
    if target is not None:
        fleet.refuse_fleet_flags(args, f"{command} ROLLOUT (--plan DIGEST stands in for ROLLOUT across clusters)")
        return False
    plan = getattr(args, "plan", None)
    if plan is None:
        given = fleet.given_flags(args)
        if given:
            raise UsageError(f"{given[0]} needs --plan DIGEST in place of ROLLOUT")
        raise UsageError("the following arguments are required: ROLLOUT")
    if not fleet.selected(args):
        choices = ("--contexts, --all-contexts, --cluster-profiles or --waves" if hasattr(args, "waves")
                   else "--contexts, --all-contexts or --cluster-profiles")
        raise UsageError(f"--plan needs {choices}: it picks the rollout per cluster")
    fleet.check_selection(args)
    return True


# -- one cluster's command --------------------------------------------------------------------------

class _ClusterApp:
    """What a command may use of the app, for one cluster's run: its warnings are kept for that cluster."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def cluster_args(args: argparse.Namespace, turn: Turn, **changes: Any) -> argparse.Namespace:
    """The arguments of one cluster's command: no fleet flags, its context."""
    return argparse.Namespace(**{**vars(args), **_SINGLE, "context": turn.context, **changes})


def run_single(command: AicrCommand, args: argparse.Namespace, turn: Turn, **changes: Any) -> Result:
    """The command's single-cluster body on this cluster's session; its warnings prefixed with the context."""
    app = _ClusterApp()
    one = type(command)(app, None)  # type: ignore[arg-type]  # no cmd_name: the fleet's hooks ran once already
    take_action_on = getattr(one, "take_action_on", None)
    if take_action_on is None:
        raise AicrError(Code.INTERNAL, f"{type(command).__name__} has no single-cluster body (take_action_on)")
    result = take_action_on(cluster_args(args, turn, **changes), turn.session)
    if not isinstance(result, Result):
        raise AicrError(Code.INTERNAL, f"{type(command).__name__} returned no Result across clusters")
    warnings = tuple(f"context {turn.context}: {w}" for w in (*app.warnings, *result.warnings))
    return Result(result.kind, result.data, result.exit_code, result.names, warnings)


def one_line(err: AicrError, context: str = "") -> str:
    """An error's message and its detail lines (a policy's refusal says why there), as one line.

    Without a leading `context NAME: `: the fleet names the context itself (a deadline named after
    its cluster may already start its TIMEOUT message so).
    """
    message = err.message.removeprefix(f"context {context}: ") if context else err.message
    return f"{message}: {'; '.join(err.details)}" if err.details else message


def error_entry(outcome: Outcome[Any]) -> dict[str, Any]:
    assert outcome.error is not None
    return {"context": outcome.context, "code": str(outcome.error.code),
            "message": one_line(outcome.error, outcome.context)}


def report_errors(command: AicrCommand, outcomes: list[Outcome[Any]]) -> None:
    """`error: [CODE] context NAME: message` on stderr for each cluster that failed (the app's error line)."""
    for outcome in outcomes:
        if outcome.error is not None:  # one line a cluster: detail lines joined into it
            command.app.print_error(AicrError(outcome.error.code, f"context {outcome.context}: "
                                              f"{one_line(outcome.error, outcome.context)}"))


# -- reading across clusters -------------------------------------------------------------------------

def read(command: AicrCommand, args: argparse.Namespace,
         single: Callable[[Turn], Result] | None = None) -> list[Outcome[Result]]:
    """The command run per selected cluster (`single`, else its take_action as is)."""
    from aicr_core.fleet.fan_out import Fleet

    selection = Fleet.from_args(args)
    return selection.run(single or (lambda turn: run_single(command, args, turn)))


def gathered(command: AicrCommand, outcomes: list[Outcome[Result]], kind: str, *,
             items_of: Callable[[str, Result], list[dict[str, Any]]]) -> Result:
    """One document of every cluster's items (each with `context`) and `errors`; exit 1 when any failed."""
    report_errors(command, outcomes)
    items: list[dict[str, Any]] = []
    names: list[str] = []
    warnings: list[str] = []
    failed = False
    for outcome in outcomes:
        if outcome.value is None:
            failed = True
            continue
        items += items_of(outcome.context, outcome.value)
        names += [f"{outcome.context}/{name}" for name in outcome.value.names]
        warnings += outcome.value.warnings
        failed = failed or outcome.value.exit_code != 0
    errors = [error_entry(o) for o in outcomes if o.error is not None]
    return Result(kind, {"items": items, "errors": errors}, 1 if failed else 0, tuple(names), tuple(warnings))


def each_item(context: str, result: Result) -> list[dict[str, Any]]:
    """list: the cluster's items, each with its context first."""
    return [{"context": context, **item} for item in result.data.get("items") or []]


def whole_document(context: str, result: Result) -> list[dict[str, Any]]:
    """version, policy check: the cluster's usual document (kind included), with its context."""
    return [{"kind": result.kind, "context": context, **result.data}]


# -- the plan's rollout in a cluster ------------------------------------------------------------------

def plan_rollouts(cluster: KubeSession, digest: str) -> list[api.Rollout]:
    """Every rollout to the plan (spec.to.digest compared in full), newest first: one LIST."""
    from aicr_commands._rollout_args import many_objects
    from aicr_core.domain import operator_api as api

    with many_objects():
        objects, _version = cluster.list(api.rollouts_path())
        found = []
        for obj in objects:
            try:
                rollout = api.parse_rollout(obj, records=False)
            except AicrError:
                continue  # a malformed rollout is no rollout to this plan (list names it)
            if rollout.to_digest == digest:
                found.append(rollout)
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


def no_open_rollout(digest: str) -> str:
    return f"no rollout to plan {digest} that has not ended"


def complete_plans(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> Any:
    """`--plan <TAB>`: the plan digests with a rollout waiting for a person in the current context."""
    from aicr_commands import _rollout_args as _rollouts
    from aicr_core.domain import operator_api as api
    from aicr_core.framework.completion import API_SECONDS, NO_FILES, Candidates
    from aicr_core.session.deadline import Deadline

    with _rollouts.many_objects():
        objects, _version = _rollouts.session(parsed_args, Deadline(API_SECONDS)).list(api.rollouts_path())
        waiting: dict[str, str] = {}
        for obj in objects:
            try:
                rollout = api.parse_rollout(obj, records=False)
            except AicrError:
                continue
            if _rollouts.waits_for_person(rollout) and rollout.to_digest.startswith(prefix):
                waiting.setdefault(rollout.to_digest, f"{rollout.name} ({rollout.phase})")
    return Candidates([f"{digest}\t{why}" for digest, why in sorted(waiting.items())], NO_FILES)
