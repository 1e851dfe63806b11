"""What one update of a rollout adds, and whether its records only grew: the admission webhook compares
the object before and after."""


from collections.abc import Collection, Mapping
from typing import Any, NamedTuple

from aicr_core.domain.operator_api.records import (
    ANNOTATION_DECISIONS,
    ANNOTATION_OVERRIDES,
    RECORD_ANNOTATIONS,
    Override,
    PolicyDecision,
    parse_override,
    parse_policy_decision,
    record_entries,
)
from aicr_core.domain.operator_api.rollout_object import Acknowledgement, Approval, Revocation, Rollout
from aicr_core.errors import AicrError


class Added(NamedTuple):
    """What an update of a rollout adds that people write: its approval, revocation, acknowledgements, overrides.

    "Added" as the CRD's rules and the admission policy count it: an approval
    or a revocation that was not there before, list entries that are not in the
    old list (entries never change, so an entry is compared as a whole).
    """

    approval: Approval | None = None
    revocation: Revocation | None = None
    acknowledgements: tuple[Acknowledgement, ...] = ()
    overrides: tuple[Override, ...] = ()
    policy_decisions: tuple[PolicyDecision, ...] = ()


def added(before: Rollout, after: Rollout, actions: Collection[str]) -> Added:
    """What `after` (the object an update would store) adds to `before` (the stored object).

    Overrides are the entries of `after`'s annotation beyond `before`'s, each checked for its shape and
    that its action is one of `actions`, the known names (INVALID_OBJECT); whether the annotation only
    grew is `record_growth`'s question (ask it first).
    """
    def new(parsed: tuple[Any, ...], stored: tuple[Mapping[str, Any], ...],
            old: tuple[Mapping[str, Any], ...]) -> tuple[Any, ...]:
        return tuple(value for value, raw in zip(parsed, stored, strict=True) if raw not in old)

    return Added(
        approval=after.approval if before.approval is None else None,
        revocation=after.revocation if before.revocation is None else None,
        acknowledgements=new(after.acknowledgements, after.stored_acknowledgements, before.stored_acknowledgements),
        overrides=tuple(parse_override(e, actions) for e in _new_entries(before, after, ANNOTATION_OVERRIDES)),
        policy_decisions=tuple(parse_policy_decision(e, actions)
                               for e in _new_entries(before, after, ANNOTATION_DECISIONS)),
    )


def _new_entries(before: Rollout, after: Rollout, key: str) -> tuple[Mapping[str, Any], ...]:
    """The entries `after`'s record annotation `key` has beyond `before`'s, read strictly (INVALID_OBJECT)."""
    old = record_entries(before.annotations.get(key), key)
    return record_entries(after.annotations.get(key), key)[len(old):]


def record_growth(before: Rollout, after: Rollout) -> list[str]:
    """What is wrong with how an update changes the record annotations: each may only grow, entries never change."""
    problems = []
    for key in RECORD_ANNOTATIONS:
        old_text, new_text = before.annotations.get(key), after.annotations.get(key)
        if old_text == new_text:
            continue
        try:
            old = record_entries(old_text, key)
        except AicrError as err:
            problems.append(f"{err.message} as stored; it cannot be changed")
            continue
        try:
            new = record_entries(new_text, key)
        except AicrError as err:
            problems.append(err.message)
            continue
        if new[:len(old)] != old:
            problems.append(f"annotation {key} only grows: existing entries never change, nor are removed")
    return problems
