"""`kubectl aicr policy check ROLLOUT`, `kubectl aicr policy validate FILE` and `kubectl aicr policy test`."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from aicr_commands import _fleet_forms as _fleet
from aicr_commands import _rollout_args as _rollouts
from aicr_core.errors import AicrError, UsageError
from aicr_core.fleet import flags as fleet
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.common_flags import BoolFlag
from aicr_core.framework.result import Result

if TYPE_CHECKING:
    from aicr_core.domain.rollout_write import WriteRequest
    from aicr_core.fleet.fan_out import Turn
    from aicr_core.framework.completion import Candidates
    from aicr_core.session.kube import KubeSession

SUBCOMMANDS = ("check", "validate", "test")


class Policy(AicrCommand):
    """check, validate, test: explain what the policies say of a rollout, validate a policy file, run its tests.

    policy check ROLLOUT [--action approve|revoke|acknowledge] [--reason TEXT]
        [--expires DURATION] [--override POLICY] [--policy-file PATH]
      Runs the command's own refusals and every active policy exactly as the
      real command would, with the cluster's policy file (or --policy-file),
      and writes nothing. One line per policy: allow, warn, deny, overridden
      or error, with its message and the facts it used. Exit 1 when the real
      command would be refused. -o json is a decision record to archive.
      A site's write inputs (such as --ticket) are taken as the real command
      takes them; flags that CommandHooks add to approve are not available here.
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

    policy test [PATH ...] [--case PATTERN] [--fail-only]
      Runs a policy file's test suite offline (no kubeconfig, no cluster):
      the test files given, or found under the folders given (default .) as
      *.aicr-test.yaml. Each case (a fixture rollout, action, user, groups,
      reason, expiry, overrides and instant) is decided exactly as policy
      check decides it, with the installed policies, and compared with its
      expectations. One PASS or FAIL line a case, then N passed, N failed;
      exit 1 when any case failed or could not be decided, [USAGE] for a
      test file that is not valid (its key path named). --case runs the
      cases whose name matches a shell-style glob; --fail-only shows the
      failing ones only. -o json|yaml: a PolicyTestReport; -o junit: JUnit
      XML for CI.
    """

    uses_flags = ("reason", "expires", "operator_namespace", "override", "policy_file")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from aicr_core.domain.actions import ACTIONS, APPROVE  # the table: light enough for `help`

        subcommand = parser.add_argument("subcommand", metavar="check|validate|test", choices=SUBCOMMANDS,
                                         help="check a rollout, validate a policy file, or run test files")
        subcommand.completer = lambda prefix, **_: [s for s in SUBCOMMANDS if s.startswith(prefix)]  # type: ignore[attr-defined]
        target = parser.add_argument("target", metavar="ROLLOUT|FILE|PATH", nargs="?",
                                     help="check: the rollout; validate: the file; test: a test file or folder")
        target.completer = complete_target  # type: ignore[attr-defined]
        paths = parser.add_argument("paths", metavar="PATH", nargs="*", help="test: more test files or folders")
        paths.completer = complete_target  # type: ignore[attr-defined]
        parser.add_argument("--action", choices=tuple(ACTIONS), default=APPROVE.name,
                            help="policy check: the command to check (default: %(default)s)")
        case = parser.add_argument("--case", metavar="PATTERN",
                                   help="policy test: only the cases whose name matches this shell-style glob")
        case.completer = complete_cases  # type: ignore[attr-defined]
        parser.add_argument("--fail-only", action=BoolFlag,
                            help="policy test: show only the failing cases (and the summary)")
        fleet.add_selection_flags(parser)
        fleet.add_plan_flags(parser, _fleet.complete_plans, yes=False)

    def result_kinds(self, parsed_args: argparse.Namespace) -> tuple[str, ...] | None:
        return ("PolicyTestReport",) if parsed_args.subcommand == "test" else None

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        """Its flags, and after them a site's write inputs of any write (`--ticket ID`), for `check --action`."""
        from aicr_core.framework.write_input_flags import add_input_flags

        parser = super().get_parser(prog_name)
        add_input_flags(parser, None)
        return parser

    def take_action(self, args: argparse.Namespace) -> Result:
        if args.subcommand == "test":
            fleet.refuse_fleet_flags(args, "policy test")
            return run_tests([*([args.target] if args.target is not None else []), *args.paths], args.case,
                             args.fail_only, args.operator_namespace)
        if args.paths:
            raise UsageError(f"unrecognized arguments: {' '.join(args.paths)}")
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

    def check_across(self, args: argparse.Namespace) -> Result:
        """policy check of the plan's open rollout in each selected cluster: one request for all of them (the
        flags' bounds checked and --policy-file read once, before any cluster is asked), each cluster
        replacing only its rollout; the command's own refusal is that cluster's decision, not its failure."""
        import dataclasses

        from aicr_core.fleet.plan_write import plan_rollout

        request = check_request(fleet.cluster_args(args, None), "")

        def single(turn: Turn) -> Result:
            name = plan_rollout(turn, args.plan).name
            one = dataclasses.replace(request, rollout=name,
                                      flags={**request.flags, "context": turn.context, "target": name})
            return fleet.prefixed(check(turn.session, one, own_refusal_decides=True), turn.context)

        return fleet.read_across(self, args, "PolicyDecisionList", items_of=fleet.whole_document, single=single)


