"""`kubectl aicr policy test`: each case of a test file decided offline, as `policy check` decides it.

A case is decided exactly as `policy check` decides it on a cluster (the command's own refusals, then
the one decision function every write uses, with the installed policy plugins), at the instant the case
fixes, with no kubeconfig, no API call and no network: the domain's reads of a rollout and of its
assessment report run unchanged on the fixtures (aicr_core/domain/policy_test_files.py), the report
verified against the rollout's recorded digest as on a cluster.

What a case decides through is in one function, `decide` (below): the seam onto the domain's decision,
so that a change of that function's shape changes nothing else here.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from aicr_core.domain import operator_api as api
from aicr_core.domain import policy_file
from aicr_core.domain.policy_test_files import Case, FixtureProblem, Objects, TestFile, fixture_objects, read_bounded
from aicr_core.errors import AicrError, Code

if TYPE_CHECKING:
    from aicr_core.domain.policy_engine import LoadedPolicies, PolicyEngine
    from aicr_core.session.kube import KubeSession


# -- running ------------------------------------------------------------------------------------------

@dataclass
class CaseResult:
    file: str
    case: Case
    decision: dict[str, Any] | None = None  # the PolicyDecision document, as `policy check -o json` has it
    error: str | None = None  # why the case could not be decided as the file asks
    differences: list[str] = field(default_factory=list)
    # Installed policies that took part in the decision without being named by the suite's policy file:
    # a site's CI should know that a package installed beside it decides its cases too.
    unnamed: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.error is None and not self.differences

    def document(self) -> dict[str, Any]:
        return {"file": self.file, "case": self.case.name, "passed": self.passed,
                "differences": list(self.differences), "error": self.error, "decision": self.decision}


class Runner:
    """Runs test files' cases; the policy plugins are loaded once, each policy file's engine built once."""

    def __init__(self, operator_namespace: str = "aicr-system",
                 loaded: LoadedPolicies | None = None) -> None:
        self.operator_namespace = operator_namespace
        self._loaded = loaded
        self._engines: dict[str, PolicyEngine | FixtureProblem] = {}

    def engine(self, path: str) -> PolicyEngine:
        """The engine of the installed policies under the policy file `path`; FixtureProblem if unreadable.

        A file that does not validate still makes an engine: it refuses every case (POLICY_ERROR), as it
        would refuse every write.
        """
        from aicr_core.domain.policy_engine import PolicyEngine, load_policies

        key = os.path.realpath(path)
        if key not in self._engines:
            try:
                text = read_bounded(path, policy_file.MAX_BYTES,
                                    lambda why: FixtureProblem(f"policy file {path}: {why}"))
            except FixtureProblem as problem:
                self._engines[key] = problem
            else:
                if self._loaded is None:
                    self._loaded = load_policies()
                self._engines[key] = PolicyEngine.build(self._loaded, text, path)
        found = self._engines[key]
        if isinstance(found, FixtureProblem):
            raise found
        return found

    def run(self, test_file: TestFile, cases: Sequence[Case]) -> list[CaseResult]:
        results = [CaseResult(test_file.path, case) for case in cases]
        try:
            objects = fixture_objects(test_file, self.operator_namespace)
            engine = self.engine(test_file.policy)
        except FixtureProblem as problem:
            for result in results:
                result.error = str(problem)
            return results
        reads = _Reads(objects, self.operator_namespace)
        for result in results:
            case = result.case
            rollout = reads.rollout(case.rollout)
            if isinstance(rollout, str):
                result.error = rollout
                continue
            result.decision = decide(case, rollout, engine, partial(reads.assessment, rollout), test_file.policy,
                                     self.operator_namespace)
            result.differences = differences(case, result.decision)
            result.unnamed = unnamed_policies(engine, result.decision)
        return results


def unnamed_policies(engine: PolicyEngine, decision: Mapping[str, Any]) -> list[str]:
    """The policies of `decision` that the engine's policy file does not configure (active as installed)."""
    names = []
    for outcome in decision.get("policies") or []:
        setup = engine.setup(str(outcome.get("name")))
        if setup is not None and not setup.configured:
            names.append(setup.name)
    return names


