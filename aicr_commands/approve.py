"""`kubectl aicr approve ROLLOUT --reason TEXT [--expires DURATION]`."""
from __future__ import annotations

import argparse
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from aicr_commands import _fleet, _fleet_write, _rollouts
from aicr_core import clock, fleet
from aicr_core.command import AicrCommand
from aicr_core.errors import AicrError, Code
from aicr_core.flags import check_expires, check_reason
from aicr_core.result import Result, Stream

if TYPE_CHECKING:
    from aicr_core import operator_api as api  # imported when the command runs, so `help` stays fast


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
      FORBIDDEN
      ADMISSION_DENIED
      CONFLICT
      NOT_FOUND
      KUBECONFIG
      UNAUTHORIZED
      TIMEOUT
      UNAVAILABLE
      INVALID_OBJECT
    """

    uses_flags = ("reason", "expires", "operator_namespace", "override", "policy_file")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _rollouts.add_rollout_argument(parser, waiting_first=True, optional=True)
        _rollouts.add_dry_run_flag(parser)
        fleet.add_selection_flags(parser)
        fleet.add_plan_flags(parser, _fleet.complete_plans, waves=True)

    def take_action(self, args: argparse.Namespace) -> Result | Stream:
        if _fleet.plan_form(args, "approve", args.rollout):
            if args.waves is not None:
                from aicr_commands import _waves

                return _waves.approve_in_waves(self, args)
            return _fleet_write.fleet_write(self, args, "approve")
        from aicr_core import operator_api as api

        reason = check_reason(args, "approve")
        check_expires(args, clock.now())  # a negative or unstorable --expires: before any API call
        session = _rollouts.RolloutWrite(args, "approve")
        rollout = session.rollout
        expires, now = args.expires.delta if args.expires is not None else None, clock.now()
        approval = api.Approval(session.me.username, approval_expiry(rollout, expires, now), reason)
        session.check_policies("aicr_pre_approve", now, approval=approval)
        written = session.write(api.approval_patch(rollout, approval), lost_race)
        return Result("Approval", {"rollout": rollout.name, "user": approval.user,
                                   "expires": clock.format_time(approval.expires), "reason": reason, **written},
                      names=(api.rollout_reference(rollout.name),), warnings=tuple(session.warnings))


def approval_expiry(rollout: api.Rollout, expires: timedelta | None, now: datetime) -> datetime:
    """When the approval ends; raises the upstream refusals in the order a user expects them."""
    if rollout.ended:
        raise AicrError(Code.ENDED, f"rollout {rollout.name} has ended ({rollout.outcome or 'no outcome'})")
    if not rollout.approval_required:
        raise AicrError(Code.APPROVAL_NOT_REQUIRED, f"rollout {rollout.name} needs no approval")
    if rollout.approval is not None:
        raise already_approved(rollout)
    if expires is not None:
        return now + expires
    if rollout.deadline is None:
        raise AicrError(Code.INVALID_OBJECT, f"rollout {rollout.name} records no deadline; pass --expires")
    if rollout.deadline <= now:
        raise AicrError(Code.DEADLINE_PASSED, f"rollout {rollout.name}'s deadline "
                        f"{clock.format_time(rollout.deadline)} has passed; pass --expires to approve anyway")
    return rollout.deadline


def already_approved(rollout: api.Rollout) -> AicrError:
    """An approval is set once: say whose it is, and whether it was revoked since (and by whom)."""
    assert rollout.approval is not None
    if rollout.revocation is not None:
        return AicrError(Code.ALREADY_APPROVED, f"rollout {rollout.name} was approved by {rollout.approval.user} "
                         f"and revoked by {rollout.revocation.user} at "
                         f"{clock.format_time(rollout.revocation.time)}; an approval cannot be given again")
    return AicrError(Code.ALREADY_APPROVED, f"rollout {rollout.name} is already approved by "
                     f"{rollout.approval.user} until {clock.format_time(rollout.approval.expires)}")


def lost_race(current: api.Rollout) -> AicrError:
    if current.approval is not None:
        return already_approved(current)
    return AicrError(Code.CONFLICT, f"rollout {current.name} changed while approving (now {current.phase}); "
                     "nothing was written, run the command again")
