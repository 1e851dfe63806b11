"""`kubectl aicr wait ROLLOUT --for CONDITION [--timeout DURATION]`."""
from __future__ import annotations

import argparse
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from aicr_commands import _rollout_args as _rollouts
from aicr_core.errors import AicrError, Code, UsageError
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Progress, Result, Stream
from aicr_core.go_duration import parse_duration

if TYPE_CHECKING:  # the domain is imported when the command runs, so that `help` stays fast
    from aicr_core.domain.wait_conditions import WaitCondition
    from aicr_core.session.kube import KubeSession

DEFAULT_TIMEOUT = "10m"


class Wait(AicrCommand):
    """Wait until a rollout meets a condition; print each phase change on stderr as it happens.

    CONDITION is one of:
      approval         someone has approved (spec.approval is set, whatever
                       happened to it since)
      acknowledgement  the release the rollout awaits in AwaitingAcknowledgement
                       has been acknowledged (the first acknowledgement of an
                       awaited release seen while waiting, or already there)
      approved         approved, not revoked, and the approval has not expired:
                       what lets the operator proceed
      ended            the rollout has ended (any outcome)
      phase=PHASE      status.phase is PHASE (Pending, AwaitingApproval,
                       Progressing, AwaitingAcknowledgement, Validating, Ended)

    Exits 0 as soon as the condition holds (at once if it already does) and
    prints one line on stdout. Fails with ENDED when the rollout ends without
    meeting it, with UNREACHABLE at once when it can never hold (approval or
    approved for a rollout that needs no approval; approved once the approval
    is revoked or expired), with TIMEOUT after --timeout. Uses the watch API
    from the version it read, survives 410 Gone and dropped connections by
    reading again; never polls.

    Examples:
      # Block a script until someone approves, for at most an hour
      kubectl aicr wait rollout-3f9a1c0d2b7e4a51-1 --for approval --timeout 1h

      # Get back to me when the rollout needs an acknowledgement
      kubectl aicr wait rollout-3f9a1c0d2b7e4a51-1 --for phase=AwaitingAcknowledgement

      # Wait for the end, whatever the outcome; the outcome is in the JSON
      kubectl aicr wait rollout-3f9a1c0d2b7e4a51-1 --for ended -o json

    Codes:
      TIMEOUT      the condition did not hold within --timeout
      ENDED        the rollout ended without meeting the condition
      UNREACHABLE  the condition can never hold
      NOT_FOUND    no such rollout, or it was deleted while waiting
      FORBIDDEN    you may not get or watch rollouts
      UNAVAILABLE  the API server stayed unreachable for 30 seconds
      API
    """

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _rollouts.add_rollout_argument(parser)
        action = parser.add_argument(
            "--for", dest="condition", metavar="CONDITION", type=parse_condition,
            help="approval, acknowledgement, approved, ended or phase=PHASE (required)")
        action.completer = complete_condition  # type: ignore[attr-defined]
        parser.add_argument("--timeout", metavar="DURATION", type=parse_duration, default=DEFAULT_TIMEOUT,
                            help="give up after this long (Go duration; default %(default)s; 0: check once)")

    def take_action(self, args: argparse.Namespace) -> Stream:
        from aicr_core.session.deadline import Deadline

        if args.condition is None:
            raise AicrError(Code.USAGE, "wait needs --for CONDITION (approval, acknowledgement, approved, "
                                        "ended or phase=PHASE)")
        seconds = args.timeout.total_seconds()
        if seconds < 0:
            raise AicrError(Code.USAGE, f"--timeout {args.timeout.text} must not be negative")
        # --timeout 0 checks once, within the command's usual deadline.
        cluster = _rollouts.session(args, Deadline(seconds) if seconds > 0 else None)
        return Stream(wait(cluster, args.rollout, args.condition, timedelta(seconds=seconds)))


def parse_condition(text: str) -> WaitCondition:
    """--for's type: the domain's condition (`wait_conditions`), imported only when --for is given (help
    builds parsers, never parses)."""
    from aicr_core.domain.wait_conditions import parse_condition as parse

    try:
        return parse(text)
    except UsageError as err:
        raise argparse.ArgumentTypeError(err.message) from None


def complete_condition(prefix: str, **_: object) -> list[str]:
    from aicr_core.domain.wait_conditions import condition_names

    return [c for c in condition_names() if c.startswith(prefix)]


def wait(cluster: KubeSession, name: str, condition: WaitCondition, timeout: timedelta) -> Iterator[Result | Progress]:
    """The rollout's phase changes as Progress lines, then one Result when the condition holds
    (the domain's `wait_for` follows the rollout and decides)."""
    from aicr_core.domain import operator_api as api
    from aicr_core.domain.wait_conditions import wait_for

    phase = None
    try:
        for step in wait_for(cluster, name, condition, once=timeout.total_seconds() <= 0):
            rollout = step.rollout
            if phase is not None and rollout.phase != phase:
                yield Progress(f"{datetime.now().strftime('%H:%M:%S')} {phase} -> {rollout.phase}")
            phase = rollout.phase
            if step.met:
                yield Result("ConditionMet", {"rollout": name, "condition": condition.name, "phase": rollout.phase,
                                              "outcome": rollout.outcome or None},
                             names=(api.rollout_reference(name),))
                return
    except AicrError as err:
        if err.code != Code.TIMEOUT:
            raise
    raise AicrError(Code.TIMEOUT, f"rollout {name}: {condition.name} not met within {go_duration(timeout)}"
                                  + (f" (phase {phase})" if phase else ""))


def go_duration(d: timedelta) -> str:
    """As Go prints a duration: 10m0s, 1h0m0s, 2s, 1.5s."""
    seconds = d.total_seconds()
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:g}s"
    if hours or minutes:
        text = f"{int(minutes)}m{int(secs)}s" if secs == int(secs) else f"{int(minutes)}m{secs:g}s"
    if hours:
        text = f"{int(hours)}h{text}"
    return text
