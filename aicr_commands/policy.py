"""`kubectl aicr policy check ROLLOUT` and `kubectl aicr policy validate FILE`."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from aicr_commands import _fleet_forms as _fleet
from aicr_commands import _rollout_args as _rollouts
from aicr_core.errors import AicrError, Code, UsageError
from aicr_core.fleet import fan_out as fleet
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Result

if TYPE_CHECKING:
    from aicr_core.domain.rollout_write import WriteRequest
    from aicr_core.session.kube import KubeSession


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
        from aicr_core.domain.actions import ACTIONS, APPROVE  # the table: light enough for `help`

        parser.add_argument("subcommand", metavar="check|validate", choices=("check", "validate"),
                            help="check a rollout, or validate a policy file")
        parser.add_argument("target", metavar="ROLLOUT|FILE", nargs="?",
                            help="check: the rollout; validate: the file")
        parser.add_argument("--action", choices=tuple(ACTIONS), default=APPROVE.name,
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
        if args.target is None:
            raise UsageError("the following arguments are required: ROLLOUT")
        request = check_request(args, target_name(args.target))  # the flags' bounds: before any request
        return check(_rollouts.session(args), request)

    def take_action_on(self, args: argparse.Namespace, session: KubeSession) -> Result:
        """policy check of the rollout `args.target` in one cluster of a fleet, on its session: the
        command's own refusal is that cluster's decision there, not its failure."""
        return check(session, check_request(args, args.target), own_refusal_decides=True)

    def check_across(self, args: argparse.Namespace) -> Result:
        """policy check of the plan's open rollout in each selected cluster."""
        check_request(args, "")  # the flags' bounds and --policy-file's path fail before any cluster is asked

        def single(turn: fleet.Turn) -> Result:
            rollout = _fleet.open_rollout(_fleet.plan_rollouts(turn.session, args.plan), args.plan)
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


def target_name(target: str) -> str:
    try:
        return _rollouts.valid_rollout_name(target)
    except argparse.ArgumentTypeError as err:
        raise UsageError(str(err)) from None


def check_request(args: argparse.Namespace, rollout: str) -> WriteRequest:
    """The write `policy check` decides on: --action's, with its flags (--reason may be left out)."""
    from aicr_core.domain.actions import ACTIONS

    action = ACTIONS[args.action]
    return _rollouts.write_request(args, action, rollout, checking=f"policy check --action {action.name}")


def check(session: KubeSession, request: WriteRequest, own_refusal_decides: bool = False) -> Result:
    """The real command's path, without its write: the same refusals and the same decision.

    The command's own refusal (NOT_APPROVED, ENDED, ...) is raised, unless `own_refusal_decides` (across
    clusters): then it is the decision, with no policy run and none read.
    """
    from aicr_core.domain import operator_api as api
    from aicr_core.domain.rollout_write import decide_on_cluster

    decided = decide_on_cluster(session, request)
    decision, me = decided.decision, decided.me
    if decision.own_refusal is not None and not own_refusal_decides:
        raise decision.own_refusal
    record = decision.record()
    without_reason = request.action.takes_reason and request.reason is None
    return Result("PolicyDecision", {"rollout": decided.rollout.name, "user": {"username": me.username,
                                                                              "groups": list(me.groups)},
                                     "withoutReason": without_reason, **record},
                  names=(api.rollout_reference(decided.rollout.name),), exit_code=0 if record["allowed"] else 1)
