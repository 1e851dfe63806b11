"""`-o csv`: one `key,value` row per top-level field (nested values as JSON).

`-o csv=COLUMNS` (`-o csv=name,phase,approval.user`) prints a header row of the
columns, then one row per element of `items` (list's rollouts), or one row for
a result without `items`; a column is a dotted path into the `-o json`
document (or into the item), empty where the path is missing. The argument is
read once, before the command runs: a malformed one is a usage error before
any API call (the renderer's `parse_argument`).
"""
from __future__ import annotations

import csv
import json
import re
from typing import Any, TextIO

from aicr_core.plugin import Renderer, Result, UsageError, safe

COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*")


class CsvRenderer(Renderer):
    argument = "COLUMNS"  # -o csv=COLUMNS; -o csv alone keeps the key,value rows

    def __init__(self) -> None:
        self.columns: list[str] | None = None

    def parse_argument(self, argument: str) -> None:
        columns = argument.split(",")
        bad = [c for c in columns if not COLUMN.fullmatch(c)]
        if bad:
            raise UsageError(f"-o csv=COLUMNS: {bad[0]!r} is not a dotted path such as name or approval.user")
        self.columns = columns

    def render(self, result: Result, out: TextIO) -> None:
        writer = csv.writer(out, lineterminator="\n")
        if self.columns is None:
            writer.writerow(["kind", result.kind])
            for key, value in result.data.items():
                writer.writerow([key, cell(value)])
            return
        items = result.data.get("items")
        rows = items if isinstance(items, list) else [{"kind": result.kind, **result.data}]
        if not self.options.no_headers:
            writer.writerow(self.columns)
        for row in rows:
            writer.writerow([cell(lookup(row, column)) for column in self.columns])


def lookup(document: Any, path: str) -> Any:
    for key in path.split("."):
        document = document.get(key) if isinstance(document, dict) else None
    return document


def cell(value: Any) -> str:
    text = "" if value is None else value if isinstance(value, str) else json.dumps(value)
    return safe(text, allow_newlines=False)
