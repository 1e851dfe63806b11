"""What a command returns: plain data that a renderer writes.

`kind` names the shape of `data` (renderers pick a layout by it); `data` holds
only JSON-compatible values (str, int, float, bool, None, lists, dicts) with
stable keys, so `-o json` and `-o yaml` are a contract for scripts.
`exit_code` is for a command whose answer is "no" but still a result to print
(`policy check` of an action that would be refused: 1); it is not part of the data.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Result:
    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    exit_code: int = 0
