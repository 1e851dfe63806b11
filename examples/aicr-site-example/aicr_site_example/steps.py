"""`kubectl aicr steps ROLLOUT`: a rollout's phase and steps, read as the built-in commands read it (a site command)."""
from __future__ import annotations

import argparse

from aicr_core.plugin import AicrCommand, Result


class ShowSteps(AicrCommand):
    """Show a rollout's phase and its steps: release, operation, assessment and state.

    One GET of the rollout, read into the same `Rollout` value the approval
    policies receive; changes nothing. A rollout that does not exist is
    `[NOT_FOUND] rollout NAME not found`, as `kubectl aicr describe` says it.

    Examples:
      # The steps of one rollout
      kubectl aicr steps rollout-3f9a1c0d2b7e4a51-1

      # Only its name, as kubectl's -o name prints it
      kubectl aicr steps rollout-3f9a1c0d2b7e4a51-1 -o name

    Codes:
      NOT_FOUND  no rollout of that name
      KUBECONFIG
      FORBIDDEN  you may not read rollouts
      UNAVAILABLE
    """

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("rollout", metavar="ROLLOUT", help="the RuntimeRollout's name")

    def take_action(self, args: argparse.Namespace) -> Result:
        from aicr_core.plugin import (  # the Kubernetes client: loaded when run, not when `help` lists commands
            connect_args,
            read_rollout,
            rollout_reference,
        )

        rollout = read_rollout(connect_args(args), args.rollout)  # a Rollout, or [NOT_FOUND] rollout NAME not found
        steps = [{"release": s.release, "operation": s.operation, "assessment": s.verdict or None, "state": s.state}
                 for s in rollout.steps]
        return Result("RolloutSteps", {"rollout": rollout.name, "phase": rollout.phase, "steps": steps},
                      names=(rollout_reference(rollout.name),))  # a tuple of strings: what `-o name` prints
