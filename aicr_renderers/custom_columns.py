"""`-o custom-columns=SPEC`, `-o custom-columns-file=FILE`, read and printed as kubectl does.

SPEC is `HEADER:PATH,HEADER:PATH`; the file holds one line of headers and one
line of paths, separated by white space. A PATH is relaxed as kubectl relaxes
it (`name`, `.name`, `{name}` and `{.name}` are `{.name}`). A result with
`items[]` (list's `RolloutList`) prints one row per item, each column evaluated
on that item; any other result one row for its `-o json` document. A cell is
every value found, printed as Go's fmt prints it, joined by `,`; `<none>` when
nothing is found. Columns are laid out as kubectl's tabwriter lays them out
(at least 6 wide, 3 spaces between), widths remembered across the rows of a
stream. `--no-headers` leaves out the header line. Every cell goes through
`safe()`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from aicr_core.plugin import Renderer, Result, UsageError, safe, shown_argument
from aicr_renderers.templates import document, read_template_file

if TYPE_CHECKING:
    from aicr_core.plugin import jsonpath

MIN_WIDTH, PADDING = 6, 3  # cli-runtime's printers.GetNewTabWriter


class Column(NamedTuple):
    header: str
    template: jsonpath.Template


def column(header: str, path: str) -> Column:
    from aicr_core.plugin import jsonpath

    try:
        return Column(header, jsonpath.parse(jsonpath.relaxed(path)))
    except jsonpath.JsonPathError as err:
        raise UsageError(f"custom-columns: {err}") from None


def columns_from_spec(spec: str) -> list[Column]:
    if not spec:
        raise UsageError("custom-columns format specified but no custom columns given")
    found = []
    for part in spec.split(","):
        header, colon, path = part.partition(":")
        if not colon:
            raise UsageError(f"unexpected custom-columns spec: {shown_argument(part)}, "
                             "expected <header>:<json-path-expr>")
        found.append(column(header, path))
    return found


def columns_from_file(text: str) -> list[Column]:
    lines = text.splitlines()
    if not lines:
        raise UsageError("invalid template, missing header line. Expected format is one line of space "
                         "separated headers, one line of space separated column specs.")
    if len(lines) < 2:
        raise UsageError("invalid template, missing spec line. Expected format is one line of space "
                         "separated headers, one line of space separated column specs.")
    headers, paths = lines[0].split(), lines[1].split()
    if len(headers) != len(paths):
        raise UsageError(f"number of headers ({len(headers)}) and field specifications ({len(paths)}) don't match")
    return [column(h, p) for h, p in zip(headers, paths, strict=True)]


class CustomColumnsRenderer(Renderer):
    separator = ""
    argument = "SPEC"
    argument_required = True
    table = True

    def __init__(self) -> None:
        self.columns: list[Column] = []
        self.widths: list[int] = []  # remembered across a stream's batches, as kubectl's tabwriter does

    def parse_argument(self, argument: str) -> None:
        self.columns = columns_from_spec(argument)

    def render(self, result: Result, out: TextIO) -> None:
        from aicr_core.plugin import jsonpath

        items = result.data.get("items")
        targets: list[Any] = items if isinstance(items, list) else [document(result)]
        try:
            rows = [[safe(c.template.column(target), allow_newlines=False) for c in self.columns]
                    for target in targets]
        except jsonpath.JsonPathError as err:
            raise UsageError(f"custom-columns: {err}; nothing was printed") from None
        if not self.options.no_headers:
            rows.insert(0, [safe(c.header, allow_newlines=False) for c in self.columns])
        self.widths = [max([self.widths[i] if i < len(self.widths) else MIN_WIDTH,
                            *(len(row[i]) + PADDING for row in rows)]) for i in range(len(self.columns))]
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row[:-1], self.widths[:-1], strict=True)]
            out.write("".join(cells) + row[-1] + "\n")


class CustomColumnsFileRenderer(CustomColumnsRenderer):
    argument = "FILE"

    def parse_argument(self, argument: str) -> None:
        self.columns = columns_from_file(read_template_file(argument, "custom-columns-file"))
