"""What each action does: the command's own refusals, the value it proposes, its patch, its lost race.

The table (`aicr_core.domain.actions`) names these rules; they are imported
only when a write or a decision runs (they need the operator API).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import ModuleType
from typing import Any

from aicr_core import clock
from aicr_core.domain import operator_api as api
from aicr_core.errors import AicrError, Code

# What a command proposes from (the rollout, the user, the instant, --reason, --expires), refusing first.
Propose = Callable[[api.Rollout, str, datetime, str, "timedelta | None"], Any]


@dataclass(frozen=True)
class ActionRules:
    propose: Propose  # the command's own refusals, then the value it would write
    patch: Callable[[api.Rollout, Any], dict[str, Any]]  # the conditional write of that value
    lost_race: Callable[[api.Rollout], AicrError]  # the PATCH lost a race: what the re-read rollout says
    added: Callable[[api.Added], tuple[Any, ...]]  # the values of this action an update adds
    document: Callable[[Any], dict[str, Any]]  # the written value as the command's Result data
    # The hookspec of its policy hook, when it is not one of aicr_core.domain.hookspecs (a class or
    # module holding the @hookspec function): registered with every policy engine.
    hookspec: ModuleType | type | None = None


# -- approve ------------------------------------------------------------------------------------------

# The shortest approval: one that would be expired (or about to be) when it reaches the API server uses
# up the rollout's one approval for nothing.
MIN_APPROVAL = timedelta(minutes=1)


def approval_expiry_problem(expires: datetime, now: datetime, *, clock_skew: timedelta = timedelta(0)) -> str | None:
    """The one bound on when an approval may end: at least MIN_APPROVAL after `now`, and never at or before it.

    The CLI applies it to `--expires` before any API call, with its own clock;
    the admission webhook to the approval a write adds, with its clock and the
    minute of `clock_skew` it allows everywhere: a write that passed the CLI passes it.
    """
    if expires > now and expires >= now + MIN_APPROVAL - clock_skew:
        return None
    return (f"an approval must last at least {_words(MIN_APPROVAL)}; this one would end at "
            f"{clock.format_time(expires)}")


def _words(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


def approval_expiry(rollout: api.Rollout, expires: timedelta | None, now: datetime) -> datetime:
    """When the approval ends; raises the upstream refusals in the order a user expects them."""
    if rollout.ended:
        raise ended(rollout)
    if not rollout.approval_required:
        raise AicrError(Code.APPROVAL_NOT_REQUIRED, f"rollout {rollout.name} needs no approval")
    if rollout.approval is not None:
        raise already_approved(rollout)
    if expires is not None:
        return now + expires
    if rollout.deadline is None:
        raise AicrError(Code.INVALID_OBJECT, f"rollout {rollout.name} records no deadline; pass --expires")
    if rollout.deadline <= now:
        raise AicrError(Code.DEADLINE_PASSED, f"rollout {rollout.name}'s deadline "
                        f"{clock.format_time(rollout.deadline)} has passed; pass --expires to approve anyway")
    return rollout.deadline


def already_approved(rollout: api.Rollout) -> AicrError:
    """An approval is set once: say whose it is, and whether it was revoked since (and by whom)."""
    assert rollout.approval is not None
    if rollout.revocation is not None:
        return AicrError(Code.ALREADY_APPROVED, f"rollout {rollout.name} was approved by {rollout.approval.user} "
                         f"and revoked by {rollout.revocation.user} at "
                         f"{clock.format_time(rollout.revocation.time)}; an approval cannot be given again")
    return AicrError(Code.ALREADY_APPROVED, f"rollout {rollout.name} is already approved by "
                     f"{rollout.approval.user} until {clock.format_time(rollout.approval.expires)}")


def _propose_approval(rollout: api.Rollout, user: str, now: datetime, reason: str,
                      expires: timedelta | None) -> api.Approval:
    return api.Approval(user, approval_expiry(rollout, expires, now), reason)


def _approval_lost(current: api.Rollout) -> AicrError:
    if current.approval is not None:
        return already_approved(current)
    return changed(current, "approving", f" (now {current.phase})")


# -- revoke -------------------------------------------------------------------------------------------

def refuse_revocation(rollout: api.Rollout) -> None:
    if rollout.ended:
        raise ended(rollout)
    if rollout.revocation is not None:
        raise already_revoked(rollout)
    if rollout.approval is None:
        raise AicrError(Code.NOT_APPROVED, f"rollout {rollout.name} is not approved; there is nothing to revoke")


def already_revoked(rollout: api.Rollout) -> AicrError:
    assert rollout.revocation is not None
    return AicrError(Code.ALREADY_REVOKED, f"rollout {rollout.name} was already revoked by "
                     f"{rollout.revocation.user} at {clock.format_time(rollout.revocation.time)}")


def _propose_revocation(rollout: api.Rollout, user: str, now: datetime, reason: str,
                        expires: timedelta | None) -> api.Revocation:
    refuse_revocation(rollout)
    return api.Revocation(user, now, reason)


def _revocation_lost(current: api.Rollout) -> AicrError:
    if current.revocation is not None:
        return already_revoked(current)
    return changed(current, "revoking", f" (now {current.phase})")


# -- acknowledge --------------------------------------------------------------------------------------

def awaited_release(rollout: api.Rollout) -> str:
    if not rollout.awaiting_acknowledgement or not rollout.awaiting_release:
        raise AicrError(Code.NOT_AWAITING_ACKNOWLEDGEMENT,
                        f"rollout {rollout.name} is not awaiting an acknowledgement (phase {rollout.phase})")
    done = [a for a in rollout.acknowledgements if a.release == rollout.awaiting_release]
    if done:
        raise AicrError(Code.NOT_AWAITING_ACKNOWLEDGEMENT,
                        f"rollout {rollout.name}: {done[0].release} was already acknowledged by {done[0].user}; "
                        "the operator has yet to continue")
    return rollout.awaiting_release


def _propose_acknowledgement(rollout: api.Rollout, user: str, now: datetime, reason: str,
                             expires: timedelta | None) -> api.Acknowledgement:
    return api.Acknowledgement(awaited_release(rollout), user, now)


def _acknowledgement_lost(current: api.Rollout) -> AicrError:
    mine = [a for a in current.acknowledgements if a.release == current.awaiting_release]
    if not current.awaiting_acknowledgement or mine:
        who = f" by {mine[0].user}" if mine else ""
        return AicrError(Code.NOT_AWAITING_ACKNOWLEDGEMENT,
                         f"rollout {current.name} was acknowledged{who} or moved on meanwhile (now {current.phase})")
    return changed(current, "acknowledging", "")


# -- shared -------------------------------------------------------------------------------------------

def ended(rollout: api.Rollout) -> AicrError:
    return AicrError(Code.ENDED, f"rollout {rollout.name} has ended ({rollout.outcome or 'no outcome'})")


def changed(current: api.Rollout, doing: str, now: str) -> AicrError:
    return AicrError(Code.CONFLICT, f"rollout {current.name} changed while {doing}{now}; "
                     "nothing was written, run the command again")


def _approval_document(approval: api.Approval) -> dict[str, Any]:
    return {"user": approval.user, "expires": clock.format_time(approval.expires), "reason": approval.reason}


def _revocation_document(revocation: api.Revocation) -> dict[str, Any]:
    return {"user": revocation.user, "time": clock.format_time(revocation.time), "reason": revocation.reason}


def _acknowledgement_document(ack: api.Acknowledgement) -> dict[str, Any]:
    return {"release": ack.release, "user": ack.user, "time": clock.format_time(ack.time)}


APPROVAL = ActionRules(_propose_approval, api.approval_patch, _approval_lost,
                       lambda adds: (adds.approval,) if adds.approval is not None else (), _approval_document)
REVOCATION = ActionRules(_propose_revocation, api.revocation_patch, _revocation_lost,
                         lambda adds: (adds.revocation,) if adds.revocation is not None else (), _revocation_document)
ACKNOWLEDGEMENT = ActionRules(_propose_acknowledgement, api.acknowledgement_patch, _acknowledgement_lost,
                              lambda adds: adds.acknowledgements, _acknowledgement_document)
