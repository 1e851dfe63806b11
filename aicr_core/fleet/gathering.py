"""A fleet read: one command's single-cluster body run per selected cluster, the results gathered into one document.

A fleet variant never reimplements a command: it runs the command's own single-cluster body
per cluster (`AicrCommand.take_action_on(args, session)`), passing that cluster's session
explicitly, and turns the per-cluster results into one document (items with `context`,
`errors`). The writes across clusters are `plan_write`'s and `wave_runner`'s.

Imported only where a fleet runs (it imports the fan-out).
"""
from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aicr_core.errors import AicrError, Code
from aicr_core.fleet.fan_out import Fleet, Outcome, Turn
from aicr_core.fleet.selection import fleet_flags
from aicr_core.framework.result import Result

if TYPE_CHECKING:
    from aicr_core.framework.command import AicrCommand



class _ClusterApp:
    """What a command may use of the app, for one cluster's run: its warnings are kept for that cluster."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def cluster_args(args: argparse.Namespace, turn: Turn, **changes: Any) -> argparse.Namespace:
    """The arguments of one cluster's command: no fleet flags (each as when not given), its context."""
    single = {dest: off for dest, _flag, off in fleet_flags()}
    return argparse.Namespace(**{**vars(args), **single, "context": turn.context, **changes})


def run_single(command: AicrCommand, args: argparse.Namespace, turn: Turn, **changes: Any) -> Result:
    """The command's single-cluster body on this cluster's session; its warnings prefixed with the context."""
    app = _ClusterApp()
    one = type(command)(app, None)  # type: ignore[arg-type]  # no cmd_name: the fleet's hooks ran once already
    result = one.take_action_on(cluster_args(args, turn, **changes), turn.session)
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


def read(command: AicrCommand, args: argparse.Namespace,
         single: Callable[[Turn], Result] | None = None) -> list[Outcome[Result]]:
    """The command run per selected cluster (`single`, else its take_action_on as is). SIGTERM stops it as
    Ctrl-C does, `error: [INTERRUPTED]` (exit 143; aicr_core.framework.interruption.Terminated)."""
    from aicr_core.framework.interruption import terminated_as_interrupted

    with terminated_as_interrupted():
        return Fleet.from_args(args).run(single or (lambda turn: run_single(command, args, turn)))


def gathered(command: AicrCommand, outcomes: list[Outcome[Result]], kind: str, *,
             items_of: Callable[[str, Result], list[dict[str, Any]]]) -> Result:
    """One document of every cluster's items (each with `context`), `errors`, and the clusters `read` (each
    that answered, in order: with no item, "none there" is then an answer); exit 1 when any failed."""
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
    read_ones = [o.context for o in outcomes if o.value is not None]
    return Result(kind, {"items": items, "errors": errors, "read": read_ones}, 1 if failed else 0, tuple(names),
                  tuple(warnings))


def read_across(command: AicrCommand, args: argparse.Namespace, kind: str, *,
                items_of: Callable[[str, Result], list[dict[str, Any]]],
                single: Callable[[Turn], Result] | None = None) -> Result:
    """A fleet read in one call: the command run per selected cluster, gathered into one `kind` document."""
    return gathered(command, read(command, args, single), kind, items_of=items_of)


def each_item(context: str, result: Result) -> list[dict[str, Any]]:
    """list: the cluster's items, each with its context first."""
    return [{"context": context, **item} for item in result.data.get("items") or []]


def whole_document(context: str, result: Result) -> list[dict[str, Any]]:
    """version, policy check: the cluster's usual document (kind included), with its context."""
    return [{"kind": result.kind, "context": context, **result.data}]
