"""`reason-format`: the reason must match a regular expression (a change ticket, say).

Settings: `pattern` (a Python regular expression, matched from the start of
the reason), `message` (shown when it does not match; default: the pattern),
`actions` (default `[approve]`; `revoke` too if revocations must cite one:
mind that a revocation is how an emergency stops a rollout).
"""
from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from aicr_core.plugin import (
    Allow,
    Approval,
    NonEmptyStr,
    PolicyContext,
    Revocation,
    SettingsModel,
    Violation,
    hookimpl,
    shown,
)

NAME = "reason-format"
INACTIVE_UNTIL_CONFIGURED = True


def _regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as err:
        raise ValueError(f"{shown(text)} is not a regular expression: {err}") from None
    return text


class Settings(SettingsModel):
    pattern: Annotated[str, AfterValidator(_regex)]
    message: NonEmptyStr | None = None
    actions: list[Literal["approve", "revoke"]] = Field(default=["approve"], min_length=1)

    def covers(self, action: str) -> bool:
        return action in self.actions

    def check(self, action: str, reason: str) -> Violation | Allow | None:
        if action not in self.actions:
            return None
        facts = {"pattern": self.pattern}
        if re.match(self.pattern, reason):
            return Allow(NAME, f"the reason matches {self.pattern}", facts)
        return Violation(NAME, self.message or f"the reason must match {self.pattern}: {shown(reason, 200)}", facts)


SETTINGS_MODEL = Settings


@hookimpl
def aicr_pre_approve(approval: Approval, context: PolicyContext) -> Violation | Allow | None:
    return context.settings.check("approve", approval.reason)  # type: ignore[no-any-return]


@hookimpl
def aicr_pre_revoke(revocation: Revocation, context: PolicyContext) -> Violation | Allow | None:
    return context.settings.check("revoke", revocation.reason)  # type: ignore[no-any-return]
