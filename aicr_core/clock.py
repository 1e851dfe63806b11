"""The current time, in one place, so tests can freeze it (testfixtures.mock_datetime)."""
from __future__ import annotations

from datetime import datetime, timezone


def now() -> datetime:
    """Now, in UTC, at second precision (the API's time format has no fractions)."""
    return datetime.now(timezone.utc).replace(microsecond=0)


def format_time(moment: datetime) -> str:
    """RFC 3339, UTC, second precision: 2026-11-29T21:00:00Z."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    """Parse an RFC 3339 time as the API server writes it (Z or an offset)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
