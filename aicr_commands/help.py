"""`kubectl aicr help [COMMAND]`."""
from __future__ import annotations

import argparse

from aicr_core.app import PROG, USAGE_LINES
from aicr_core.command import AicrCommand
from aicr_core.errors import AicrError, UsageError
from aicr_core.result import Result


class Help(AicrCommand):
    """Show the commands and flags, or one command's help."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("topic", metavar="COMMAND", nargs="?", help="the command to explain")

    def take_action(self, args: argparse.Namespace) -> Result:
        commands = self.app.command_manager.group
        if args.topic:
            if args.topic not in commands:
                raise UsageError(f'unknown command "{args.topic}" for "{PROG}"')
            command_class = commands.load(args.topic)
            command = command_class(self.app, None, cmd_name=args.topic)
            parser = command.get_parser(f"{PROG} {args.topic}")
            # cliff's epilog names the plugin that provides the command and adds its hooks' notes;
            # it scans every installed distribution, so only help pays for it.
            parser.epilog = command.get_epilog() or None
            return Result("CommandHelp", {"command": args.topic, "help": parser.format_help()})
        listing = []
        for name in commands.names():
            try:
                command_class = commands.load(name)
                summary = command_class(self.app, None, cmd_name=name).summary()
            except AicrError as err:  # a broken plugin does not stop the others
                self.app.warn(err.message)
                summary = f"(unavailable: {err.code})"
            listing.append({"name": name, "summary": summary})
        app_flags = self.app.parser  # the flags every command accepts, as the app parses them
        return Result("Help", {
            "description": app_flags.description,
            "usage": list(USAGE_LINES),
            "commands": listing,
            "flags": [_flag_line(a) for a in app_flags._actions if a.option_strings],
            "footer": f"Run '{PROG} help COMMAND' for more about a command. "
                      "Exit codes: 0 success, 1 the command failed, 2 usage error.",
        })


def _flag_line(action: argparse.Action) -> str:
    names = ", ".join(action.option_strings)
    if action.metavar:
        names += f" {action.metavar}"
    text = (action.help or "") % {"default": action.default} if action.help else ""
    return f"{names:<28} {text}".rstrip()
