"""What a command returns: plain data that a renderer writes.

`kind` names the shape of `data` (renderers pick a layout by it); `data` holds
only JSON-compatible values (str, int, float, bool, None, lists, dicts) with
stable keys, so `-o json` and `-o yaml` are a contract for scripts.

A command that follows something over time (a watch) returns a `Stream`
instead: the core renders each `Result` as it arrives and writes each
`Progress` line to stderr, so the command still never prints.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Union


@dataclass(frozen=True)
class Result:
    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    # The objects the result is about, as `resource.group/name` references: what `-o name` prints.
    names: tuple[str, ...] = ()
    # One-line warnings for the person at the terminal: written to stderr as `warning: ...`
    # before the output, never part of it.
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Progress:
    """A line for the person watching (stderr), written as it happens; never part of the output."""

    message: str


class Stream:
    """Successive results of one command, produced as they happen (a watch).

    Iterating it may block, and may raise `AicrError` (a timeout, say) at any
    point: what was rendered before stays rendered, and the error is reported
    as any other.
    """

    def __init__(self, items: Iterable[Union[Result, Progress]]) -> None:
        self._items = items

    def __iter__(self) -> Iterator[Union[Result, Progress]]:
        return iter(self._items)
