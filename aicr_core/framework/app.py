"""`kubectl-aicr`: find the command, parse the flags, run it, render its result.

Built on cliff's App, Command and CommandManager, with our own dispatch: cliff
would match command prefixes (`appr` runs `approve`), open an interactive
shell when run without arguments, print suggestions to stdout and add flags
(`-v`, `--debug`) that clash with kubectl's. A kubectl plugin must do none of
that, so `run` is ours; discovery goes through stevedore without importing
what is not used.
"""
from __future__ import annotations

import argparse
import io
import logging
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from cliff.app import App
from cliff.commandmanager import CommandManager

from aicr_core import entry_points
from aicr_core.errors import AicrError, Code, HelpRequested, UsageError, shown_argument
from aicr_core.framework import output_options as output
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.common_flags import FlagParser, add_common_flags, debug_enabled
from aicr_core.framework.renderer import Renderer
from aicr_core.framework.result import Progress, Result, Rows, Stream, result_problem
from aicr_core.framework.suggestions import flag_suggestions, hint, suggestions, unknown_name
from aicr_core.framework.terminal import safe
from aicr_core.gc_pause import paused_gc

PROG = "kubectl aicr"
CLEAR_SCREEN = "\x1b[H\x1b[2J"  # cursor home, erase the screen: a watch redraws in place
DESCRIPTION = (f"{PROG}: inspect, approve, revoke and acknowledge AICR rollouts, "
               "and check a plan's bundle against the AICR CLI.")
USAGE_LINES = (  # every built-in command's shape; COMMAND is describe, approve, revoke or acknowledge
    f"{PROG} COMMAND ROLLOUT [flags]",
    f"{PROG} list [--all] [--pending] [--phase PHASE] [flags]",
    f"{PROG} wait ROLLOUT --for CONDITION [--timeout DURATION] [flags]",
    f"{PROG} policy check ROLLOUT [--action ACTION] [flags]",
    f"{PROG} policy validate FILE",
    f"{PROG} policy test [PATH ...] [--case PATTERN] [--fail-only]",
    f"{PROG} reproduce [PLAN] [flags]",
    f"{PROG} version [--client] [flags]",
    f"{PROG} whoami [flags]",
    f"{PROG} dashboard [--address ADDR] [--port N] [--read-only] [--open] [flags]",
    f"{PROG} plugins [flags]",
    f"{PROG} help [COMMAND]",
)
USAGE = "Usage:\n" + "".join(f"  {line}\n" for line in USAGE_LINES) + f"\nRun '{PROG} help' for the commands and flags."


class EntryPointCommands(CommandManager):
    """cliff's CommandManager, but listing entry points without importing them and matching names exactly."""

    def load_commands(self, namespace: str) -> None:
        self.group_list.append(namespace)
        self.group = entry_points.PluginGroup(namespace)

    def add_command(self, name: str, command_class: type) -> None:
        """cliff's App adds its own `help` and `complete`; ours come from entry points."""

    def find_command(self, argv: list[str]) -> tuple[type[AicrCommand], str, list[str]]:  # type: ignore[override]
        name = argv[0]
        if name not in self.group:
            raise self.unknown_command(name)
        return self.group.load(name), name, argv[1:]

    def unknown_command(self, name: str) -> UsageError:
        return unknown_name(f'unknown command "{shown_argument(name)}" for "{PROG}"',
                           suggestions(name, self.group.names()))


