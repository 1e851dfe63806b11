"""`assessment`: refuse an approval on AICR's verdicts, or when its report cannot be trusted.

Settings: `refuseVerdicts` (default `[blocked]`: verdicts of a *verified*
report that refuse), `refuseUnverified` (default true: a report whose content
does not match the digest the rollout records, that is not a report, or that
could not be read), `refuseMissing` (default false: a rollout that records no
report, or whose report ConfigMap is gone).

The report reaches the hook as `assessment` (`aicr_core.domain.operator_api.Assessment`),
verified as `describe` verifies it.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from aicr_core.plugin import Allow, Assessment, PolicyContext, SettingsModel, Violation, hookimpl
from aicr_policies._phrasing import listing

NAME = "assessment"
INACTIVE_UNTIL_CONFIGURED = True
VERDICT = Literal["safe", "manual", "blocked", "unknown", "unversioned"]
MISSING = ("none", "missing")


class Settings(SettingsModel):
    refuse_verdicts: list[VERDICT] = Field(default=["blocked"], alias="refuseVerdicts")
    refuse_unverified: bool = Field(default=True, alias="refuseUnverified", strict=True)
    refuse_missing: bool = Field(default=False, alias="refuseMissing", strict=True)


SETTINGS_MODEL = Settings


@hookimpl
def aicr_pre_approve(assessment: Assessment | None, context: PolicyContext) -> Violation | Allow | None:
    settings: Settings = context.settings
    status = assessment.status if assessment is not None else "unavailable"
    facts = {"report": status, "refuseVerdicts": listing(settings.refuse_verdicts)}
    if status in MISSING:
        what = "records no assessment report" if status == "none" else "records a report that was not found"
        if settings.refuse_missing:
            return Violation(NAME, f"the rollout {what}", facts)
        return Allow(NAME, f"the rollout {what} (allowed: refuseMissing is false)", facts)
    if status != "verified" or assessment is None:
        if settings.refuse_unverified:
            return Violation(NAME, f"the assessment report is {status}: its verdicts cannot be trusted", facts)
        return Allow(NAME, f"the assessment report is {status} (allowed: refuseUnverified is false)", facts)
    refused = [f"{c.component}: {c.verdict}" for c in assessment.components if c.verdict in settings.refuse_verdicts]
    facts["verdicts"] = listing(f"{c.component}: {c.verdict}" for c in assessment.components)
    if refused:
        return Violation(NAME, f"AICR's verified assessment refuses: {listing(refused)}", facts)
    return Allow(NAME, "no verdict of the verified report refuses", facts)
