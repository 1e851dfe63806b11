"""Waiting for a rollout: the conditions `wait --for` names, and following a rollout until one holds.

What "approved" means here is what lets the operator proceed: approved, not revoked, the approval
not expired. `approval` and `approved` can never hold for a rollout that needs no approval;
`approved` never once revoked or expired (an approval is set once). `acknowledgement` is the
acknowledgement of a release the rollout was seen awaiting while waiting (or already there).
"""
from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from aicr_core import clock
from aicr_core.domain import operator_api as api
from aicr_core.errors import AicrError, Code, UsageError, shown

if TYPE_CHECKING:
    from aicr_core.session.kube import KubeSession

CONDITIONS = ("approval", "acknowledgement", "approved", "ended")  # and phase=PHASE


class WaitCondition:
    """A condition (`name`: one of CONDITIONS, or `phase=PHASE` with its `phase`) and what has been seen of
    the rollout while waiting for it (`awaited`: releases seen awaited in AwaitingAcknowledgement).
    One per wait: it remembers."""

    def __init__(self, name: str, phase: str | None = None) -> None:
        self.name, self.phase = name, phase
        self.awaited: set[str] = set()

    def holds(self, r: api.Rollout, now: datetime) -> bool:
        if r.awaiting_acknowledgement and r.awaiting_release:
            self.awaited.add(r.awaiting_release)
        if self.name == "approval":
            return r.approval is not None
        if self.name == "approved":
            return r.approval is not None and r.revocation is None and r.approval.expires > now
        if self.name == "acknowledgement":
            return any(a.release in self.awaited for a in r.acknowledgements)
        if self.name == "ended":
            return r.ended
        return r.phase == self.phase

    def never(self, r: api.Rollout, now: datetime) -> str | None:
        """Why the condition can never hold any more, if it cannot (approvals are set once)."""
        if self.name in ("approval", "approved") and not r.approval_required:
            return "needs no approval"
        if self.name == "approved" and r.revocation is not None:
            return f"was revoked by {r.revocation.user} at {clock.format_time(r.revocation.time)}"
        if self.name == "approved" and r.approval is not None and r.approval.expires <= now:
            return f"was approved by {r.approval.user} until {clock.format_time(r.approval.expires)}, which has passed"
        return None


def parse_condition(text: str) -> WaitCondition:
    """`approval`, `acknowledgement`, `approved`, `ended` or `phase=PHASE`; else USAGE saying which there are."""
    if text in CONDITIONS:
        return WaitCondition(text)
    kind, _, phase = text.partition("=")
    if kind == "phase" and phase in api.PHASES:
        return WaitCondition(text, phase)
    raise UsageError(f"invalid condition {shown(text)}: use approval, acknowledgement, approved, ended or "
                     f"phase=PHASE (PHASE one of {', '.join(api.PHASES)})")


def condition_names() -> list[str]:
    """Every condition `--for` takes, phases spelled out (its completion)."""
    return [*CONDITIONS, *(f"phase={p}" for p in api.PHASES)]


class WaitStep(NamedTuple):
    """One version of the rollout read while waiting; `met`: the condition holds on it (the last step)."""

    rollout: api.Rollout
    met: bool


def wait_for(session: KubeSession, name: str, condition: WaitCondition, *, once: bool = False) -> Iterator[WaitStep]:
    """Follow rollout `name` (the watch API, from the version read: session/watch.py's follower, its
    backoff and bounds) and yield a step for each version, until one meets `condition` (that step is
    the last).

    After a step that does not meet it: UNREACHABLE when it can never hold, ENDED when the rollout has
    ended. `once`: stop after the first step (the caller's `--timeout 0`). NOT_FOUND when the rollout
    does not exist or is deleted; the session's deadline is the timeout (TIMEOUT).
    """
    from aicr_core.domain import rollouts
    from aicr_core.session.watch import follow

    for obj in follow(session, api.rollouts_path(), name, f"rollout {name}"):
        rollout = rollouts.parse_rollout(obj)
        now = clock.now()
        met = condition.holds(rollout, now)
        yield WaitStep(rollout, met)
        if met:
            return
        reason = condition.never(rollout, now)
        if reason:
            raise AicrError(Code.UNREACHABLE, f"rollout {name} {reason}: {condition.name} can never hold")
        if rollout.ended:
            raise AicrError(Code.ENDED, f"rollout {name} ended ({rollout.outcome or 'no outcome'}) "
                                        f"without meeting {condition.name}")
        if once:
            return
