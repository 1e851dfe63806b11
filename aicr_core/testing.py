"""A pytest plugin for site authors: test a policy exactly as `kubectl aicr` runs it.

Installed with kubectl-aicr (entry point `pytest11: aicr`), so any test suite
in an environment where kubectl-aicr is installed has these fixtures:

- `aicr_clock`: the clock policies see (`aicr_core.clock`), frozen with
  testfixtures at Monday 2026-11-30 10:00 UTC; `.set(...)`, `.tick(...)`.
- `aicr_rollout`, `aicr_identity`, `aicr_approval`, `aicr_revocation`,
  `aicr_acknowledgement`, `aicr_assessment`: factories of the values the
  hooks receive (also importable from this module as plain functions).
- `policy_verdict(plugin, action, settings=..., ...)`: runs one policy's hook
  through the same fail-closed engine as the CLI, with its settings as the
  policy file would give them, and returns a `PolicyVerdict`.

    def test_a_ticket_is_required(policy_verdict, aicr_approval):
        verdict = policy_verdict(my_policy, "approve", approval=aicr_approval(reason="no ticket"))
        assert verdict.verdict == "deny"

Nothing heavy is imported until a fixture is used (this module is loaded by
every pytest run in such an environment).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from aicr_core.domain.actions import APPROVE, Action  # the table: as light as a list of names

if TYPE_CHECKING:
    from aicr_core.domain.hookspecs import Identity, Violation
    from aicr_core.domain.operator_api import Acknowledgement, Approval, Assessment, Revocation, Rollout, Step
    from aicr_core.errors import AicrError

FROZEN_AT = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)  # a Monday
DEFAULT_STEPS = (("gpu-operator", "Upgrade", "manual", True), ("nvsentinel", "Install", "safe", False))


def _now() -> datetime:
    from aicr_core import clock

    return clock.now()


def _time(moment: datetime | str) -> datetime:
    from aicr_core.clock import parse_time

    return parse_time(moment) if isinstance(moment, str) else moment.astimezone(timezone.utc)


# -- the values hooks receive ------------------------------------------------------------------

def identity(username: str = "alice", groups: Iterable[str] = ("aicr:approvers",)) -> Identity:
    """A user as the API server reports it; `system:authenticated` is added as the server adds it."""
    from aicr_core.domain.hookspecs import Identity

    return Identity(username, tuple(dict.fromkeys([*groups, "system:authenticated"])))


def approval(user: str = "alice", expires: datetime | timedelta | str = timedelta(hours=2),
             reason: str = "CHG-1234 maintenance window") -> Approval:
    """An approval; `expires` may be a time, or a duration from now (as `--expires` is)."""
    from aicr_core.domain.operator_api import Approval

    until = _now() + expires if isinstance(expires, timedelta) else _time(expires)
    return Approval(user, until, reason)


def revocation(user: str = "alice", reason: str = "stop: paging on GPU nodes",
               time: datetime | str | None = None) -> Revocation:
    from aicr_core.domain.operator_api import Revocation

    return Revocation(user, _now() if time is None else _time(time), reason)


def acknowledgement(release: str = "nvsentinel", user: str = "alice",
                    time: datetime | str | None = None) -> Acknowledgement:
    from aicr_core.domain.operator_api import Acknowledgement

    return Acknowledgement(release, user, _now() if time is None else _time(time))


def assessment(status: str = "verified", verdicts: Mapping[str, str] | None = None,
               digest: str | None = "sha256:" + "a" * 64) -> Assessment:
    """AICR's report as a policy sees it; `verdicts` maps component -> verdict (verified reports only)."""
    from aicr_core.domain.operator_api import Assessment, ComponentVerdict

    if verdicts is None:
        verdicts = {"gpu-operator": "manual", "nvsentinel": "safe"} if status == "verified" else {}
    return Assessment(status, None if status == "none" else digest,
                      tuple(ComponentVerdict(c, v) for c, v in verdicts.items()))


def step(release: str, operation: str = "Upgrade", verdict: str = "safe", changes_crds: bool = False,
         state: str = "Pending") -> Step:
    from aicr_core.domain.operator_api import Step

    return Step(release, operation, verdict, changes_crds, state)