class _Reads:
    """The domain reads of a cluster (`rollouts.read_rollout`, `rollouts.read_report`) on the fixtures,
    each made once per rollout: the fixtures do not change between the cases of a file."""

    def __init__(self, objects: Objects, operator_namespace: str) -> None:
        self.objects, self.operator_namespace = objects, operator_namespace
        self.session = cast("KubeSession", objects)  # they ask it by API path, as they ask a cluster
        self.rollouts: dict[str, api.Rollout | str] = {}
        self.assessments: dict[str, api.Assessment] = {}

    def rollout(self, name: str) -> api.Rollout | str:
        """The rollout, or why the case cannot be decided."""
        from aicr_core.domain import rollouts

        if name not in self.rollouts:
            try:
                self.rollouts[name] = rollouts.read_rollout(self.session, name)
            except AicrError as err:
                known = ", ".join(self.objects.rollout_names()) or "none"
                self.rollouts[name] = (f"rollout {name} is not among the fixture rollouts (they are: {known})"
                                       if err.code == Code.NOT_FOUND else f"rollout {name}: {err.message}")
        return self.rollouts[name]

    def assessment(self, rollout: api.Rollout) -> api.Assessment:
        """The rollout's report as the policies see it: verified against its digest, as on a cluster."""
        from aicr_core.domain import rollouts

        if rollout.name not in self.assessments:
            self.assessments[rollout.name] = rollouts.read_report(
                self.session, self.operator_namespace, rollout.assessment_digest).for_policies()
        return self.assessments[rollout.name]


def differences(case: Case, decision: Mapping[str, Any]) -> list[str]:
    """Each expectation the decision does not meet, as `key: want X, got Y`."""
    found = []
    if decision["allowed"] != case.allowed:
        found.append(f"allowed: want {_word(case.allowed)}, got {_word(decision['allowed'])}")
    if case.code is not None and decision["code"] != case.code:
        found.append(f"code: want {case.code}, got {decision['code'] or 'none (allowed)'}")
    verdicts = {p["name"]: p["verdict"] for p in decision["policies"]}
    for name, want in case.policies.items():
        got = verdicts.get(name)
        if got != want:
            found.append(f"policies.{name}: want {want}, got "
                         f"{got or 'none (the policy did not decide this ' + case.action + ')'}")
    return found


def _word(value: Any) -> str:
    return "true" if value is True else "false" if value is False else str(value)


def select(cases: Sequence[Case], pattern: str | None) -> list[Case]:
    """The cases whose name matches the shell-style glob `pattern` (all without one)."""
    from fnmatch import fnmatchcase

    return [c for c in cases if pattern is None or fnmatchcase(c.name, pattern)]


# -- the seam onto the domain's decision ----------------------------------------------------------------

def decide(case: Case, rollout: api.Rollout, engine: PolicyEngine, assessment: Callable[[], api.Assessment],
           policy_path: str, operator_namespace: str) -> dict[str, Any]:
    """The case's PolicyDecision document: what `policy check` reports for the same rollout, user,
    groups, reason, expiry, overrides and instant against the same policy file.

    The only function here that knows the shape of the domain's decision (the action table, the
    command's own refusals, `decide_write`): when that shape changes, only this changes.
    """
    from aicr_core.domain import write_decision
    from aicr_core.domain.actions import ACTIONS
    from aicr_core.domain.hookspecs import Identity

    action = ACTIONS[case.action]
    user = Identity(case.user, case.groups)
    head = {"kind": "PolicyDecision", "rollout": rollout.name,
            "user": {"username": user.username, "groups": list(user.groups)}, "withoutReason": False}
    # What `policy check` hands a policy as its flags (those that mean something without a cluster).
    flags = {"subcommand": "check", "target": rollout.name, "rollout": rollout.name, "action": action.name,
             "reason": case.reason, "expires": case.expires, "override": list(case.overrides),
             "policy_file": policy_path, "operator_namespace": operator_namespace}
    report: api.Assessment | AicrError | None = None
    if write_decision.wants_assessment(engine, action):  # read only when a policy asks, as on a cluster
        try:
            report = assessment()
        except AicrError as err:
            report = err
    decision = write_decision.decide(rollout, action, user, engine=engine, now=case.at, reason=case.reason,
                                     expires=case.expires.delta if case.expires is not None else None,
                                     overrides=case.overrides, assessment=report, flags=flags)
    return {**head, **decision.record()}
