"""`kubectl aicr acknowledge ROLLOUT`."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from aicr_commands import _fleet, _fleet_write, _rollouts
from aicr_core import clock, fleet
from aicr_core.command import AicrCommand
from aicr_core.errors import AicrError, Code
from aicr_core.result import Result

if TYPE_CHECKING:
    from aicr_core import operator_api as api  # imported when the command runs, so `help` stays fast


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

    uses_flags = ("operator_namespace", "override", "policy_file")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _rollouts.add_rollout_argument(parser, waiting_first=True, optional=True)
        _rollouts.add_dry_run_flag(parser)
        fleet.add_selection_flags(parser)
        fleet.add_plan_flags(parser, _fleet.complete_plans)

    def take_action(self, args: argparse.Namespace) -> Result:
        if _fleet.plan_form(args, "acknowledge", args.rollout):
            return _fleet_write.fleet_write(self, args, "acknowledge")
        from aicr_core import operator_api as api

        session = _rollouts.RolloutWrite(args, "acknowledge")
        rollout = session.rollout
        release = awaited_release(rollout)
        ack = api.Acknowledgement(release, session.me.username, clock.now())
        session.check_policies("aicr_pre_acknowledge", ack.time, acknowledgement=ack)
        written = session.write(api.acknowledgement_patch(rollout, ack), lost_race)
        return Result("Acknowledgement", {"rollout": rollout.name, "release": release, "user": ack.user,
                                          "time": clock.format_time(ack.time), **written},
                      names=(api.rollout_reference(rollout.name),), warnings=tuple(session.warnings))


def awaited_release(rollout: api.Rollout) -> str:
    if not rollout.awaiting_acknowledgement or not rollout.awaiting_release:
        raise AicrError(Code.NOT_AWAITING_ACKNOWLEDGEMENT,
                        f"rollout {rollout.name} is not awaiting an acknowledgement (phase {rollout.phase})")
    done = [a for a in rollout.acknowledgements if a.release == rollout.awaiting_release]
    if done:
        raise AicrError(Code.NOT_AWAITING_ACKNOWLEDGEMENT,
                        f"rollout {rollout.name}: {done[0].release} was already acknowledged by {done[0].user}; "
                        "the operator has yet to continue")
    return rollout.awaiting_release


def lost_race(current: api.Rollout) -> AicrError:
    mine = [a for a in current.acknowledgements if a.release == current.awaiting_release]
    if not current.awaiting_acknowledgement or mine:
        who = f" by {mine[0].user}" if mine else ""
        return AicrError(Code.NOT_AWAITING_ACKNOWLEDGEMENT,
                         f"rollout {current.name} was acknowledged{who} or moved on meanwhile (now {current.phase})")
    return AicrError(Code.CONFLICT, f"rollout {current.name} changed while acknowledging; "
                     "nothing was written, run the command again")
