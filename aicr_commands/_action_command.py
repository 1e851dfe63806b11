"""The one command class of approve, revoke and acknowledge: configured by its `Action`.

Each of those commands is this class with its Action and its help (the class
docstring). What the command does is the domain's (`aicr_core.domain.rollout_write`):
it turns its flags into a `WriteRequest`, and what is written into its `Result`.
A site's declared inputs of the action (aicr_core.write_inputs: `--ticket ID`) are flags of it too,
applied with the others in the one request every write is built from.
`--plan DIGEST` runs the same write in each selected cluster (`aicr_core.fleet.plan_write`;
with `--waves FILE`, `aicr_core.fleet.wave_runner`), through the fleet's command-line side
(`aicr_core.fleet.flags`).

Imported by `help` for the summary: nothing heavy at module level (the table is light).
"""
from __future__ import annotations

import argparse
from typing import Any, ClassVar

from aicr_commands import _fleet_forms
from aicr_commands import _rollout_args as _rollouts
from aicr_core.domain.actions import Action
from aicr_core.fleet import flags as fleet
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Result, Stream


class ActionCommand(AicrCommand):
    """approve|revoke|acknowledge ROLLOUT (a subclass names its Action and carries its help)."""

    action: ClassVar[Action]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        action: Action | None = cls.__dict__.get("action")
        if action is not None:  # the common flags it reads follow from what the action takes
            cls.uses_flags = (("reason",) * action.takes_reason + ("expires",) * action.takes_expires
                              + ("operator_namespace", "override", "policy_file"))

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _rollouts.add_rollout_argument(parser, waiting_first=self.action.waiting_first, optional=True)
        _rollouts.add_dry_run_flag(parser)
        fleet.add_selection_flags(parser)
        fleet.add_plan_flags(parser, _fleet_forms.complete_plans, waves=self.action.in_waves)

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        """The command's flags, and after all of them a site's declared inputs of this action (`--ticket ID`)."""
        from aicr_core.framework.write_input_flags import add_input_flags

        parser = super().get_parser(prog_name)
        add_input_flags(parser, self.action.name)
        return parser

    def take_action(self, args: argparse.Namespace) -> Result | Stream:
        action = self.action
        if _fleet_forms.plan_form(args, action.name, args.rollout):
            if action.in_waves and args.waves is not None:
                return fleet.approve_in_waves(self, args)
            return fleet.fleet_write(self, args, action)
        from aicr_core.domain import operator_api as api
        from aicr_core.domain.rollout_write import write
        from aicr_core.domain.write_flags import write_request

        request = write_request(vars(args), action, args.rollout)  # the flags' bounds: before any call
        written = write(_rollouts.session(args), request)
        return Result(action.result_kind, written.data, names=(api.rollout_reference(args.rollout),),
                      warnings=written.warnings)
