"""`kubectl aicr help [COMMAND]`.

`help COMMAND` lays out any command, ours or a plugin's, the same way, from
its class docstring and its parser (the convention is in docs/plugins.md,
"A command"):

    class Frobnicate(AicrCommand):
        \"\"\"One line: what it does (the summary in `kubectl aicr help`).

        More paragraphs about what it does.

        Examples:
          # What this example does
          kubectl aicr frobnicate rollout-3f9a1c0d2b7e4a51-1

        Codes:
          NOT_FOUND  when the rollout does not exist
          FORBIDDEN
        \"\"\"
        uses_flags = ("reason",)  # common flags it reads, listed under "Flags"

A `Codes:` line is a CODE, optionally followed by what it means for this
command (else the meaning every command shares, `Code.meaning`). The line
`API` stands for the codes every command that talks to the API server may
return (`aicr_core.errors.API_CODES`), less those listed on lines of their own.
"""
from __future__ import annotations

import argparse
import inspect
import re
from typing import Any, NamedTuple

from aicr_core import entry_points
from aicr_core.errors import API_CODES, AicrError, Code, UsageError, shown_argument
from aicr_core.framework.app import PROG, USAGE_LINES
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.common_flags import help_text
from aicr_core.framework.result import Result
from aicr_core.framework.suggestions import suggestions

OURS = "kubectl-aicr"  # the distribution of the built-in commands
# Common flags that only some commands read: listed under "Flags" for those (`uses_flags`),
# left out of the others' "Global flags" (every command still accepts them).
SCOPED_FLAGS = ("reason", "expires", "dir", "override", "policy_file")
# Codes any command may return, listed once at the end of every command's help.
EVERY_COMMAND = (Code.USAGE, Code.PLUGIN_ERROR, Code.INTERRUPTED, Code.INTERNAL)
API_LINE = "API"
_SECTION = r"^(Examples|Codes):\s*$"  # compiled on first use (help COMMAND), not at every start


class Help(AicrCommand):
    """Show the commands and flags, or one command's usage, flags, examples and codes.

    Examples:
      # Every command, and the flags all of them accept
      kubectl aicr help

      # One command in full
      kubectl aicr help approve

    Codes:
      USAGE  unknown command
    """

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("topic", metavar="COMMAND", nargs="?", help="the command to explain")

    def take_action(self, args: argparse.Namespace) -> Result:
        commands = self.app.command_manager.group
        if args.topic:
            if args.topic not in commands:
                raise UsageError(f'unknown command "{shown_argument(args.topic)}" for "{PROG}"',
                                 suggestions(args.topic, commands.names()))
            command = commands.load(args.topic)(self.app, None, cmd_name=args.topic)
            return Result("CommandHelp", command_help(command, args.topic, provider(commands.infos(args.topic)[0])))
        listing, warnings = [], []
        for name in commands.names():
            try:
                command_class = commands.load(name)
                summary = command_class(self.app, None, cmd_name=name).summary()
            except AicrError as err:  # a broken plugin does not stop the others
                warnings.append(err.message)
                summary = f"(unavailable: {err.code})"
            listing.append({"name": name, "summary": summary})
        app_flags = self.app.parser  # the flags every command accepts, as the app parses them
        return Result("Help", {
            "description": app_flags.description,
            "usage": list(USAGE_LINES),
            "commands": listing,
            "flags": [flag_line(a) for a in app_flags._actions if a.option_strings],
            "footer": f"Run '{PROG} help COMMAND' for a command's flags, examples and codes. "
                      "Exit codes: 0 success, 1 the command failed, 2 usage error.",
        }, warnings=tuple(warnings))


class CommandDoc(NamedTuple):
    """A command's docstring, split by the convention above (a NamedTuple: `help` imports this module,
    and a dataclass costs every start: docs/performance.md, "What the code's shape saves")."""

    summary: str
    description: str
    examples: list[dict[str, str]]
    codes: list[dict[str, str]]


