"""Choosing the clusters of one command: the members that names, globs and `!` exclusions select.

`--contexts LIST` (names and shell-style globs, `!` excludes) or `--all-contexts` chooses members
of the fleet's source (aicr_core.fleet.sources): kubeconfig contexts, taken in the merged
kubeconfig's order, or with `--cluster-profiles` the ClusterProfiles of a hub. This module holds the
choosing itself, on plain values; the flags are `aicr_core.fleet.flags`', running the command on
the members `fan_out`'s.

Imported where flags are checked (`flags`, the waves file), so it imports only the standard library
and the errors: no dataclass, thread or session.
"""
from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import TYPE_CHECKING

from aicr_core.errors import UsageError, shown

if TYPE_CHECKING:
    from aicr_core.fleet.sources import Members

DEFAULT_PARALLEL = 16


def patterns(text: str) -> list[str]:
    """`a,gpu-*,!gpu-lab-*` -> its entries; an empty list or entry is [USAGE]."""
    entries = [entry.strip() for entry in text.split(",")]
    if not text.strip() or all(not entry for entry in entries):
        raise UsageError("--contexts needs at least one context name or pattern")
    if any(not entry or entry == "!" for entry in entries):
        raise UsageError(f"--contexts {shown(text)} has an empty entry")
    return entries


def matches(name: str, pattern: str) -> bool:
    return name == pattern or fnmatch.fnmatchcase(name, pattern)


def choose(names: Sequence[str], entries: Sequence[str], what: str = "--contexts", kind: str = "context",
           among: str = "of the kubeconfig") -> list[str]:
    """The members `entries` select, in their order (the kubeconfig's): names and globs, `!` excluding.

    Only exclusions: every member but those. Any entry that matches no member is [USAGE]
    (a typo must not shrink the fleet silently), and so is a selection left empty. `kind` and
    `among` say what the names are, for messages ("context" "of the kubeconfig").
    """
    include = [e for e in entries if not e.startswith("!")]
    exclude = [e[1:] for e in entries if e.startswith("!")]
    for entry in [*include, *exclude]:
        if not any(matches(name, entry) for name in names):
            raise UsageError(f"{what}: {shown(entry)} matches no {kind} {among}")
    chosen = [name for name in names if (not include or any(matches(name, e) for e in include))
              and not any(matches(name, e) for e in exclude)]
    if not chosen:
        raise UsageError(f"{what} selects no {kind}")
    return chosen


def chosen_members(contexts: str | None, members: Members, kind: str) -> list[str]:
    """The members the `--contexts` text chooses of the source's (every one when it is None)."""
    if contexts is not None:
        return choose(members.names, patterns(contexts), kind=kind, among=members.among)
    if not members.names:
        raise UsageError(f"--all-contexts: no {kind} {members.among}")
    return list(members.names)
