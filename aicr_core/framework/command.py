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
from typing import TYPE_CHECKING

from cliff.command import Command

from aicr_core.errors import EXIT_OK, AicrError, Code
from aicr_core.framework.common_flags import FlagParser, add_common_flags, check_used_flags
from aicr_core.framework.result import Result, Stream, result_problem

if TYPE_CHECKING:
    from aicr_core.framework.app import AicrApp
    from aicr_core.session.kube import KubeSession


class AicrCommand(Command):
    """Base class: override `add_arguments` and `take_action`.

    The class docstring is the command's help: its first line the summary, then
    what it does, then optional `Examples:` and `Codes:` sections (the layout
    `kubectl aicr help COMMAND` shows; see docs/plugins.md, "A command").
    """

    app: AicrApp
    # The common flags this command uses (argparse dests, e.g. "dir", "operator_namespace"): their bounds
    # (not empty, say) are checked for it. Every command accepts every flag; one it does not use is
    # ignored once its value parses.
    uses_flags: tuple[str, ...] = ()

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add this command's own positional arguments and flags."""

    def take_action_on(self, parsed_args: argparse.Namespace, session: KubeSession) -> Result:
        """The command's single-cluster body, on a session passed in: what a fleet runs once per cluster
        (aicr_core.fleet.gathering). A command with a fleet read (`--contexts` and its friends) overrides it;
        the fleet never runs one that does not."""
        raise AicrError(Code.INTERNAL, f"{type(self).__name__} has no single-cluster body (take_action_on)")

    def result_kinds(self, parsed_args: argparse.Namespace) -> tuple[str, ...] | None:
        """The kinds of `Result` this run will return, when the command knows them before running (None:
        it does not say). A renderer that prints only some kinds (`-o junit`) is refused otherwise."""
        return None

    def summary(self) -> str:
        """One line for `kubectl aicr help`: the first line of the class docstring."""
        doc = self.__class__.__doc__
        if doc is None:
            doc = inspect.getdoc(self.__class__) or ""  # inherited, as inspect.getdoc finds it
        # The first line only: `help` asks every command, and cleaning up whole docstrings costs it
        # (docs/performance.md, "What the code's shape saves").
        return doc.strip().split("\n", 1)[0].strip()

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

    def run(self, parsed_args: argparse.Namespace) -> tuple[Result | Stream, int]:  # type: ignore[override]
        """cliff's run, except that the command's `Result` is kept for the renderer.

        Returns the result and the exit code the after-hooks settle on (the result's, 0 unless the
        command says otherwise, as `policy check` does, and unless a hook changes it).
        A result that is no `Result`, or holds data that is not plain JSON data, is the plugin's
        bug: PLUGIN_ERROR naming the command, before anything is printed. A `Stream`'s results are
        checked by the core one by one, as they come.
        """
        check_used_flags(parsed_args, self.uses_flags)
        parsed_args = self._run_before_hooks(parsed_args)
        result = self.take_action(parsed_args)
        if not isinstance(result, (Result, Stream)):
            raise AicrError(Code.PLUGIN_ERROR, f"command {self.cmd_name!r} returned "
                            f"{type(result).__name__}, not a Result; nothing was printed")
        problem = result_problem(result) if isinstance(result, Result) else None
        if problem is not None:
            raise AicrError(Code.PLUGIN_ERROR, f"command {self.cmd_name!r} returned a result that cannot be "
                            f"printed: {problem}; nothing was printed")
        code = result.exit_code if isinstance(result, Result) else EXIT_OK  # a stream fails by raising
        exit_code = self._run_after_hooks(parsed_args, code)
        if type(exit_code) is not int:
            raise AicrError(Code.PLUGIN_ERROR, f"an after-hook of command {self.cmd_name!r} returned "
                            f"{type(exit_code).__name__}, not an exit code")
        return result, exit_code

    def take_action(self, parsed_args: argparse.Namespace) -> Result | Stream:  # pragma: no cover - abstract
        raise NotImplementedError
