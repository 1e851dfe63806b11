"""`kubectl aicr acknowledge ROLLOUT`."""
from __future__ import annotations

import argparse

from aicr_commands import _fleet_forms as _fleet
from aicr_commands import _fleet_write
from aicr_commands import _rollout_args as _rollouts
from aicr_core import clock
from aicr_core.fleet import fan_out as fleet
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Result


class Acknowledge(AicrCommand):
    """Record, as yourself, that the post-apply steps of the release a rollout waits on are done.

    Only for a rollout in AwaitingAcknowledgement; approvers only (the API
    server checks). The rollout then continues.

    Examples:
      # After doing the release's after-apply steps
      kubectl aicr acknowledge rollout-3f9a1c0d2b7e4a51-1

      # Which steps are those? describe lists them under "Recorded steps"
      kubectl aicr describe rollout-3f9a1c0d2b7e4a51-1

    Codes:
      NOT_AWAITING_ACKNOWLEDGEMENT
      POLICY_DENIED
      POLICY_ERROR
      ADMISSION_DENIED
      CONFLICT
      NOT_FOUND
      API
    """

    uses_flags = ("operator_namespace", "override", "policy_file")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _rollouts.add_rollout_argument(parser, waiting_first=True, optional=True)
        _rollouts.add_dry_run_flag(parser)
        fleet.add_selection_flags(parser)
        fleet.add_plan_flags(parser, _fleet.complete_plans)

    def take_action(self, args: argparse.Namespace) -> Result:
        if _fleet.plan_form(args, "acknowledge", args.rollout):
            return _fleet_write.fleet_write(self, args, "acknowledge")
        from aicr_core.domain import operator_api as api
        from aicr_core.domain.actions import ACKNOWLEDGE

        session = _rollouts.RolloutWrite(args, ACKNOWLEDGE)
        ack, written = session.run()
        return Result("Acknowledgement", {"rollout": args.rollout, "release": ack.release, "user": ack.user,
                                          "time": clock.format_time(ack.time), **written},
                      names=(api.rollout_reference(args.rollout),), warnings=tuple(session.warnings))
