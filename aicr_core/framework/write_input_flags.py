"""A site's declared write inputs as flags of the write commands (`--ticket ID` on approve).

Added after every other flag of the command (its own, the common ones, its hooks'), so that a
declaration taking a name the command already has is caught here and refused as the plugin's
error, naming it, rather than shadowing the flag or crashing argparse. Like any flag, an input is
accepted before or after the command name, completed by the shell and shown by `help`.
"""
from __future__ import annotations

import argparse

from aicr_core.errors import AicrError, Code


def add_input_flags(parser: argparse.ArgumentParser, action_name: str | None) -> None:
    """One flag per input declared for `action_name` (None: for any write, as `policy check --action` takes),
    in a group of its own; PLUGIN_ERROR for a name taken."""
    from aicr_core.write_inputs import declarations

    mine = [d for d in declarations() if action_name is None or action_name in d.input.actions]
    if not mine:
        return
    command = action_name or getattr(parser, "command_name", None) or parser.prog
    taken = {a.dest for a in parser._actions} | {o for a in parser._actions for o in a.option_strings}
    group = parser.add_argument_group("a site's inputs of this write (plugins: aicr.write_inputs)")
    for declared in mine:
        item = declared.input
        if item.flag in taken or item.dest in taken:  # the dest too: `rollout` would overwrite ROLLOUT's value
            what = f"{item.flag} is a flag" if item.flag in taken else f"{item.dest} is an argument's name"
            raise AicrError(Code.PLUGIN_ERROR, f"{declared.plugin}: {what} {command} already has; a write "
                            "input needs a name of its own")
        required = " (required)" if item.required else ""
        if action_name is None:
            required += f" ({', '.join(item.actions)})"
        group.add_argument(item.flag, dest=item.dest, metavar=item.metavar,
                           help=f"{item.help}{required}; at most {item.max_length} characters".replace("%", "%%"))
