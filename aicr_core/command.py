"""The base class of every command, ours and any organisation's.

A command is a cliff `Command` registered under the `aicr.commands` entry-point
group. It declares its own arguments, receives parsed arguments that already
include the common flags (`--kubeconfig`, `--reason`, `-o`, ...), and returns a
`Result` (or a `Stream` of them, for a watch); it never prints. cliff's `CommandHook`s registered under
`aicr.commands.<name>` may add flags to it and run before and after it.

A command module is imported by `help` for its summary, so it must not import
anything heavy (the Kubernetes client) at module level: import inside
`take_action`.
"""
from __future__ import annotations

import argparse
import inspect
from typing import TYPE_CHECKING, Any, ClassVar

from cliff.command import Command

from aicr_core.flags import FlagParser, add_common_flags
from aicr_core.result import Result, Stream

if TYPE_CHECKING:
    from aicr_core.app import AicrApp


class AicrCommand(Command):
    """Base class: override `add_arguments` and `take_action`.

    The class docstring is the command's help: its first line the summary, then
    what it does, then optional `Examples:` and `Codes:` sections (the layout
    `kubectl aicr help COMMAND` shows; see the README's "Writing plugins").
    """

    app: AicrApp
    # Common flags (by dest, e.g. "reason") this command reads: help lists them among its own.
    uses_flags: ClassVar[tuple[str, ...]] = ()

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add this command's own positional arguments and flags."""

    def summary(self) -> str:
        """One line for `kubectl aicr help`: the first line of the class docstring."""
        doc = inspect.getdoc(self.__class__) or ""
        return doc.splitlines()[0] if doc else ""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = FlagParser(prog=prog_name, description=self.get_description(),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        parser.command_name = self.cmd_name
        self.add_arguments(parser)
        add_common_flags(parser)
        for hook in self._hooks:  # cliff CommandHooks: plugins adding flags to this command
            if hook.obj is not None:
                hook.obj.get_parser(parser)
        return parser

    def run(self, parsed_args: argparse.Namespace) -> Any:
        """cliff's run, except that the command's `Result` is kept for the renderer."""
        parsed_args = self._run_before_hooks(parsed_args)
        result = self.take_action(parsed_args)
        if not isinstance(result, (Result, Stream)):
            raise TypeError(f"command {self.cmd_name!r} returned {type(result).__name__}, not a Result")
        self._run_after_hooks(parsed_args, 0)
        return result

    def take_action(self, parsed_args: argparse.Namespace) -> Result | Stream:  # pragma: no cover - abstract
        raise NotImplementedError