def parse_doc(doc: str) -> CommandDoc:
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    parts: dict[str, list[str]] = {"": []}
    section = ""
    for line in lines[1:]:
        match = re.match(_SECTION, line)
        if match:
            section = match.group(1)
            parts[section] = []
        else:
            parts[section].append(line)
    examples, codes = [], []
    for block in _blocks(parts.get("Examples", [])):
        comments = [line.lstrip("#").strip() for line in block if line.startswith("#")]
        commands = [line for line in block if not line.startswith("#")]
        examples.append({"description": " ".join(comments), "command": "\n".join(commands)})
    for line in parts.get("Codes", []):
        if line.strip():
            code, _, meaning = line.strip().partition(" ")
            codes.append({"code": code, "meaning": meaning.strip()})
    return CommandDoc(lines[0].strip() if lines else "", "\n".join(parts[""]).strip("\n"), examples, codes)


def _blocks(lines: list[str]) -> list[list[str]]:
    blocks: list[list[str]] = [[]]
    for line in inspect.cleandoc("\n".join(lines)).splitlines() if lines else []:
        if line.strip():
            blocks[-1].append(line.rstrip())
        elif blocks[-1]:
            blocks.append([])
    return [b for b in blocks if b]


def provider(info: entry_points.PluginInfo) -> str | None:
    """Which distribution provides a command, unless it is this one (from entry-point metadata)."""
    distribution, _ = entry_points.distribution_and_version(info)
    return None if distribution == OURS else distribution


def command_help(command: AicrCommand, name: str, provided_by: str | None = None) -> dict[str, Any]:
    doc = parse_doc(inspect.getdoc(type(command)) or "")
    parser = command.get_parser(f"{PROG} {name}")
    common_actions = [a for a in command.app.parser._actions if a.option_strings]  # as the app parses them
    common = {a.dest for a in common_actions}
    used = set(getattr(command, "uses_flags", ()))
    own = [a for a in parser._actions if a.option_strings and (a.dest not in common or a.dest in used)]
    positionals = [a for a in parser._actions if not a.option_strings]
    codes = _codes(doc.codes)
    listed = {c["code"] for c in codes}
    return {
        "command": name,
        "usage": " ".join([PROG, name, *(_usage_word(a) for a in positionals), "[flags]"]),
        "summary": doc.summary,
        "description": doc.description,
        "arguments": [{"name": str(a.metavar or a.dest), "help": help_text(a)} for a in positionals],
        "flags": [flag_entry(a) for a in sorted(own, key=_sort_key)],
        "globalFlags": [flag_entry(a) for a in common_actions if a.dest not in used and a.dest not in SCOPED_FLAGS],
        "examples": doc.examples,
        "codes": codes,
        "everyCommandCodes": [c.value for c in EVERY_COMMAND if c.value not in listed],
        "providedBy": provided_by,
        # What cliff CommandHooks (plugins adding flags to this command) say about themselves.
        "notes": [note for hook in command._hooks if hook.obj is not None and (note := hook.obj.get_epilog())],
    }


def flag_entry(action: argparse.Action) -> dict[str, str]:
    """`-o, --output NAME` and its help; long flags aligned whether or not they have a short form."""
    shorts = [o for o in action.option_strings if not o.startswith("--")]
    longs = [o for o in action.option_strings if o.startswith("--")]
    names = ", ".join(shorts + longs) if shorts else "    " + ", ".join(longs)
    if action.metavar:
        names += f" {action.metavar}"
    return {"flag": names, "help": help_text(action)}


def flag_line(action: argparse.Action) -> str:
    entry = flag_entry(action)
    return f"{entry['flag']:<32} {entry['help']}".rstrip()


def _usage_word(action: argparse.Action) -> str:
    word = str(action.metavar or action.dest)
    # An argument a fleet flag stands in for (ROLLOUT, for --plan) is required in the form shown.
    if action.nargs == "*":
        return f"[{word} ...]"
    return f"[{word}]" if action.nargs == "?" and not getattr(action, "fleet_alternative", None) else word


def _sort_key(action: argparse.Action) -> str:
    return max(action.option_strings, key=len)


def _meaning(code: str) -> str:
    try:
        return Code(code).meaning
    except ValueError:
        return ""


def _codes(lines: list[dict[str, str]]) -> list[dict[str, str]]:
    """The `Codes:` lines, meanings filled in from `Code`; `API` stands for the API codes not listed otherwise."""
    listed = {line["code"] for line in lines}
    codes = []
    for line in lines:
        if line["code"] == API_LINE:
            codes += [{"code": c.value, "meaning": c.meaning} for c in API_CODES if c.value not in listed]
        else:
            codes.append({"code": line["code"], "meaning": line["meaning"] or _meaning(line["code"])})
    return codes
