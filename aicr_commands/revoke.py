"""`kubectl aicr revoke ROLLOUT --reason TEXT`."""
from __future__ import annotations

import argparse

from aicr_commands import _fleet_forms as _fleet
from aicr_commands import _fleet_write
from aicr_commands import _rollout_args as _rollouts
from aicr_core import clock
from aicr_core.fleet import fan_out as fleet
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Result


class Revoke(AicrCommand):
    """Revoke a rollout's approval: the step in flight finishes, no further step starts.

    Refuses a rollout that is not approved, already revoked or has ended; the
    API server also refuses one in Validating.

    Examples:
      # Stop a rollout before its next step
      kubectl aicr revoke rollout-3f9a1c0d2b7e4a51-1 --reason "Training job not checkpointed"

      # See what would be written, and whether you may, without writing
      kubectl aicr revoke rollout-3f9a1c0d2b7e4a51-1 --reason "Not yet" --dry-run=client

    Codes:
      NOT_APPROVED
      ALREADY_REVOKED
      ENDED
      POLICY_DENIED
      POLICY_ERROR
      ADMISSION_DENIED  e.g. the rollout is in Validating
      CONFLICT
      NOT_FOUND
      API
    """

    uses_flags = ("reason", "operator_namespace", "override", "policy_file")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _rollouts.add_rollout_argument(parser, optional=True)
        _rollouts.add_dry_run_flag(parser)
        fleet.add_selection_flags(parser)
        fleet.add_plan_flags(parser, _fleet.complete_plans)

    def take_action(self, args: argparse.Namespace) -> Result:
        from aicr_core.domain.write_limits import check_reason
        if _fleet.plan_form(args, "revoke", args.rollout):
            return _fleet_write.fleet_write(self, args, "revoke")
        from aicr_core.domain import operator_api as api
        from aicr_core.domain.actions import REVOKE

        reason = check_reason(args, "revoke")
        session = _rollouts.RolloutWrite(args, REVOKE)
        revocation, written = session.run()
        return Result("Revocation", {"rollout": args.rollout, "user": revocation.user,
                                     "time": clock.format_time(revocation.time), "reason": reason, **written},
                      names=(api.rollout_reference(args.rollout),), warnings=tuple(session.warnings))
