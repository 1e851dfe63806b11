"""Keep cluster data from steering the terminal.

A rollout message, a release name or a server error is data written by
someone else; printed raw, an ESC or a carriage return could rewrite what the
approver sees (escape-sequence injection). Everything printed as text passes
through `safe()`, which replaces control characters with visible escapes.
"""
from __future__ import annotations

import re

# C0 controls except TAB and LF, DEL, and C1 controls (U+0080..U+009F, which
# include the single-byte CSI U+009B), plus bidi overrides that can reorder text.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}" if ord(match.group()) < 0x100 else f"\\u{ord(match.group()):04x}"


def safe(text: str, *, allow_newlines: bool = True) -> str:
    """Return `text` with every terminal control character made visible."""
    cleaned = _CONTROL.sub(_escape, text)
    if not allow_newlines:
        cleaned = cleaned.replace("\n", "\\n")
    return cleaned
