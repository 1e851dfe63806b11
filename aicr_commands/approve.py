"""`kubectl aicr approve ROLLOUT --reason TEXT [--expires DURATION]`."""
from __future__ import annotations

import argparse

from aicr_commands import _fleet_forms as _fleet
from aicr_commands import _fleet_write
from aicr_commands import _rollout_args as _rollouts
from aicr_core import clock
from aicr_core.fleet import fan_out as fleet
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Result, Stream


class Approve(AicrCommand):
    """Approve a rollout as yourself, until --expires or its deadline.

    Asks the API server who you are, refuses a rollout that has ended, is already
    approved or needs no approval (and, without --expires, one whose deadline has
    passed), runs every pre-approve policy, then writes spec.approval once.
    An approval can be neither changed nor extended.

    Examples:
      # Approve until the rollout's deadline
      kubectl aicr approve rollout-3f9a1c0d2b7e4a51-1 --reason "Maintenance window CHG-1234"

      # Check everything, the API server's admission included, without writing
      kubectl aicr approve rollout-3f9a1c0d2b7e4a51-1 --reason "Maintenance window" --dry-run=server

      # One plan in every cluster of the kubeconfig for 4 hours (or canary first: --waves FILE)
      kubectl aicr approve --all-contexts --plan sha256:<64 hex> --reason "CHG-4711" --expires 4h --yes

    Codes:
      ENDED
      ALREADY_APPROVED
      APPROVAL_NOT_REQUIRED
      DEADLINE_PASSED
      POLICY_DENIED
      POLICY_ERROR
      ADMISSION_DENIED
      CONFLICT
      NOT_FOUND
      API
    """

    uses_flags = ("reason", "expires", "operator_namespace", "override", "policy_file")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _rollouts.add_rollout_argument(parser, waiting_first=True, optional=True)
        _rollouts.add_dry_run_flag(parser)
        fleet.add_selection_flags(parser)
        fleet.add_plan_flags(parser, _fleet.complete_plans, waves=True)

    def take_action(self, args: argparse.Namespace) -> Result | Stream:
        from aicr_core.domain.write_limits import check_expires, check_reason
        if _fleet.plan_form(args, "approve", args.rollout):
            if args.waves is not None:
                from aicr_commands import _approve_in_waves as _waves

                return _waves.approve_in_waves(self, args)
            return _fleet_write.fleet_write(self, args, "approve")
        from aicr_core.domain import operator_api as api
        from aicr_core.domain.actions import APPROVE

        reason = check_reason(args, "approve")
        check_expires(args, clock.now())  # a negative or unstorable --expires: before any API call
        session = _rollouts.RolloutWrite(args, APPROVE)
        approval, written = session.run()
        return Result("Approval", {"rollout": args.rollout, "user": approval.user,
                                   "expires": clock.format_time(approval.expires), "reason": reason, **written},
                      names=(api.rollout_reference(args.rollout),), warnings=tuple(session.warnings))
