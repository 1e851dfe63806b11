"""A fleet write's items and their words: one result word a cluster, the listing before the write, the summary.

Each cluster of `approve|revoke|acknowledge --plan DIGEST` (and of the waves) ends as one item
(context, rollout, result, code, message: the FleetWrite document of docs/output.md); this module
says which word a single-cluster answer is, and what the person is shown before anything is
written (`Confirmation`) and after (`FleetWritten`). The write itself is `plan_write`'s, the waves
`wave_runner`'s. Pure: no session, no terminal.
"""
from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aicr_core.errors import AicrError, Code
from aicr_core.fleet.gathering import one_line

if TYPE_CHECKING:
    from aicr_core.domain import operator_api as api
    from aicr_core.domain.actions import Action
    from aicr_core.fleet.fan_out import Fleet, Outcome
    from aicr_core.framework.interruption import Interruption

ALREADY_APPROVED, SKIPPED, REFUSED, FAILED = "already-approved", "skipped", "refused", "failed"
INTERRUPTED = "interrupted"  # not written: the command was interrupted before this cluster's write was sent
# The single-cluster command's refusals that mean "nothing to do here", not a failure.
NOTHING_TO_DO = frozenset({Code.APPROVAL_NOT_REQUIRED, Code.NOT_AWAITING_ACKNOWLEDGEMENT, Code.NOT_APPROVED,
                           Code.ALREADY_REVOKED})
# Its refusals: the cluster said no (its rules, its policies, its permissions, a lost race).
REFUSALS = frozenset({Code.ENDED, Code.DEADLINE_PASSED, Code.POLICY_DENIED, Code.POLICY_ERROR, Code.FORBIDDEN,
                      Code.ADMISSION_DENIED, Code.CONFLICT, Code.USAGE})


def item(context: str, result: str, rollout: str | None = None, code: str | None = None,
         message: str | None = None) -> dict[str, Any]:
    return {"context": context, "rollout": rollout, "result": result, "code": code, "message": message}


def refusal_item(context: str, rollout: str | None, err: AicrError, *, reach: str | None,
                 write_unanswered: bool = False) -> dict[str, Any]:
    """The result word of a refusal or error of the single-cluster command, or of an interruption.

    Interrupted before its write was sent: `interrupted`, nothing written; after (a second signal
    left a write unanswered, `write_unanswered`): `failed`, the write may be stored. `reach`: the
    flags by which a single-cluster command reaches this member (`--context NAME`), for the
    commands the message suggests; None where none does (an inventory's member).
    """
    if err.code == Code.INTERRUPTED and not write_unanswered:
        return item(context, INTERRUPTED, rollout, None, f"not written: {one_line(err, context)}")
    if write_unanswered and rollout:
        check = (f"check with kubectl aicr describe {shlex.quote(rollout)} {reach}" if reach
                 else "check its rollout on that cluster")
        err = AicrError(err.code, f"{err.message}: {check}", err.details)
    if err.code == Code.FORBIDDEN:
        err = AicrError(err.code, err.message, addressed_hints(err.details, reach))
    if err.code == Code.ALREADY_APPROVED:
        word = ALREADY_APPROVED
    elif err.code in NOTHING_TO_DO:
        word = SKIPPED
    elif err.code in REFUSALS:
        word = REFUSED
    else:
        word = FAILED
    return item(context, word, rollout, str(err.code), one_line(err, context))


def addressed_hints(details: tuple[str, ...] | list[str], reach: str | None) -> list[str]:
    """An RBAC refusal's detail lines with its `kubectl aicr whoami` made to ask this member: with its
    `--context`; left out where no single-cluster command reaches it (the refusal names the user)."""
    from aicr_core.domain.rollout_write import WHOAMI_HINT

    if reach is None:
        return [line for line in details if line != WHOAMI_HINT]
    return [f"{line} {reach}" if line == WHOAMI_HINT else line for line in details]


def outcome_item(outcome: Outcome[Any], rollout: str | None, reach: str | None) -> dict[str, Any]:
    """The item of a cluster whose turn gave no value: its error, or the interruption that left it."""
    assert outcome.error is not None
    return refusal_item(outcome.context, rollout, outcome.error, reach=reach, write_unanswered=outcome.write_unanswered)


def no_open_rollout(digest: str) -> str:
    return f"no rollout to plan {digest} that has not ended"


def written_message(action: Action, data: dict[str, Any]) -> str:
    """The fleet's line of one cluster's write (the action's message), and whether it was a dry run."""
    text = action.said(data)
    mode = data.get("dryRun")
    return f"{text} ({mode} dry run: nothing was written)" if mode in ("client", "server") else text


