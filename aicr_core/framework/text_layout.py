"""Text layouts: how a result kind looks as lines of text, and the helpers to build them.

A layout is a function from a result's data to lines. It is registered under
the `aicr.layouts` entry-point group by the result's kind (ours too, see
setup.cfg), so a site command's result gets a text layout of its own without
the command knowing how it is printed, and without any renderer knowing the
kind: the text renderer looks the kind up. Layouts knows nothing of
Kubernetes either: they see plain data.

Every value taken from the data goes through `value()` (one safe line: no
newline or escape sequence from cluster data can forge a line or steer the
terminal).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aicr_core.framework import output_options as output
from aicr_core.framework.terminal import safe

Layout = Callable[[dict[str, Any]], list[str]]


def value(item: Any, empty: str = "-") -> str:
    """One cluster value as a single safe line."""
    if item is None or item == "":
        return empty
    if isinstance(item, bool):
        return "yes" if item else "no"
    return safe(str(item), allow_newlines=False)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Columns padded to the widest cell, as kubectl prints them; the last column is not padded.

    A cell may hold colour marks (`output.paint`): widths count only what is shown.
    """
    widths = [max(_width(str(c)) for c in column) for column in zip(headers, *rows, strict=True)]
    lines = []
    for row in [list(headers), *rows]:
        cells = [str(cell) + " " * (width - _width(str(cell)))
                 for cell, width in zip(row[:-1], widths[:-1], strict=True)] + [str(row[-1])]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def listing(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """The table of a list result (what `kubectl get` prints): without its header line with --no-headers.

    The rows are aligned with the header all the same, so a row's columns do not move with the flag.
    """
    lines = table(headers, rows, indent)
    return lines[1:] if output.current().no_headers else lines


def _width(cell: str) -> int:
    return len(output.strip_marks(cell)) if "\x0e" in cell else len(cell)


def fields(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """`Label:  value` lines with the values aligned."""
    width = max(len(label) for label, _ in pairs) + 3  # "Runtime UID:" then two spaces, as upstream
    return [f"{label + ':':<{width}}{text}".rstrip() for label, text in pairs]


def generic(data: dict[str, Any], indent: str = "") -> list[str]:
    """Any data as indented `key: value` lines: the layout of a kind nobody registered one for."""
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


def registered_layout(kind: str) -> Layout | None:
    """The layout a plugin registered for `kind` under `aicr.layouts`, or None; PLUGIN_ERROR if it does not load."""
    from aicr_core import entry_points

    group = entry_points.PluginGroup(entry_points.LAYOUTS)
    return group.load(kind) if kind in group else None