class AicrApp(App):
    command_manager: EntryPointCommands
    parser: FlagParser

    def __init__(self, stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
        super().__init__(description=DESCRIPTION, version=None,
                         command_manager=EntryPointCommands(entry_points.COMMANDS), stdout=stdout, stderr=stderr)
        self.renderers = entry_points.PluginGroup(entry_points.RENDERERS)

    # cliff hooks we replace --------------------------------------------------
    def build_option_parser(self, description: str | None, version: str | None,  # type: ignore[override]
                            argparse_kwargs: dict[str, Any] | None = None) -> FlagParser:
        """The flags every command accepts; used to find the command name in argv."""
        parser = FlagParser(prog=PROG, description=description)
        add_common_flags(parser)
        return parser

    def configure_logging(self) -> None:
        """What stevedore, cliff and our own `aicr` loggers log (a CommandHook that failed to load, a
        text layout that failed, say) becomes a `warning:` line."""
        for name in ("stevedore", "cliff", "aicr"):
            logger = logging.getLogger(name)
            for old in [h for h in logger.handlers if isinstance(h, _WarningLines)]:
                logger.removeHandler(old)
            logger.addHandler(_WarningLines(self))
            logger.propagate = False

    # dispatch ------------------------------------------------------------------
    def run(self, argv: list[str]) -> int:
        self.configure_logging()
        try:
            return self._run(list(argv))
        except AicrError as err:
            self.print_error(err)
            return err.exit_code
        except KeyboardInterrupt as stop:
            from aicr_core.framework.interruption import Terminated

            terminated = isinstance(stop, Terminated)  # SIGTERM during a fleet read: said as Ctrl-C is
            interrupted = AicrError(Code.INTERRUPTED, "interrupted (SIGTERM)" if terminated else "interrupted")
            self.print_error(interrupted)
            return Terminated.exit_code if terminated else interrupted.exit_code
        except BrokenPipeError:
            return 141
        except Exception as err:  # noqa: BLE001 - the last line of defence: a bug, not a traceback
            if debug_enabled():
                traceback.print_exc(file=self.stderr)
            self.print_error(AicrError(Code.INTERNAL, f"{type(err).__name__}: {err} "
                                       "(a bug; run with AICR_DEBUG=1 for the traceback)"))
            return 1

    def _run(self, argv: list[str]) -> int:
        try:
            name, rest = self.split_command(argv)
        except HelpRequested:
            name, rest = "help", []
        if name is None:
            unknown = self.unknown_flag(rest)
            if unknown:
                known = [opt for action in self.parser._actions for opt in action.option_strings]
                raise unknown_name(f"unknown flag: {shown_argument(unknown)}", flag_suggestions(unknown, known))
            self.stderr.write(USAGE + "\n")
            raise UsageError("no command given")
        try:
            return self.run_command(name, rest)
        except HelpRequested as wanted:
            return self.run_command("help", [wanted.command] if wanted.command else [])

    def run_command(self, name: str, argv: list[str]) -> int:
        command_class, name, rest = self.command_manager.find_command([name, *argv])
        command = command_class(self, None, cmd_name=name)
        args = command.get_parser(f"{PROG} {name}").parse_args(rest)
        # Before the command: never write, then fail to print; a template that does not parse is USAGE.
        renderer = self.load_renderer(args.output)
        format_name = str(args.output).partition("=")[0]
        self.check_kinds(renderer, format_name, command, args)
        options = self.output_options(args)
        result, exit_code = command.run(args)
        with output.rendering(options):
            if isinstance(result, Stream):
                return self.render_stream(result, renderer, format_name) or exit_code
            self.show(self.render(renderer, format_name, result), result)
        return exit_code

    @staticmethod
    def check_kinds(renderer: Renderer, format_name: str, command: AicrCommand, args: argparse.Namespace) -> None:
        """A renderer of some result kinds only (`-o junit`) on a command that may return others: USAGE,
        before the command runs."""
        kinds = getattr(renderer, "kinds", None)
        if kinds is None:
            return
        returns = command.result_kinds(args)
        if returns is None or not set(returns) <= set(kinds):
            subcommand = getattr(args, "subcommand", None)
            words = [str(command.cmd_name), *([subcommand] if isinstance(subcommand, str) else [])]
            raise UsageError(f'output format "{format_name}" prints only {", ".join(kinds)} results, '
                             f"not those of {' '.join(words)}")

    def output_options(self, args: argparse.Namespace) -> output.OutputOptions:
        return output.OutputOptions(
            no_headers=bool(getattr(args, "no_headers", False)),
            color=output.use_color(getattr(args, "color", "auto"), self.stdout.isatty()),
            allow_missing_template_keys=bool(getattr(args, "allow_missing_template_keys", True)))

    def show(self, output: str, result: Result) -> None:
        """The result's warnings on stderr, then its output on stdout."""
        for warning in result.warnings:
            self.warn(warning)
        self.write_out(output)

    def write_out(self, text: str) -> None:
        """Write to stdout; a full disk or a closed file is WRITE_FAILED, in one line (a pipe closed early
        is BrokenPipeError, which ends the command quietly as `head` expects)."""
        try:
            self.stdout.write(text)
            self.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as err:
            _discard_stdout(self.stdout)
            raise AicrError(Code.WRITE_FAILED, f"cannot write the output to stdout: {err.strerror or err}") from None

    def render_stream(self, stream: Stream, renderer: Renderer, name: str) -> int:
        """Each result as it comes: redrawn in place on a terminal, else after the renderer's separator.

        Progress lines go to stderr as they come. Each result is checked and rendered whole before
        any of it is written, as a single result is. A stream of rows (`list --watch`) is never
        redrawn: a table renderer prints each batch of rows as it comes, the header line once;
        any other renderer one document per row. Returns the last result's exit code (a stream
        that ends in a summary, as `approve --waves` does, exits as the summary says).
        """
        if stream.rows is not None:
            self.render_rows(stream, stream.rows, renderer, name)
            return 0
        redraw = self.stdout.isatty()
        shown = last_exit = 0
        for item in self.results(stream):
            output_text = self.render(renderer, name, item)
            if shown:
                self.write_out(CLEAR_SCREEN if redraw else renderer.separator)
            self.show(output_text, item)
            shown += 1
            last_exit = item.exit_code
        return last_exit

    def render_rows(self, stream: Stream, rows: Rows, renderer: Renderer, name: str) -> None:
        """Each batch of rows as it comes: a table renderer prints the batch (the header only until one
        row has been shown), any other renderer one document per row. A batch is rendered whole first."""
        header_shown, shown = False, 0
        for batch in self.results(stream):
            found = batch.data.get(rows.key)
            items = found if isinstance(found, list) else []
            if getattr(renderer, "table", False):
                options = output.current()
                if header_shown:
                    options = options._replace(no_headers=True)
                with output.rendering(options):
                    self.show(self.render(renderer, name, batch), batch)
                header_shown = header_shown or bool(items)
                continue
            texts = []
            for i, row in enumerate(items):
                if type(row) is not dict:
                    raise AicrError(Code.PLUGIN_ERROR, f"a streaming command's {rows.key}[] holds a "
                                    f"{type(row).__name__}, not an object")
                names = (batch.names[i],) if len(batch.names) == len(items) else ()
                texts.append(self.render(renderer, name, Result(rows.kind, row, names=names)))
            for warning in batch.warnings:
                self.warn(warning)
            for text in texts:
                self.write_out((renderer.separator if shown else "") + text)
                shown += 1

    def results(self, stream: Stream) -> Iterator[Result]:
        """The stream's results, checked; its Progress lines written to stderr as they come."""
        for item in stream:
            if isinstance(item, Progress):
                self.stderr.write(safe(str(item.message), allow_newlines=False) + "\n")
                self.stderr.flush()
                continue
            problem = result_problem(item) if isinstance(item, Result) else f"it yielded a {type(item).__name__}"
            if problem is not None:
                raise AicrError(Code.PLUGIN_ERROR, f"a streaming command's result cannot be printed: {problem}")
            assert isinstance(item, Result)
            yield item

    @staticmethod
    def render(renderer: Renderer, name: str, result: Result) -> str:
        """The whole output, rendered before any of it is written: a failing renderer prints nothing."""
        buffer = io.StringIO()
        try:
            with paused_gc():  # a table of thousands of rows: no cycles, and collections would walk them all
                renderer.render(result, buffer)
        except AicrError:
            raise
        except Exception as err:  # noqa: BLE001 - a renderer plugin's bug, named, never half an output
            raise AicrError(Code.PLUGIN_ERROR, f"output format {name!r} failed to print a {result.kind} "
                            f"result: {type(err).__name__}: {err}; nothing was printed") from err
        return buffer.getvalue()

    def split_command(self, argv: Sequence[str]) -> tuple[str | None, list[str]]:
        """Find the command name among the words; flags may stand before or after it.

        The name is the first word that is neither a flag nor the value of a known
        flag. A word right after an unknown flag (one a plugin adds to a command)
        may be that flag's value, so a later word can still be the name.
        """
        takes_value = self.parser.value_flags()
        i, after_unknown_flag = 0, False
        while i < len(argv):
            word = argv[i]
            if word in ("-h", "--help"):
                if not any(w in self.command_manager.group for w in argv[i + 1:]):
                    raise HelpRequested(None)
            if word.startswith("-") and word != "-":
                i += 2 if word in takes_value else 1
                after_unknown_flag = word not in takes_value and "=" not in word
                continue
            if word in self.command_manager.group:
                return word, [*argv[:i], *argv[i + 1:]]
            if not after_unknown_flag:
                raise self.command_manager.unknown_command(word)
            after_unknown_flag = False
            i += 1
        return None, list(argv)

    def unknown_flag(self, argv: Sequence[str]) -> str | None:
        """The first word that is a flag no command shares (`--foo`), skipping the values of known flags."""
        known = {opt for action in self.parser._actions for opt in action.option_strings}
        takes_value = self.parser.value_flags()
        i = 0
        while i < len(argv):
            word = argv[i]
            if word == "--":
                return None
            if word.startswith("-") and word != "-":
                name = word.partition("=")[0] if word.startswith("--") else word[:2]
                if name not in known:
                    return name
                i += 2 if word in takes_value else 1
                continue
            i += 1
        return None

    def load_renderer(self, output_flag: str) -> Renderer:
        """The renderer of `-o NAME[=ARG]`, its argument read (a bad one is USAGE, before any API call)."""
        name, equals, text = output_flag.partition("=")
        argument = text if equals else None
        if name not in self.renderers:
            raise UsageError(f'unknown output format "{shown_argument(name)}": installed are '
                             + ", ".join(self.renderers.names()))
        renderer_class = self.renderers.load(name)
        renderer: Renderer = renderer_class()
        configure = getattr(renderer, "configure", None)
        if configure is None:  # a renderer written before arguments existed, not derived from ours
            if argument is not None:
                raise UsageError(f'output format "{name}" takes no argument (got "{shown_argument(output_flag)}")')
            return renderer
        try:
            configure(name, argument)
        except AicrError:
            raise
        except Exception as err:  # noqa: BLE001 - a renderer plugin's bug while reading its argument
            raise AicrError(Code.PLUGIN_ERROR, f"output format {name!r} failed to read its argument: "
                            f"{type(err).__name__}: {err}") from err
        return renderer

    # output --------------------------------------------------------------------
    def print_error(self, err: AicrError) -> None:
        lines = [f"error: [{err.code}] {safe(err.message, allow_newlines=False)}"]
        lines += [f"  {safe(line, allow_newlines=False)}" for line in err.details]
        # kubectl's "Did you mean this?" after the error line: our own command and flag names only
        hint_lines = hint(err) if isinstance(err, UsageError) else ""
        self.stderr.write("\n".join(lines) + "\n" + hint_lines)
        self.stderr.flush()

    def warn(self, message: str) -> None:
        """A one-line diagnostic on stderr (a broken plugin, say); never on stdout."""
        self.stderr.write(f"warning: {safe(message, allow_newlines=False)}\n")
        self.stderr.flush()


def _discard_stdout(stream: TextIO) -> None:
    """Point stdout's file descriptor at /dev/null: what its buffer still holds is then dropped at exit,
    not reported by the interpreter as a second error."""
    import os

    try:
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError, io.UnsupportedOperation):
        return  # not a file (a test's StringIO): nothing is flushed at exit
    os.dup2(null, fd)
    os.close(null)


class _WarningLines(logging.Handler):
    def __init__(self, app: AicrApp) -> None:
        super().__init__(logging.WARNING)
        self.app = app

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.app.warn(message.splitlines()[0] if message else "(empty log message)")


def main(argv: Sequence[str] | None = None) -> int:
    return AicrApp().run(list(sys.argv[1:] if argv is None else argv))


def console_main() -> int:
    """The executable's run (aicr_core.framework.launch calls it); its exit code."""
    # SIGTERM ends the process like an exit, so that cleanups still run: the official client writes
    # kubeconfig key data to private temporary files and removes them only at exit.
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    return main()

