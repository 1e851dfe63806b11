"""The interface of an output format (`-o NAME` or `-o NAME=ARG`), registered under `aicr.renderers`.

A renderer turns a command's `Result` into text on a stream. It knows nothing
of Kubernetes or of any command; it may know the layout of a result `kind`
and must fall back to something sensible for kinds it does not know, since
plugin commands return kinds of their own.

Before the command runs, the core calls `configure` once with the argument of
`-o NAME=ARG` (None without one): a bad argument (a template that does not
parse) is then a usage error before any API call. While it renders, `options`
holds what every renderer may honour (`--no-headers`, colour,
`--allow-missing-template-keys`; aicr_core/framework/output_options.py).
"""
from __future__ import annotations

import abc
from typing import TextIO

from aicr_core.errors import UsageError, shown_argument
from aicr_core.framework import output_options as output
from aicr_core.framework.output_options import OutputOptions
from aicr_core.framework.result import Result


class Renderer(abc.ABC):
    # Written between two results of a stream (`describe --watch`) when the output is not a
    # terminal (on a terminal the core redraws instead). YAML's document separator by default.
    separator: str = "---\n"
    # What `-o NAME=ARG` takes, as one word for messages and help (`TEMPLATE`, `COLUMNS`); None: no argument.
    argument: str | None = None
    argument_required: bool = False  # `-o NAME` alone is then a usage error, as kubectl's `-o jsonpath`
    # A renderer of table rows (text, wide, custom-columns): a stream of rows (`list --watch`) gives it
    # each batch of rows as a result of the list's kind, and it prints the header line once. Any other
    # renderer gets one result per row.
    table: bool = False
    # The result kinds this renderer prints (`-o junit`: PolicyTestReport only); None: any kind. With
    # kinds, the core refuses (USAGE) before the command runs unless the command says it returns only
    # those kinds (AicrCommand.result_kinds): a write is never made, then refused its output.
    kinds: tuple[str, ...] | None = None

    @property
    def options(self) -> OutputOptions:
        """The output options of this rendering (`--no-headers`, colour, ...)."""
        return output.current()

    def configure(self, name: str, argument: str | None) -> None:
        """Take `-o NAME=ARG`'s argument, once, before the command runs.

        Raise `UsageError` for an argument that cannot work; override `parse_argument` to read one.
        """
        if argument is not None and self.argument is None:
            raise UsageError(f'output format "{name}" takes no argument (got "{name}={shown_argument(argument)}")')
        if argument is None and self.argument_required:
            raise UsageError(f'output format "{name}" needs an argument: -o {name}={self.argument}')
        if argument is not None:
            self.parse_argument(argument)

    def parse_argument(self, argument: str) -> None:
        """Read `-o NAME=ARG`'s argument; raise `UsageError` when it is wrong."""
        return None

    @abc.abstractmethod
    def render(self, result: Result, out: TextIO) -> None:
        """Write `result` to `out`."""
