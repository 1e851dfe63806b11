"""Group membership, as the API server reports it (SelfSubjectReview, or the admission request's userInfo).

`approver-groups`: for each of `approve`, `revoke`, `acknowledge` that is set,
the user's groups must include one of the listed groups.

`crd-changes`: a rollout with a step that changes CRDs needs an approver in
one of `groups`.
"""
from __future__ import annotations

from pydantic import Field, model_validator

from aicr_core.plugin import (
    Acknowledgement,
    Allow,
    Approval,
    Identity,
    NonEmptyStr,
    PolicyContext,
    Revocation,
    Rollout,
    SettingsModel,
    Violation,
    hookimpl,
)
from aicr_policies._phrasing import listing


def _membership(policy: str, user: Identity, allowed: list[str], what: str) -> Violation | Allow:
    facts = {"user": user.username, "groups": listing(user.groups), "required": listing(allowed)}
    held = sorted(set(user.groups) & set(allowed))
    if held:
        return Allow(policy, f"{user.username} is in {listing(held)}", facts)
    return Violation(policy, f"{what} needs a member of {listing(allowed)}; {user.username} is in "
                             f"{listing(user.groups)}", facts)


class ApproverGroupsSettings(SettingsModel):
    approve: list[NonEmptyStr] | None = Field(default=None, min_length=1)
    revoke: list[NonEmptyStr] | None = Field(default=None, min_length=1)
    acknowledge: list[NonEmptyStr] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _says_something(self) -> ApproverGroupsSettings:
        if self.approve is None and self.revoke is None and self.acknowledge is None:
            raise ValueError("set the groups for approve, revoke or acknowledge (or remove approver-groups)")
        return self

    def covers(self, action: str) -> bool:
        return getattr(self, action, None) is not None  # an action with no groups set is not this policy's


class ApproverGroups:
    NAME = "approver-groups"
    INACTIVE_UNTIL_CONFIGURED = True
    SETTINGS_MODEL = ApproverGroupsSettings

    def _check(self, action: str, user: Identity, settings: ApproverGroupsSettings) -> Violation | Allow | None:
        allowed = getattr(settings, action)
        return None if allowed is None else _membership(self.NAME, user, allowed, f"to {action}")

    @hookimpl
    def aicr_pre_approve(self, approval: Approval, user: Identity,
                         context: PolicyContext) -> Violation | Allow | None:
        return self._check("approve", user, context.settings)

    @hookimpl
    def aicr_pre_revoke(self, revocation: Revocation, user: Identity,
                        context: PolicyContext) -> Violation | Allow | None:
        return self._check("revoke", user, context.settings)

    @hookimpl
    def aicr_pre_acknowledge(self, acknowledgement: Acknowledgement, user: Identity,
                             context: PolicyContext) -> Violation | Allow | None:
        return self._check("acknowledge", user, context.settings)


class CrdChangesSettings(SettingsModel):
    groups: list[NonEmptyStr] = Field(min_length=1)


class CrdChanges:
    NAME = "crd-changes"
    INACTIVE_UNTIL_CONFIGURED = True
    SETTINGS_MODEL = CrdChangesSettings

    @hookimpl
    def aicr_pre_approve(self, rollout: Rollout, user: Identity, context: PolicyContext) -> Violation | Allow | None:
        releases = [s.release for s in rollout.steps if s.changes_crds]
        if not releases:
            return Allow(self.NAME, "no step changes CRDs", {"crdSteps": "(none)"})
        verdict = _membership(self.NAME, user, context.settings.groups,
                              f"a rollout that changes CRDs ({listing(releases)})")
        return type(verdict)(verdict.policy, verdict.message, {**verdict.facts, "crdSteps": listing(releases)})


approver_groups = ApproverGroups()
crd_changes = CrdChanges()
