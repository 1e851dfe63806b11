"""A submitted write form, turned into exactly what the CLI would have run: its argv and its parsed flags.

A page (the approver's dashboard) offers a write as a form: `reason`, `expires`, `override`
(repeatable) and each input a site declares for the action (aicr_core.write_inputs: `ticket`). So
that the policies decide on the same input from the page as from the command line, the form becomes
the argv the CLI would run, and that argv is parsed by the write command's real parser (found by
entry point, `aicr.commands`): the flags hold every key the command's parser has, with its
defaults, exactly as `kubectl aicr approve ...` gives them to `write_request`.
"""
from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

from aicr_core.errors import UsageError, shown

# The write's own fields, in the order the argv gives them, and their flags.
OWN_FIELDS = {"reason": "--reason", "expires": "--expires", "override": "--override"}
REPEATABLE = frozenset({"override"})
PAGE_FIELDS = frozenset({"csrf"})  # the page's own (checked by the page), never a flag of the write
MAX_VALUES = 32  # of one repeatable field


def flags_from_form(action_name: str, rollout: str,
                    form: Mapping[str, Sequence[str]]) -> tuple[list[str], dict[str, Any]]:
    """The argv `kubectl aicr ACTION ROLLOUT ...` the form stands for, and the flags its parser makes of it.

    `form`: field name -> the values submitted (as urllib.parse.parse_qs gives them); an empty value is a
    field left blank, as if not given; `csrf` is the page's and is skipped. [USAGE] for a field the
    write does not have, a value given twice (but `override`), a rollout name that is no name, and
    whatever the command's parser refuses. The flags are for `write_request(flags, action, rollout)`.
    """
    argv = argv_from_form(action_name, rollout, form)
    return argv, vars(command_parser(action_name).parse_args(argv[1:]))


def argv_from_form(action_name: str, rollout: str, form: Mapping[str, Sequence[str]]) -> list[str]:
    """The argv alone: the write's own fields first, then the declared inputs, by name; only those given."""
    from aicr_core.write_inputs import declared_inputs

    if not isinstance(rollout, str) or not rollout or rollout.startswith("-"):
        raise UsageError(f"{action_name} needs a rollout's name, not {shown(rollout)}")
    declared = {item.name: item.flag for item in declared_inputs(action_name)}
    fields = {**OWN_FIELDS, **declared}
    unknown = sorted(set(form) - set(fields) - PAGE_FIELDS)
    if unknown:
        raise UsageError(f"{action_name} has no field {shown(unknown[0])} (its fields: {', '.join(fields)})")
    argv = [action_name, rollout]
    for name, flag in fields.items():
        values = [v for v in _values(form.get(name, ()), name) if v != ""]
        if len(values) > (MAX_VALUES if name in REPEATABLE else 1):
            raise UsageError(f"the field {name} is given {len(values)} times"
                             + (f"; at most {MAX_VALUES}" if name in REPEATABLE else "; once at most"))
        for value in values:
            argv += [flag, value]
    return argv


def _values(values: Sequence[str], name: str) -> list[str]:
    if isinstance(values, str) or not all(isinstance(v, str) for v in values):
        raise UsageError(f"the field {name} takes a list of texts")
    return list(values)


def command_parser(action_name: str) -> argparse.ArgumentParser:
    """The real parser of the write command `action_name`, as `kubectl aicr ACTION` builds it (its hooks' flags
    and the declared inputs included)."""
    from aicr_core import entry_points
    from aicr_core.framework.app import PROG, AicrApp

    commands = entry_points.PluginGroup(entry_points.COMMANDS)
    if action_name not in commands:
        raise UsageError(f"no write command {shown(action_name)} is installed")
    command = commands.load(action_name)(AicrApp(), None, cmd_name=action_name)
    parser: argparse.ArgumentParser = command.get_parser(f"{PROG} {action_name}")
    return parser
