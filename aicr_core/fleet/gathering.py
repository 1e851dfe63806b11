"""A fleet read: one function of a cluster's `Turn` run per selected cluster, each cluster's value or error.

A fleet read never reimplements a single-cluster read: it runs that read per cluster on the
cluster's own session (a command line runs the command's own single-cluster body,
`AicrCommand.take_action_on(args, session)`: aicr_core.fleet.flags; a dashboard its read model's
functions) and hands back one `Outcome` per cluster, in the members' order. Gathering them into
one document (items with `context`, `errors`) is the caller's: the command line's is in `flags`.
The writes across clusters are `plan_write`'s and `wave_runner`'s.

Imported only where a fleet runs (it imports the fan-out).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from aicr_core.errors import AicrError
from aicr_core.fleet.fan_out import Fleet, Outcome, Turn, errored, tallied

if TYPE_CHECKING:
    from aicr_core.fleet.fan_out import Tally
    from aicr_core.framework.interruption import Interruption

T = TypeVar("T")


def read(fleet: Fleet, work: Callable[[Turn], T], *, interruption: Interruption | None = None,
         progress: Callable[[Tally], None] | None = None) -> list[Outcome[T]]:
    """`work` on each chosen cluster of `fleet`, `fleet.parallel` at a time: the outcomes in the members' order.

    `progress` is told how far the read has got (`Tally`), on this thread, after each cluster; once
    `interruption` is requested no turn begins and every cluster left is INTERRUPTED.
    """
    order = {name: i for i, name in enumerate(fleet.contexts)}
    outcomes = [event for event in tallied(fleet.events(work, interruption=interruption), len(fleet.contexts),
                                           progress, errored)
                if isinstance(event, Outcome)]
    return sorted(outcomes, key=lambda outcome: order[outcome.context])


def one_line(err: AicrError, context: str = "") -> str:
    """An error's message and its detail lines (a policy's refusal says why there), as one line.

    Without a leading `context NAME: `: the fleet names the context itself (a deadline named after
    its cluster may already start its TIMEOUT message so).
    """
    message = err.message.removeprefix(f"context {context}: ") if context else err.message
    return f"{message}: {'; '.join(err.details)}" if err.details else message


def error_entry(outcome: Outcome[Any]) -> dict[str, Any]:
    """A failed cluster as a document's `errors` entry: its context, code and message."""
    assert outcome.error is not None
    return {"context": outcome.context, "code": str(outcome.error.code),
            "message": one_line(outcome.error, outcome.context)}
