"""`kubectl aicr describe ROLLOUT`: everything an approver decides on."""
from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import TYPE_CHECKING

from aicr_commands import _rollout_args as _rollouts
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.common_flags import BoolFlag
from aicr_core.framework.result import Result, Stream

if TYPE_CHECKING:
    from aicr_core.session.kube import KubeSession


class Describe(AicrCommand):
    """Show a rollout: transition, approval, steps, AICR's assessment, recorded steps, acknowledgements.

    The assessment report is read from the operator namespace and shown only
    when its sha256 matches the digest the rollout records. With --watch the
    description is printed again after each change of the rollout (redrawn in
    place on a terminal, else after a `---` line) until the rollout ends.

    Examples:
      # Everything an approver decides on
      kubectl aicr describe rollout-3f9a1c0d2b7e4a51-1

      # Follow it until it ends
      kubectl aicr describe rollout-3f9a1c0d2b7e4a51-1 --watch

      # The same data for a script
      kubectl aicr describe rollout-3f9a1c0d2b7e4a51-1 -o json

    Codes:
      NOT_FOUND
      TIMEOUT      (without --watch, which runs until the rollout ends)
      API
    """

    uses_flags = ("operator_namespace",)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _rollouts.add_rollout_argument(parser)
        parser.add_argument("-w", "--watch", action="store_true",
                            help="print again after each change of the rollout, until it ends (Ctrl-C stops)")
        parser.add_argument("--show-events", action=BoolFlag, default=True,
                            help="end with the rollout's recent Events, as the admission webhook records them "
                                 "(default true; --show-events=false leaves them out; not with --watch)")

    def take_action(self, args: argparse.Namespace) -> Result | Stream:
        if args.watch:
            import math

            from aicr_core.session.deadline import Deadline

            return Stream(watch(_rollouts.session(args, Deadline(math.inf)), args))
        from aicr_core.domain import operator_api as api
        from aicr_core.domain.rollout_description import describe_rollout

        description = describe_rollout(_rollouts.session(args), args.rollout, args.operator_namespace,
                                       events=args.show_events)
        return Result("RolloutDescription", description, names=(api.rollout_reference(args.rollout),))


def watch(cluster: KubeSession, args: argparse.Namespace) -> Iterator[Result]:
    """The description now, then after each change of the rollout (watch API), until it has ended."""
    from aicr_core.domain import operator_api as api
    from aicr_core.domain.rollout_description import follow_description

    for description in follow_description(cluster, args.rollout, args.operator_namespace):
        yield Result("RolloutDescription", description, names=(api.rollout_reference(description["rollout"]),))