def rollout(phase: str = "AwaitingApproval", *, name: str = "rollout-3f9a1c0d2b7e4a51-1",
            approval: Approval | None = None, revocation: Revocation | None = None,
            acknowledgements: Sequence[Acknowledgement] = (), awaiting_release: str | None = None,
            steps: Sequence[Step] | None = None, approval_required: bool = True,
            deadline: datetime | timedelta | str = timedelta(hours=8), outcome: str = "",
            assessment_digest: str | None = None) -> Rollout:
    """A rollout in any phase, as `kubectl aicr` would have read it.

    In `AwaitingAcknowledgement` it waits on its last step's release unless
    `awaiting_release` says otherwise; phases after approval should be given
    an `approval`.
    """
    from aicr_core.domain.operator_api import Rollout

    steps = tuple(steps) if steps is not None else tuple(step(r, o, v, c) for r, o, v, c in DEFAULT_STEPS)
    if awaiting_release is None:
        awaiting_release = steps[-1].release if phase == "AwaitingAcknowledgement" and steps else ""
    return Rollout(
        name=name, resource_version="1", runtime_name="cluster", runtime_uid="6c1f0e9a-7d2b-4c1e-9a51-3f9a1c0d2b7e",
        from_digest="sha256:" + "1" * 64, to_digest="sha256:3f9a1c0d2b7e4a51" + "0" * 48,
        deadline=_now() + deadline if isinstance(deadline, timedelta) else _time(deadline),
        approval_required=approval_required, inventory_releases=42, inventory_digest="sha256:" + "2" * 64,
        assessment_digest=assessment_digest, steps=steps, records=(), approval=approval, revocation=revocation,
        acknowledgements=tuple(acknowledgements), phase=phase, outcome=outcome,
        message=f"rollout {phase}", awaiting_release=awaiting_release)


_approval, _revocation, _acknowledgement = approval, revocation, acknowledgement  # policy_verdict's arguments hide them


# -- one policy through the engine -------------------------------------------------------------

@dataclass
class PolicyVerdict:
    """What one policy decided, and what the command would have done about it."""

    verdict: str  # allow | deny | warn | overridden | error
    messages: list[str]
    facts: dict[str, str]
    violations: list[Violation]
    refusal: AicrError | None  # the error approve/revoke/acknowledge would fail with, or None
    warnings: list[str] = field(default_factory=list)  # what the command would print as `warning:`

    @property
    def code(self) -> str | None:
        """The refusal's CODE as text (`POLICY_DENIED`, `POLICY_ERROR`); None when nothing is refused."""
        return str(self.refusal.code) if self.refusal else None


def policy_verdict(plugin: object, action: Action | str = APPROVE, *, settings: Mapping[str, Any] | None = None,
                   mode: str = "enforce", overridable: bool = False, overrides: Iterable[str] = (),
                   name: str | None = None, rollout: Rollout | None = None, user: Identity | None = None,
                   approval: Approval | None = None, revocation: Revocation | None = None,
                   acknowledgement: Acknowledgement | None = None, assessment: Assessment | None = None,
                   flags: Mapping[str, Any] | None = None, command: str | None = None) -> PolicyVerdict:
    """Run `plugin` (a module or object with hook implementations) for `action` (or its name) as the CLI would.

    `settings` is the policy's entry in the policy file (without `mode` and
    `overridable`, given separately); it is validated exactly as the file is,
    and a problem raises the `[POLICY_ERROR]` every write would fail with, as
    does a plugin that does not register (a misspelt hook). Objects you leave
    out are made up: the rollout in the phase the action needs, `alice` as the
    user, the approval, revocation or acknowledgement she would write.
    """
    import yaml

    from aicr_core.domain import policy_engine as policy
    from aicr_core.domain import policy_file
    from aicr_core.domain.actions import ACTIONS
    from aicr_core.domain.hookspecs import PolicyContext

    if isinstance(action, str):
        action = ACTIONS[action]
    name = name or str(getattr(plugin, "NAME", "policy-under-test"))
    user = user or identity()
    if rollout is None:
        rollout = _rollout_for(action)
    given = {"approval": approval, "revocation": revocation, "acknowledgement": acknowledgement}  # hook arguments
    value = given.get(action.argument) or _made_up(action, rollout, user)
    proposed = {action.argument: value, "assessment": assessment}  # a hook that does not declare it never gets it
    loaded = policy.policy_set({name: plugin})
    configured = (settings is not None or mode != "enforce" or overridable
                  or getattr(plugin, policy.INACTIVE_UNTIL_CONFIGURED, False))
    text = yaml.safe_dump({"apiVersion": policy_file.API_VERSION, "kind": policy_file.KIND, "policies": {
        name: {"mode": mode, "overridable": overridable, **(settings or {})}}}) if configured else None
    engine = policy.PolicyEngine.build(loaded, text, "(policy_verdict settings)")
    setup_error = engine.errors()
    if setup_error is not None:
        raise setup_error
    decision = engine.decision(action, rollout=rollout, user=user, overrides=overrides,
                               context=PolicyContext(command or action.name, dict(flags or {})), **proposed)
    if not decision.outcomes:  # the policy implements no hook for this action: it has nothing to say
        return PolicyVerdict("allow", [], {}, [], decision.refusal(), decision.warnings())
    outcome = decision.outcomes[0]
    return PolicyVerdict(outcome.verdict, outcome.messages, outcome.facts, list(outcome.violations),
                         decision.refusal(), decision.warnings())


