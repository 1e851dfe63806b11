"""A submitted write form as the CLI's flags: the argv `kubectl aicr ACTION ROLLOUT ...` and its parser's flags.

Stands in for `aicr_core.framework.write_form.flags_from_form` (same signature) until that module
is on this branch: the form's `reason`, `expires` and `override` fields become the argv the CLI
would run, parsed by the write command's real parser (found by entry point, `aicr.commands`), so
the flags hold every key the command's parser has, as `kubectl aicr approve ...` gives them.
"""
from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from aicr_core.errors import UsageError, shown

OWN_FIELDS = {"reason": "--reason", "expires": "--expires", "override": "--override"}
PAGE_FIELDS = frozenset({"csrf", "action"})  # the page's own, never a flag of the write
MAX_OVERRIDES = 32


def flags_from_form(action_name: str, rollout: str,
                    form: Mapping[str, Sequence[str]]) -> tuple[list[str], dict[str, Any]]:
    argv = [action_name, rollout]
    unknown = sorted(set(form) - set(OWN_FIELDS) - PAGE_FIELDS)
    if unknown:
        raise UsageError(f"{action_name} has no field {shown(unknown[0])} (its fields: {', '.join(OWN_FIELDS)})")
    for name, flag in OWN_FIELDS.items():
        values = [v for v in form.get(name, ()) if v != ""]
        if len(values) > (MAX_OVERRIDES if name == "override" else 1):
            raise UsageError(f"the field {name} is given {len(values)} times")
        for value in values:
            argv += [flag, value]
    return argv, vars(command_parser(action_name).parse_args(argv[1:]))


def command_parser(action_name: str) -> argparse.ArgumentParser:
    """The real parser of the write command, as `kubectl aicr ACTION` builds it."""
    from aicr_core import entry_points
    from aicr_core.framework.app import PROG, AicrApp

    commands = entry_points.PluginGroup(entry_points.COMMANDS)
    if action_name not in commands:
        raise UsageError(f"no write command {shown(action_name)} is installed")
    command = commands.load(action_name)(AicrApp(), None, cmd_name=action_name)
    parser: argparse.ArgumentParser = command.get_parser(f"{PROG} {action_name}")
    return parser
