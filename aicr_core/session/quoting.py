"""Other programs' text (a library's error, a plugin's stderr) cut to what one message line may quote."""
from __future__ import annotations

MAX_QUOTED_CHARS = 1000  # of a plugin's stderr (or any text of it) quoted in an error


def first_line(text: str) -> str:
    """The first line of an error's text (a library's may run to a page), for a one-line message."""
    return text.strip().splitlines()[0] if text.strip() else "unknown error"


def quoted(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """Another program's text (a plugin's stderr) for a message: at most `limit` characters, cut with `...`."""
    return text if len(text) <= limit else text[:limit - 3] + "..."
