"""What a command returns: plain data that a renderer writes.

`kind` names the shape of `data` (renderers pick a layout by it); `data` holds
only JSON-compatible values (str, int, float, bool, None, lists, dicts) with
stable keys, so `-o json` and `-o yaml` are a contract for scripts.

A command that follows something over time (a watch) returns a `Stream`
instead: the core renders each `Result` as it arrives and writes each
`Progress` line to stderr, so the command still never prints.

`exit_code` is for a command whose answer is "no" but still a result to print
(`policy check` of an action that would be refused: 1); it is not part of the data.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple, Union

_NO_DATA: Any = object()  # `data` not given: a new empty dict (given None stays None, which the core refuses)


class Result:
    """What a command returns: `Result(kind, data={}, exit_code=0, names=(), warnings=())`, immutable.

    Written by hand rather than as a frozen dataclass, which generates and compiles its methods
    at every start (about 1.5% of `kubectl aicr help`); it behaves as that dataclass did
    (keyword or positional fields, compared by value, a repr of its fields, no assignment).
    """

    __slots__ = ("kind", "data", "exit_code", "names", "warnings")
    kind: str
    data: dict[str, Any]
    exit_code: int
    # The objects the result is about, as `resource.group/name` references: what `-o name` prints.
    names: tuple[str, ...]
    # One-line warnings for the person at the terminal: written to stderr as `warning: ...`
    # before the output, never part of it.
    warnings: tuple[str, ...]

    def __init__(self, kind: str, data: dict[str, Any] = _NO_DATA, exit_code: int = 0,
                 names: tuple[str, ...] = (), warnings: tuple[str, ...] = ()) -> None:
        for name, value in (("kind", kind), ("data", {} if data is _NO_DATA else data), ("exit_code", exit_code),
                            ("names", names), ("warnings", warnings)):
            object.__setattr__(self, name, value)

    def _fields(self) -> tuple[Any, ...]:
        return (self.kind, self.data, self.exit_code, self.names, self.warnings)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # its data is a dict

    def __repr__(self) -> str:
        return (f"Result(kind={self.kind!r}, data={self.data!r}, exit_code={self.exit_code!r}, "
                f"names={self.names!r}, warnings={self.warnings!r})")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")


class Progress(NamedTuple):
    """A line for the person watching (stderr), written as it happens; never part of the output."""

    message: str


class Rows(NamedTuple):
    """What makes a stream one of rows (`list --watch`, as `kubectl get -w`): each result is a batch of
    rows, `data[key]`, of one table; a document renderer prints each row alone, as a result of `kind`."""

    key: str
    kind: str


class Stream:
    """Successive results of one command, produced as they happen (a watch).

    Iterating it may block, and may raise `AicrError` (a timeout, say) at any
    point: what was rendered before stays rendered, and the error is reported
    as any other. With `rows`, the results are batches of rows appended to one
    table, never redrawn.
    """

    def __init__(self, items: Iterable[Union[Result, Progress]], rows: Rows | None = None) -> None:
        self._items = items
        self.rows = rows

    def __iter__(self) -> Iterator[Union[Result, Progress]]:
        return iter(self._items)


def not_plain_data(value: Any, path: str = "data") -> str | None:
    """Where `value` holds something other than plain JSON data, in words; None when it is all plain.

    Plain means exactly str, int, float (finite), bool, None, list, and dict with str keys: what
    `-o json` and `-o yaml` can both print unchanged (a tuple or a str subclass is refused too).
    """
    kind = type(value)
    if kind in (str, int, bool) or value is None:
        return None
    if kind is float:
        return None if math.isfinite(value) else f"{path} is {value!r}, which JSON cannot carry"
    if kind is list:
        for i, item in enumerate(value):
            problem = not_plain_data(item, f"{path}[{i}]")
            if problem:
                return problem
        return None
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return f"{path} has a key of type {type(key).__name__}"
            problem = not_plain_data(item, f"{path}.{key}")
            if problem:
                return problem
        return None
    return f"{path} is a {kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else \
        f"{path} is a {kind.__name__}"


def result_problem(result: Result) -> str | None:
    """Why `result` cannot be printed by every renderer alike, or None."""
    if type(result.kind) is not str:
        return f"its kind is a {type(result.kind).__name__}, not a string"
    if type(result.data) is not dict:
        return f"its data is a {type(result.data).__name__}, not a dict"
    for field_name in ("names", "warnings"):
        lines = getattr(result, field_name)
        if type(lines) is not tuple or any(type(line) is not str for line in lines):
            return f"its {field_name} are not a tuple of strings"
    return not_plain_data(result.data)
