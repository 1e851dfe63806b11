"""Describing a rollout by name: what `describe` (and a dashboard's page of one rollout) reads and shows.

kubectl's split: describing by name fetches (this module: the rollout, its report verified against
the digest it records, its recent Events beside), describing an object in hand does not
(`rollout_documents.describe(rollout, assessment)`). The document is RolloutDescription's
(docs/output.md). No policy engine and no policy file are imported: `describe` starts without them.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from aicr_core.domain import operator_api as api
from aicr_core.domain import rollout_events, rollouts
from aicr_core.domain.rollout_documents import assessment_document, describe

if TYPE_CHECKING:
    from aicr_core.session.kube import KubeSession


def describe_rollout(session: KubeSession, name: str, namespace: str = api.DEFAULT_OPERATOR_NAMESPACE, *,
                     events: bool = True) -> dict[str, Any]:
    """The RolloutDescription document of rollout `name` as it is now; its `rollout` key is `name`.

    Two GETs within the session's deadline: the rollout (`[NOT_FOUND] rollout NAME not found`;
    `[INVALID_OBJECT]` when the answer is no rollout of that name) and its assessment report in
    `namespace` (its status says whether it was found and verified). With `events`, the rollout's recent
    Events are read beside the report, on a thread (`rollout_events.start_reading`): `events` is their
    list, or None when they could not be read; without, None.
    """
    rollout = rollouts.read_rollout(session, name)
    waiting = rollout_events.start_reading(session, name) if events else None
    report = rollouts.read_report(session, namespace, rollout.assessment_digest)
    description = describe(rollout, assessment_document(report))
    description["events"] = waiting() if waiting is not None else None
    return description


def follow_description(session: KubeSession, name: str,
                       namespace: str = api.DEFAULT_OPERATOR_NAMESPACE) -> Iterator[dict[str, Any]]:
    """The RolloutDescription of rollout `name` now, then again after each change of the rollout that
    changes it (the watch API: session/watch.py's follower, with its backoff and bounds), until the
    rollout has ended (the last document is the ended one). `events` is None: a watch does not follow
    them. The report is read once (the digest a rollout records never changes).

    NOT_FOUND when the rollout does not exist or is deleted; the session's deadline bounds it all
    (a `Deadline(math.inf)` follows until the end).
    """
    from aicr_core.session.watch import follow

    assessment: dict[str, Any] | None = None
    last = None
    for obj in follow(session, api.rollouts_path(), name, f"rollout {name}"):
        rollout = rollouts.parse_rollout(obj)
        if assessment is None:
            assessment = assessment_document(rollouts.read_report(session, namespace, rollout.assessment_digest))
        description = {**describe(rollout, assessment), "events": None}
        if description != last:
            yield description
            last = description
        if rollout.ended:
            return