def run_tests(paths: list[str], pattern: str | None, fail_only: bool, operator_namespace: str) -> Result:
    """`policy test`: every test file checked first (one that is not valid is USAGE before any case
    runs), then the selected cases run, file by file, in order."""
    from aicr_core.domain import policy_test_files, policy_tests

    test_files = [policy_test_files.load_test_file(path) for path in policy_test_files.find_test_files(paths)]
    selected = [(test_file, policy_tests.select(test_file.cases, pattern)) for test_file in test_files]
    if not any(cases for _, cases in selected):
        raise UsageError(f"no case matches --case {pattern!r}" if pattern is not None else "no case to run")
    runner = policy_tests.Runner(operator_namespace)
    results = [result for test_file, cases in selected if cases for result in runner.run(test_file, cases)]
    failed = sum(not r.passed for r in results)
    unnamed: dict[str, dict[str, Any]] = {}
    for test_file, cases in selected:
        names = sorted({name for r in results if r.file == test_file.path for name in r.unnamed})
        if cases and names:
            unnamed[test_file.path] = {"file": test_file.path, "policyFile": test_file.policy, "policies": names}
    return Result("PolicyTestReport", {"items": [r.document() for r in results], "passed": len(results) - failed,
                                       "failed": failed, "failOnly": fail_only,
                                       "unnamedPolicies": list(unnamed.values())},
                  exit_code=1 if failed else 0)


def complete_target(prefix: str, parsed_args: argparse.Namespace, **_: object) -> Candidates:
    """validate: a file; test: files and folders (the shell completes them); check: nothing here."""
    from aicr_core.framework.completion import DEFAULT, NO_FILES, Candidates

    return Candidates(directive=DEFAULT if getattr(parsed_args, "subcommand", None) in ("validate", "test")
                      else NO_FILES)


def complete_cases(prefix: str, parsed_args: argparse.Namespace, **_: object) -> Candidates:
    """--case: the case names of the test files under the paths given so far (else .), as globs that
    match them exactly (a space as `?`, which a shell word can hold unquoted; the name as written in the
    description then)."""
    from aicr_core.domain import policy_test_files
    from aicr_core.framework.completion import NO_FILES, Candidates

    given = [p for p in [getattr(parsed_args, "target", None), *(getattr(parsed_args, "paths", None) or [])]
             if isinstance(p, str)]
    words: list[str] = []
    try:
        files = policy_test_files.find_test_files(given)
    except AicrError:
        return Candidates(directive=NO_FILES)
    for path in files:
        try:
            test_file = policy_test_files.load_test_file(path)
        except AicrError:
            continue
        for case in test_file.cases:
            word = glob_of(case.name)  # the name itself, when it holds no whitespace or glob character
            words.append(f"{word}\t{path}" if word == case.name else f"{word}\t{case.name} ({path})")
    return Candidates(list(dict.fromkeys(words)), NO_FILES)


def glob_of(name: str) -> str:
    """A shell-style glob that matches `name` only, written without whitespace."""
    special = {"*": "[*]", "?": "[?]", "[": "[[]"}
    return "".join("?" if c.isspace() else special.get(c, c) for c in name)


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
    """The write `policy check` decides on: --action's, with its flags (--reason may be left out) and a site's
    write inputs (`--ticket`) as the real command takes them; one the real command lacks is [USAGE]."""
    from aicr_core.domain.actions import ACTIONS
    from aicr_core.domain.write_flags import write_request
    from aicr_core.write_inputs import declarations

    action = ACTIONS[args.action]
    for declared in declarations():
        item = declared.input
        if action.name not in item.actions and getattr(args, item.dest, None) not in (None, ""):
            raise UsageError(f"{item.flag} is an input of {', '.join(item.actions)}, not of {action.name}")
    return write_request(vars(args), action, rollout, checking=f"policy check --action {action.name}")


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