def _made_up(action: Action, rollout: Rollout, user: Identity) -> Any:
    """The value `user` would write: the kit's approval, revocation or acknowledgement by its hook argument, else
    what the action itself proposes."""
    made = {"approval": lambda: _approval(user=user.username), "revocation": lambda: _revocation(user=user.username),
            "acknowledgement": lambda: _acknowledgement(rollout.awaiting_release or "nvsentinel", user=user.username)}
    if action.argument in made:
        return made[action.argument]()
    return action.propose(rollout, user.username, _now(), "CHG-1234 maintenance window", None)


def _rollout_for(action: Action) -> Rollout:
    """The first of the usual rollouts (awaiting approval; progressing, approved by bob; awaiting an
    acknowledgement) that the action does not refuse."""
    from aicr_core.errors import AicrError

    by_bob = approval(user="bob")
    candidates = (rollout("AwaitingApproval"), rollout("Progressing", approval=by_bob),
                  rollout("AwaitingAcknowledgement", approval=by_bob))
    for candidate in candidates:
        try:
            action.propose(candidate, "alice", _now(), "CHG-1234 maintenance window", None)
        except AicrError:
            continue
        return candidate
    return candidates[0]


# -- the clock ------------------------------------------------------------------------------------

class FrozenClock:
    """`aicr_core.clock.now()` under the test's control."""

    def __init__(self, mock: Any) -> None:
        self._mock = mock

    def set(self, moment: datetime | str) -> datetime:
        """Move the clock to `moment` (an aware datetime, or RFC 3339 text)."""
        at = _time(moment)
        self._mock.set(at.year, at.month, at.day, at.hour, at.minute, at.second)
        return at

    def tick(self, delta: timedelta) -> datetime:
        return self.set(self.now() + delta)

    def now(self) -> datetime:
        return _now()


@pytest.fixture
def aicr_clock() -> Iterator[FrozenClock]:
    """The clock frozen at FROZEN_AT (Monday 2026-11-30 10:00 UTC) for the test."""
    from testfixtures import Replacer, mock_datetime

    mock = mock_datetime(FROZEN_AT, delta=0)
    with Replacer() as replace:
        replace("aicr_core.clock.datetime", mock)
        yield FrozenClock(mock)


@pytest.fixture(name="policy_verdict")
def policy_verdict_fixture() -> Any:
    return policy_verdict


@pytest.fixture
def aicr_rollout() -> Any:
    return rollout


@pytest.fixture
def aicr_identity() -> Any:
    return identity


@pytest.fixture
def aicr_approval() -> Any:
    return approval


@pytest.fixture
def aicr_revocation() -> Any:
    return revocation


@pytest.fixture
def aicr_acknowledgement() -> Any:
    return acknowledgement


@pytest.fixture
def aicr_assessment() -> Any:
    return assessment
