"""The one decision on a write: may this user write this approval, revocation or acknowledgement?

Offline and pure: everything it decides on is passed in (the rollout, the
user, the policy engine, the assessment report as far as it was read, the
instant). Every caller decides through it, so none can disagree:

- `decide`: the command's own refusals, then every active policy: what
  `approve`, `revoke`, `acknowledge` (through `rollout_write`), `policy check`
  and `policy test` decide;
- `decide_write`: every active policy on a value already proposed: what the
  admission webhook decides of the value an update adds (the API server's
  CRD rules stand in for the command's own refusals there).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from aicr_core.domain import operator_api as api
from aicr_core.domain.hookspecs import Identity, PolicyContext
from aicr_core.domain.policy_engine import Decision, PolicyEngine, with_field_not_given
from aicr_core.domain.rollouts import PolicyFileUnreadable
from aicr_core.errors import AicrError, Code

if TYPE_CHECKING:
    from aicr_core.domain.actions import Action


def decide(rollout: api.Rollout, action: Action, user: Identity, *, engine: PolicyEngine | AicrError,
           now: datetime, reason: str | None = None, expires: timedelta | None = None,
           overrides: Iterable[str] = (), assessment: api.Assessment | AicrError | None = None,
           flags: Mapping[str, Any] | None = None, may_write: bool = True) -> Decision:
    """What the real command would decide at `now`: its own refusal (a Decision with `own_refusal`, no
    policy run), else every active policy's verdict on the value it would write.

    `reason` None for an action that takes one: the policies that read it are `skipped` (as `policy
    check` without --reason), never run on a placeholder. `assessment`: see `decide_write`. `flags`:
    the command's parsed flags, as policies see them (`context.flags`).
    """
    try:
        value = action.propose(rollout, user.username, now, reason or "", expires)
    except AicrError as refusal:
        return Decision.refused_by_command(action.name, now, refusal)
    if action.takes_reason and reason is None:
        value = with_field_not_given(value, "reason", "--reason TEXT")
    return decide_write(action, value, engine=engine, rollout=rollout, user=user, overrides=overrides,
                        context=PolicyContext(action.name, dict(flags or {}), now=now), assessment=assessment,
                        may_write=may_write)


def decide_write(action: Action, value: Any, *, engine: PolicyEngine | AicrError, rollout: api.Rollout,
                 user: Identity, context: PolicyContext, overrides: Iterable[str] = (),
                 assessment: api.Assessment | AicrError | None = None, may_write: bool = True) -> Decision:
    """Every active policy's verdict on writing `value` (what `action` proposes) on `rollout` as `user`.

    `engine` is the policy engine, or why there is none: then every write is
    refused with that error, except that when the user may read no policy
    file (PolicyFileUnreadable) and may not write at all (`may_write` False), no
    policy runs: the API server refuses the write (`Decision.server_refuses` says so).
    `assessment` is the report as policies see it, read by the caller when an
    active policy's hook asks for it (`wants_assessment`); an AicrError: the
    read failed, and a policy that wants it refuses (fail closed); None: not read.
    """
    now = context.now
    assert now is not None, "a write is decided at one instant"
    if isinstance(engine, AicrError):
        if isinstance(engine, PolicyFileUnreadable) and not may_write:
            decision = Decision(action.name, now, None, None, None)
            decision.server_refuses = AicrError(
                Code.FORBIDDEN, f"user {user.username} may not approve, revoke or acknowledge rollout "
                f"{rollout.name}: approvers need update on {api.ROLLOUTS}/approve (the API server refuses "
                "the write whatever the policies say)")
            return decision
        return Decision(action.name, now, None, None, engine)
    proposed: dict[str, Any] = {action.argument: value}
    if engine.wants(action, "assessment"):
        if not isinstance(assessment, api.Assessment):
            why = assessment.message if isinstance(assessment, AicrError) else "it was not read"
            failed = AicrError(Code.POLICY_ERROR, f"cannot read the assessment report: {why}; refusing (fail closed)")
            return Decision(action.name, now, engine.source, engine.digest, failed)
        proposed["assessment"] = assessment
    return engine.decision(action, rollout=rollout, user=user, context=context, overrides=overrides, **proposed)


def wants_assessment(engine: PolicyEngine | AicrError, action: Action) -> bool:
    """Does an active policy deciding `action` read the assessment report? (Read it only then: one more GET.)"""
    return isinstance(engine, PolicyEngine) and engine.wants(action, "assessment")
