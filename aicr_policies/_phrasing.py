"""How the pack words durations, times and lists in its messages."""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta, tzinfo


def duration(span: timedelta) -> str:
    """Go's duration syntax, at minute precision when there are no seconds: 8h, 1h30m, 45s."""
    seconds = int(span.total_seconds())
    if seconds <= 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + (f"{seconds}s" if seconds else "")
    return text


def local_time(moment: datetime, zone: tzinfo) -> str:
    """Fri 2026-11-27 18:02 CET"""
    local = moment.astimezone(zone)
    return local.strftime("%a %Y-%m-%d %H:%M ") + (local.tzname() or "")


def listing(items: Iterable[str]) -> str:
    return ", ".join(items) or "(none)"
