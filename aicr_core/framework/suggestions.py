"""kubectl's "Did you mean this?" for an unknown command or flag (cobra's rule).

A candidate is suggested when its Levenshtein distance to what was typed is at
most 2, or when it starts with what was typed (`appr` -> approve): never run,
only named, after the `[USAGE]` line.
"""
from __future__ import annotations

from collections.abc import Iterable

from aicr_core.errors import UsageError

MAX_DISTANCE = 2  # cobra's SuggestionsMinimumDistance
HEADING = "Did you mean this?"


def unknown_name(message: str, suggestions: Iterable[str] = ()) -> UsageError:
    """A USAGE error for an unknown command or flag, with the names it may have meant."""
    return UsageError(message, list(suggestions))


def hint(err: UsageError) -> str:
    """kubectl's lines: a blank line, the heading, one tab-indented candidate a line; '' without any."""
    if not err.suggestions:
        return ""
    return "\n" + HEADING + "\n" + "".join(f"\t{name}\n" for name in err.suggestions)


def levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


def suggestions(typed: str, known: Iterable[str]) -> list[str]:
    """The known names close to `typed`, the likeliest first: those it begins, then by distance."""
    lowered = typed.lower()
    if not lowered or len(lowered) > 200:  # the distance is quadratic, and no name is that long
        return []
    close: list[tuple[int, str]] = []
    for name in dict.fromkeys(known):
        if name.lower().startswith(lowered):
            close.append((0, name))
        elif (distance := levenshtein(lowered, name.lower())) <= MAX_DISTANCE:
            close.append((distance, name))
    return [name for _, name in sorted(close, key=lambda pair: pair[0])]


def flag_suggestions(typed: str, known: Iterable[str]) -> list[str]:
    """Long flags only (`--contxt` -> --context): a one-letter flag is too short to guess from."""
    if not typed.startswith("--") or len(typed) < 4:
        return []
    long_flags = [flag for flag in known if flag.startswith("--")]
    return ["--" + name for name in suggestions(typed[2:], [flag[2:] for flag in long_flags])]
