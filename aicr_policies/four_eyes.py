"""`four-eyes`: the approver may not also acknowledge (and, optionally, revoke) the rollout.

Settings: `acknowledge` (default true: the acknowledger must not be the
approver), `revoke` (default false: the revoker must not be the approver).
"""
from __future__ import annotations

from pydantic import Field

from aicr_core.plugin import (
    Acknowledgement,
    Allow,
    Identity,
    PolicyContext,
    Revocation,
    Rollout,
    SettingsModel,
    Violation,
    hookimpl,
)

NAME = "four-eyes"
INACTIVE_UNTIL_CONFIGURED = True


class Settings(SettingsModel):
    acknowledge: bool = Field(default=True, strict=True)
    revoke: bool = Field(default=False, strict=True)

    def covers(self, action: str) -> bool:
        return bool(getattr(self, action, True))  # acknowledge, revoke: as set; approve (no setting): yes


SETTINGS_MODEL = Settings


def _other_eyes(rollout: Rollout, user: Identity, action: str) -> Violation | Allow:
    approver = rollout.approval.user if rollout.approval else None
    facts = {"approver": approver or "(none)", "user": user.username}
    if approver == user.username:
        return Violation(NAME, f"{user.username} approved this rollout, so someone else must {action} it", facts)
    return Allow(NAME, f"{user.username} is not the approver ({approver or 'none'})", facts)


@hookimpl
def aicr_pre_acknowledge(rollout: Rollout, acknowledgement: Acknowledgement, user: Identity,
                         context: PolicyContext) -> Violation | Allow | None:
    return _other_eyes(rollout, user, "acknowledge") if context.settings.acknowledge else None


@hookimpl
def aicr_pre_revoke(rollout: Rollout, revocation: Revocation, user: Identity,
                    context: PolicyContext) -> Violation | Allow | None:
    return _other_eyes(rollout, user, "revoke") if context.settings.revoke else None
