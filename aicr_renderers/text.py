"""`-o text` (the default): the upstream plugin's plain-text output.

Layouts are chosen by the result's kind (see `layouts.py`); a kind this
renderer does not know, such as a plugin command's, is printed as indented
`key: value` lines. Every value from the result is escaped (`safe`) before it
is laid out, so a newline or an escape sequence in cluster data cannot forge
a line or steer the terminal.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TextIO

from aicr_core.renderer import Renderer
from aicr_core.result import Result
from aicr_core.terminal import safe

Layout = Callable[[dict[str, Any]], list[str]]


def value(item: Any, empty: str = "-") -> str:
    """One cluster value as a single safe line."""
    if item is None or item == "":
        return empty
    if isinstance(item, bool):
        return "yes" if item else "no"
    return safe(str(item), allow_newlines=False)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Columns padded to the widest cell, as kubectl prints them; the last column is not padded."""
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows, strict=True)]
    lines = []
    for row in [list(headers), *rows]:
        cells = [str(cell).ljust(width) for cell, width in zip(row[:-1], widths[:-1], strict=True)] + [str(row[-1])]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def fields(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """`Label:  value` lines with the values aligned."""
    width = max(len(label) for label, _ in pairs) + 3  # "Runtime UID:" then two spaces, as upstream
    return [f"{label + ':':<{width}}{text}".rstrip() for label, text in pairs]


def generic(data: dict[str, Any], indent: str = "") -> list[str]:
    lines: list[str] = []
    for key, item in data.items():
        if isinstance(item, dict):
            lines.append(f"{indent}{value(key)}:")
            lines += generic(item, indent + "  ")
        elif isinstance(item, list):
            lines.append(f"{indent}{value(key)}:")
            for element in item:
                if isinstance(element, dict):
                    sub = generic(element, indent + "    ")
                    lines += [f"{indent}  - {sub[0].lstrip()}", *sub[1:]] if sub else [f"{indent}  - {{}}"]
                else:
                    lines.append(f"{indent}  - {value(element)}")
        else:
            lines.append(f"{indent}{value(key)}: {value(item)}")
    return lines


class TextRenderer(Renderer):
    def layout(self, kind: str) -> Layout:
        from aicr_renderers.layouts import LAYOUTS

        return LAYOUTS.get(kind, generic)

    def render(self, result: Result, out: TextIO) -> None:
        text = "\n".join(self.layout(result.kind)(dict(result.data)))
        out.write(safe(text) + ("\n" if text else ""))
