"""`kubectl aicr revoke ROLLOUT --reason TEXT`."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from aicr_commands import _fleet, _fleet_write, _rollouts
from aicr_core import clock, fleet
from aicr_core.command import AicrCommand
from aicr_core.errors import AicrError, Code
from aicr_core.flags import check_reason
from aicr_core.result import Result

if TYPE_CHECKING:
    from aicr_core import operator_api as api  # imported when the command runs, so `help` stays fast


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
      FORBIDDEN
      ADMISSION_DENIED  e.g. the rollout is in Validating
      CONFLICT
      NOT_FOUND
      KUBECONFIG
      UNAUTHORIZED
      TIMEOUT
      UNAVAILABLE
      INVALID_OBJECT
    """

    uses_flags = ("reason", "operator_namespace", "override", "policy_file")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _rollouts.add_rollout_argument(parser, optional=True)
        _rollouts.add_dry_run_flag(parser)
        fleet.add_selection_flags(parser)
        fleet.add_plan_flags(parser, _fleet.complete_plans)

    def take_action(self, args: argparse.Namespace) -> Result:
        if _fleet.plan_form(args, "revoke", args.rollout):
            return _fleet_write.fleet_write(self, args, "revoke")
        from aicr_core import operator_api as api

        reason = check_reason(args, "revoke")
        session = _rollouts.RolloutWrite(args, "revoke")
        rollout = session.rollout
        refuse_revocation(rollout)
        revocation = api.Revocation(session.me.username, clock.now(), reason)
        session.check_policies("aicr_pre_revoke", revocation.time, revocation=revocation)
        written = session.write(api.revocation_patch(rollout, revocation), lost_race)
        return Result("Revocation", {"rollout": rollout.name, "user": revocation.user,
                                     "time": clock.format_time(revocation.time), "reason": reason, **written},
                      names=(api.rollout_reference(rollout.name),), warnings=tuple(session.warnings))


def refuse_revocation(rollout: api.Rollout) -> None:
    if rollout.ended:
        raise AicrError(Code.ENDED, f"rollout {rollout.name} has ended ({rollout.outcome or 'no outcome'})")
    if rollout.revocation is not None:
        raise already_revoked(rollout)
    if rollout.approval is None:
        raise AicrError(Code.NOT_APPROVED, f"rollout {rollout.name} is not approved; there is nothing to revoke")


def already_revoked(rollout: api.Rollout) -> AicrError:
    assert rollout.revocation is not None
    return AicrError(Code.ALREADY_REVOKED, f"rollout {rollout.name} was already revoked by "
                     f"{rollout.revocation.user} at {clock.format_time(rollout.revocation.time)}")


def lost_race(current: api.Rollout) -> AicrError:
    if current.revocation is not None:
        return already_revoked(current)
    return AicrError(Code.CONFLICT, f"rollout {current.name} changed while revoking (now {current.phase}); "
                     "nothing was written, run the command again")
