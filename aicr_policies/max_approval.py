"""`max-approval`: no approval longer than `max` (from now to its expiry: `--expires` or the deadline).

Settings: `max: 8h` (a Go duration, more than zero).
"""
from __future__ import annotations

from datetime import timedelta

from pydantic import field_validator

from aicr_core.plugin import Allow, Approval, GoDuration, PolicyContext, SettingsModel, Violation, hookimpl
from aicr_policies._phrasing import duration

NAME = "max-approval"
INACTIVE_UNTIL_CONFIGURED = True


class Settings(SettingsModel):
    max: GoDuration

    @field_validator("max")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError("must be more than zero")
        return value


SETTINGS_MODEL = Settings


@hookimpl
def aicr_pre_approve(approval: Approval, context: PolicyContext) -> Violation | Allow:
    settings: Settings = context.settings
    assert context.now is not None  # the engine always sets it
    length = approval.expires - context.now
    facts = {"length": duration(length), "max": duration(settings.max)}
    if length > settings.max:
        return Violation(NAME, f"an approval of {duration(length)} is longer than the {duration(settings.max)} "
                               f"allowed; pass --expires {duration(settings.max)} or less", facts)
    return Allow(NAME, f"an approval of {duration(length)} is within the {duration(settings.max)} allowed", facts)
