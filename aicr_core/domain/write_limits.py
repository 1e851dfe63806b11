"""The bounds of a write's --reason and --expires: what approve, revoke and `policy check` refuse before any call.

The webhook applies the same minimum approval (`action_rules.approval_expiry_problem`), so a bound
the CLI checks early is never one the cluster disagrees with.
"""
from __future__ import annotations

from datetime import datetime, timezone

from aicr_core.errors import UsageError
from aicr_core.go_duration import ParsedDuration

REASON_MAX = 1024  # --reason, in characters (the help of --reason says it: aicr_core/framework/common_flags.py)
MAX_API_TIME = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)  # RFC 3339 has four-digit years


def check_reason(text: str | None, command: str) -> str:
    """--reason `text` is required by `command` and holds 1..REASON_MAX characters."""
    if text is None:
        raise UsageError(f"{command} needs --reason TEXT (at most {REASON_MAX} characters)")
    if not text.strip():
        raise UsageError("--reason must not be empty")
    if not is_utf8(text):
        # Python keeps an undecodable byte of argv as a lone surrogate (\udcff); the server would
        # store U+FFFD instead, so the record would not say what the command printed.
        raise UsageError("--reason holds bytes that are not UTF-8 text; check the terminal's encoding")
    if len(text) > REASON_MAX:
        raise UsageError(f"--reason is {len(text)} characters; at most {REASON_MAX} are allowed")
    return str(text)


def check_expires(expires: ParsedDuration | None, now: datetime) -> datetime | None:
    """When an approval given `now` with --expires `expires` would end; None without --expires."""
    if expires is None:
        return None
    if expires.nanoseconds < 0:
        raise UsageError(f"--expires must not be negative (got {expires.text})")
    try:
        ends: datetime | None = now + expires.delta
    except OverflowError:
        ends = None
    if ends is None or ends > MAX_API_TIME:
        raise UsageError(f"--expires {expires.text} ends after {MAX_API_TIME:%Y-%m-%dT%H:%M:%SZ}, "
                         "the latest time the API can store")
    from aicr_core.domain.action_rules import MIN_APPROVAL, approval_expiry_problem  # the bound the webhook applies too

    if approval_expiry_problem(ends, now):
        raise UsageError(f"--expires {expires.text} is shorter than the minimum, {MIN_APPROVAL.seconds // 60}m: "
                         "an approval that ends before it is stored, or right after, approves nothing")
    return ends


def is_utf8(text: str) -> bool:
    """Whether `text` can be sent as UTF-8: no lone surrogate (what an undecodable argv byte becomes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