def with_server(entry: dict[str, Any], fleet: Fleet) -> dict[str, Any]:
    """An inventory member's item with its `server` (HOST:PORT), as the list before the write showed it;
    a context's item as it always was."""
    server = fleet.members.server(entry["context"])
    return {**entry, "server": server} if server else entry


# -- before the write ---------------------------------------------------------------------------------

def listing_lines(action: Action, digest: str, rows: list[tuple[str, api.Rollout]],
                  servers: Mapping[str, str | None] | None = None) -> list[str]:
    """What will be written, before it is: context, rollout, transition, phase, and the server of an
    inventory's member (`servers`: its name says nothing of its server)."""
    from aicr_core.domain import operator_api as api
    from aicr_core.framework.text_layout import table, value

    shown_servers = servers if servers and any(servers.values()) else None
    clusters = len({context for context, _ in rows})
    lines = [f"{action.title} plan {digest}: {len(rows)} rollout{'s' * (len(rows) != 1)} in "
             f"{clusters} cluster{'s' * (clusters != 1)}:"]
    lines += table(["CONTEXT", "ROLLOUT", "TRANSITION", "PHASE", *(["SERVER"] if shown_servers else [])], [
        [value(context), value(r.name), value(f"{api.short_digest(r.from_digest)}->{api.short_digest(r.to_digest)}"),
         value(r.phase), *([value(shown_servers.get(context))] if shown_servers else [])]
        for context, r in rows])
    return lines


def shared_clusters(servers: Mapping[str, str | None], runtimes: Mapping[str, str] | None = None) -> list[str]:
    """One warning a server that several inventory members resolve to, and one a ClusterRuntime UID their
    rollouts share (unless those members were named for their server already), naming them: a hub writer
    may point a member's name at another's cluster. A warning: the write goes on as confirmed. Members
    whose server is None (contexts: the user wrote the servers) are not compared."""
    def groups(values: Mapping[str, str | None]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for member, key in values.items():
            if key and servers.get(member) is not None:
                found.setdefault(key, []).append(member)
        return {key: members for key, members in found.items() if len(members) > 1}

    lines, named = [], set()
    for server, members in groups(servers).items():
        lines.append(f"{', '.join(members)} resolve to one server, {server}: {len(members)} members of the "
                     "inventory are one cluster")
        named.add(tuple(members))
    for uid, members in groups(runtimes or {}).items():
        if tuple(members) not in named:
            lines.append(f"{', '.join(members)} hold one ClusterRuntime (UID {uid}): {len(members)} members of "
                         "the inventory are one cluster")
    return lines


@dataclass(frozen=True)
class Confirmation:
    """What a fleet write shows before it writes, and asks: the listing (its lines), the warnings (clusters
    that are one), and the question, or None when there is nothing to ask (--yes, a dry run). The confirm
    callback answers whether to go ahead; with no question its answer is not asked for."""

    listing: list[str]
    warnings: list[str]
    question: str | None


def question(action: Action, rollouts: int, clusters: int) -> str:
    return (f"{action.title} {rollouts} rollout{'s' * (rollouts != 1)} in {clusters} "
            f"cluster{'s' * (clusters != 1)}?")


# -- after it -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FleetWritten:
    """What a fleet write (or the waves) did: one item a cluster in the members' order, the clusters' warnings
    (each `context NAME: ...`), whether the waves stopped the fleet, and the operation's interruption."""

    items: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    stopped: bool = False
    interruption: Interruption | None = None

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The clusters that failed with a code, as the document's `errors` (context, code, message)."""
        return [{"context": i["context"], "code": i["code"], "message": i["message"]}
                for i in self.items if i["result"] == FAILED and i["code"]]

    @property
    def interrupted(self) -> bool:
        return self.interruption is not None and self.interruption.requested

    @property
    def exit_code(self) -> int:
        """128 + the first signal when interrupted (130, 143); else 1 when any cluster was refused or failed, or
        the fleet stopped; else 0."""
        from aicr_core.errors import EXIT_INTERRUPTED

        if self.interruption is not None and self.interruption.requested:
            return self.interruption.exit_code or EXIT_INTERRUPTED
        return 1 if self.stopped or any(i["result"] in (REFUSED, FAILED) for i in self.items) else 0


def interrupted_line(written: FleetWritten) -> str:
    """After a signal, what one line says of a plan's write: no write after it, how many were not written."""
    assert written.interruption is not None
    not_written = sum(1 for i in written.items if i["result"] == INTERRUPTED)
    unsure = sum(1 for i in written.items if i["result"] == FAILED and i["code"] == str(Code.INTERRUPTED))
    return (f"interrupted ({written.interruption.name}): no write was sent after it; {not_written} "
            f"cluster{'s' * (not_written != 1)} not written (interrupted)"
            + (f", {unsure} whose write had no answer (it may be stored)" if unsure else ""))
