"""Change windows relative to the real current time, for end-to-end tests of the change-window policy.

A subprocess's clock cannot be frozen, so the tests choose windows around
"now": every day, all hours but the current one (refused now), or a window
covering now (allowed now).
"""
from __future__ import annotations

import datetime as dt
from typing import Any

ALL_DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


def hhmm(moment: dt.datetime) -> str:
    return moment.strftime("%H:%M")


def windows_around(start: dt.datetime, end: dt.datetime) -> list[dict[str, Any]]:
    """Every-day windows (UTC) covering [start, end) at minute precision; split at midnight when it wraps."""
    start, end = start.replace(second=0, microsecond=0), end.replace(second=0, microsecond=0)
    if start.date() == end.date():
        return [{"days": ALL_DAYS, "from": hhmm(start), "to": hhmm(end)}]
    windows = [{"days": ALL_DAYS, "from": hhmm(start), "to": "24:00"}]
    if hhmm(end) != "00:00":
        windows.append({"days": ALL_DAYS, "from": "00:00", "to": hhmm(end)})
    return windows


def windows_except_now(margin: dt.timedelta = dt.timedelta(minutes=30)) -> list[dict[str, Any]]:
    """Every-day windows (UTC) covering the whole week except [now - margin, now + margin)."""
    now = dt.datetime.now(dt.timezone.utc)
    return windows_around(now + margin + dt.timedelta(minutes=1), now - margin + dt.timedelta(days=1))
