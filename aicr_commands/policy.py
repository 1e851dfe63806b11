"""`kubectl aicr policy check ROLLOUT` and `kubectl aicr policy validate FILE`."""
from __future__ import annotations

import argparse
from datetime import datetime

from aicr_commands import _fleet_forms as _fleet
from aicr_commands import _rollout_args as _rollouts
from aicr_core.errors import AicrError, Code, UsageError
from aicr_core.fleet import fan_out as fleet
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Result


class Policy(AicrCommand):
    """Explain what the approval policies say about a rollout, or validate a policy file.

    policy check ROLLOUT [--action approve|revoke|acknowledge] [--reason TEXT]
        [--expires DURATION] [--override POLICY] [--policy-file PATH]
      Runs the command's own refusals and every active policy exactly as the
      real command would, with the cluster's policy file (or --policy-file),
      and writes nothing. One line per policy: allow, warn, deny, overridden
      or error, with its message and the facts it used. Exit 1 when the real
      command would be refused. -o json is a decision record to archive.
      Flags that plugins add to approve (such as --ticket) are not available here.
      Without --reason, every policy runs but those that read the reason:
      they show as skipped, and the last line says so.

    policy check --plan DIGEST --contexts LIST|--all-contexts [flags as above]
      The same check in each selected cluster, of its open rollout to the
      plan; each cluster's output under a == CONTEXT == heading (-o json: a
      PolicyDecisionList). Exit 1 when any would refuse or any cluster failed.

    policy validate FILE
      Checks an ApprovalPolicy file against the schema and the installed
      policies, as every write would: exit 0 when it is valid, else
      [POLICY_ERROR] with the key path and what is wrong for each problem.
    """

    uses_flags = ("reason", "expires", "operator_namespace", "override", "policy_file")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from aicr_core.domain.operator_api import ACTION_NAMES  # the names of the actions, spelled once

        parser.add_argument("subcommand", metavar="check|validate", choices=("check", "validate"),
                            help="check a rollout, or validate a policy file")
        parser.add_argument("target", metavar="ROLLOUT|FILE", nargs="?",
                            help="check: the rollout; validate: the file")
        parser.add_argument("--action", choices=ACTION_NAMES, default="approve",
                            help="policy check: the command to check (default: %(default)s)")
        fleet.add_selection_flags(parser)
        fleet.add_plan_flags(parser, _fleet.complete_plans, yes=False)

    def take_action(self, args: argparse.Namespace) -> Result:
        if args.subcommand == "validate":
            fleet.refuse_fleet_flags(args, "policy validate")
            if args.target is None:
                raise UsageError("the following arguments are required: FILE")
            return validate(args.target)
        if _fleet.plan_form(args, "policy check", args.target):
            return self.check_across(args)
        return check(args)

    def check_across(self, args: argparse.Namespace) -> Result:
        """policy check of the plan's open rollout in each selected cluster."""
        from aicr_core.domain import rollouts

        check_inputs(args)
        if args.policy_file:  # a typo in its path fails before any cluster is asked
            rollouts.read_local_policy_file(args.policy_file)

        def single(turn: fleet.Turn) -> Result:
            rollout = _fleet.open_rollout(_fleet.plan_rollouts(turn.cluster, args.plan), args.plan)
            if rollout is None:
                raise AicrError(Code.NOT_FOUND, _fleet.no_open_rollout(args.plan))
            return _fleet.run_single(self, args, turn, target=rollout.name)

        return _fleet.gathered(self, _fleet.read(self, args, single), "PolicyDecisionList",
                               items_of=_fleet.whole_document)


def validate(path: str) -> Result:
    from aicr_core.domain import rollouts
    from aicr_core.domain.policy_engine import PolicyEngine, load_policies

    text, source = rollouts.read_local_policy_file(path)
    engine = PolicyEngine.build(load_policies(), text, source)
    error = engine.errors()
    if error is not None:
        raise error
    return Result("PolicyValidation", {
        "file": source, "valid": True, "digest": engine.digest,
        "policies": [{"name": s.name, "active": s.active, "mode": s.mode if s.active else None,
                      "overridable": s.overridable if s.active else None, "why": s.why}
                     for s in (engine.setups[n] for n in sorted(engine.setups))],
    })


def check(args: argparse.Namespace) -> Result:
    """The real command's path, without its write: the same refusals and the same `decide_write`."""
    from aicr_core import clock
    from aicr_core.domain import operator_api as api
    from aicr_core.domain.actions import ACTIONS
    from aicr_core.domain.policy_engine import without

    if args.target is None:
        raise UsageError("the following arguments are required: ROLLOUT")
    try:
        args.rollout = _rollouts.valid_rollout_name(args.target)
    except argparse.ArgumentTypeError as err:
        raise UsageError(str(err)) from None
    without_reason = args.action in ("approve", "revoke") and args.reason is None
    check_inputs(args)
    session = _rollouts.RolloutWrite(args, ACTIONS[args.action], writes=False)  # reads --policy-file first
    now = clock.now()
    try:
        value = session.propose(now)  # the real command's own refusals first
    except AicrError as err:
        if getattr(args, "fleet_session", None) is None:
            raise
        # Across clusters a refusal is that cluster's decision, not its failure: its item says so.
        return own_refusal(args, session, err, now, without_reason)
    if without_reason:  # a policy that reads the reason is skipped (NotGiven), never run on a placeholder
        value = without(value, "reason", "--reason TEXT")
    record = session.decision(value, now).record()
    me = session.me
    return Result("PolicyDecision", {"rollout": session.rollout.name, "user": {"username": me.username,
                                                                              "groups": list(me.groups)},
                                     "withoutReason": without_reason, **record},
                  names=(api.rollout_reference(session.rollout.name),), exit_code=0 if record["allowed"] else 1)


def check_inputs(args: argparse.Namespace) -> None:
    """The flags' bounds, checked before any request (in each cluster's run, and once before a fleet's)."""
    from aicr_core import clock
    from aicr_core.domain.write_limits import check_expires, check_reason

    if args.action in ("approve", "revoke") and args.reason is not None:  # without: the reason's policies skip
        check_reason(args, f"policy check --action {args.action}")
    if args.action == "approve":
        check_expires(args, clock.now())  # as approve checks it: before any API call


def own_refusal(args: argparse.Namespace, session: _rollouts.RolloutWrite, err: AicrError, now: datetime,
                without_reason: bool) -> Result:
    """The real command's own refusal (NOT_APPROVED, ENDED, ...) as a decision: no policy ran, none was read."""
    from aicr_core import clock
    from aicr_core.domain import operator_api as api

    me = session.me
    return Result("PolicyDecision", {
        "rollout": session.rollout.name, "user": {"username": me.username, "groups": list(me.groups)},
        "withoutReason": without_reason, "action": args.action, "time": clock.format_time(now),
        "policyFile": None, "allowed": False, "code": str(err.code), "message": err.message,
        "errors": list(err.details), "overrideProblems": [], "policies": []},
        names=(api.rollout_reference(session.rollout.name),), exit_code=1)
