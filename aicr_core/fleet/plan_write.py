"""approve|revoke|acknowledge --plan DIGEST across clusters: pick the plan's rollout, list, confirm, write.

Each cluster's write is the single-cluster write, unchanged (the domain's `rollout_write.write`
on that cluster's session, its request from the same flags: `write_flags`): its own refusals,
its own policy file and overrides, its own SelfSubjectReview. What is added is only around it:
the rollout picked by the plan's digest, the listing and the confirmation, and one result word
a cluster. The waves (`approve --plan --waves`) are `wave_runner`'s, on the same pieces.

Interrupted (SIGINT, SIGTERM: aicr_core.framework.interruption): no new write is sent, a write
already sent finishes or ends by its deadline, and the result is printed all the same, each
cluster not written `interrupted`; the exit is 128 + the signal (130, 143).

Imported when a fleet write runs, not by `help`.
"""
from __future__ import annotations

import argparse
import contextlib
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aicr_core.domain.write_flags import dry_run
from aicr_core.errors import AicrError, Code, UsageError
from aicr_core.fleet.fan_out import Fleet, Outcome, Turn
from aicr_core.fleet.gathering import cluster_args, one_line
from aicr_core.framework import interruption
from aicr_core.framework.result import Result

if TYPE_CHECKING:
    from aicr_core.domain import operator_api as api
    from aicr_core.domain.actions import Action
    from aicr_core.framework.command import AicrCommand
    from aicr_core.framework.interruption import Interruption
    from aicr_core.session.kube import KubeSession


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


def reach_of(args: argparse.Namespace, member: str) -> str | None:
    """The flags by which a single-cluster command reaches this member of the fleet's source."""
    from aicr_core.fleet import sources

    return sources.chosen(args).single_cluster_flags(member)


# -- before any call --------------------------------------------------------------------------------

def check_inputs(args: argparse.Namespace, action: Action) -> None:
    """What the single-cluster command checks before its first call, checked once for the fleet."""
    from aicr_core import clock
    from aicr_core.domain.write_limits import check_expires, check_reason

    if action.takes_reason:
        check_reason(args.reason, action.name)
    if action.takes_expires:
        check_expires(args.expires, clock.now())
    if getattr(args, "policy_file", None) and dry_run(args) == "none":
        raise UsageError(f"--policy-file only tries a policy file: use it with --dry-run=client|server; "
                         f"a real {action.name} always follows each cluster's policy file")


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def check_confirmation(args: argparse.Namespace, action: Action) -> None:
    """Without a terminal to ask at, a real write needs --yes: [USAGE] before any call, nothing written."""
    if dry_run(args) == "none" and not args.yes and not interactive():
        raise UsageError(f"{action.name} --plan writes in several clusters: pass --yes to confirm "
                         "(stdin or stderr is no terminal to ask at); nothing was written")


# -- the plan's rollout in each cluster ---------------------------------------------------------------

def plan_rollouts(cluster: KubeSession, digest: str) -> list[api.Rollout]:
    """Every rollout to the plan (spec.to.digest compared in full), newest first: one LIST."""
    from aicr_core.domain.rollout_listing import list_rollouts

    # A malformed rollout is no rollout to this plan (list names it).
    found = [r for r in list_rollouts(cluster).rollouts if r.to_digest == digest]
    found.sort(key=lambda r: (attempt(r.name), r.created.timestamp() if r.created else 0.0), reverse=True)
    return found


def attempt(name: str) -> int:
    """`rollout-<hex>-<attempt>`: the attempt number (0 when the name has none)."""
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def open_rollout(rollouts: list[api.Rollout], digest: str) -> api.Rollout | None:
    """The one rollout to the plan that has not ended; two: INVALID_OBJECT naming both."""
    still_open = [r for r in rollouts if not r.ended]
    if len(still_open) > 1:
        raise AicrError(Code.INVALID_OBJECT, f"{len(still_open)} rollouts to plan {digest} have not ended: "
                        + ", ".join(r.name for r in still_open) + "; approve one by name with --context")
    return still_open[0] if still_open else None


def no_open_rollout(digest: str) -> str:
    return f"no rollout to plan {digest} that has not ended"


def plan_rollout(turn: Turn, digest: str) -> api.Rollout:
    """The plan's open rollout in this cluster; none: NOT_FOUND (`policy check --plan`)."""
    rollout = open_rollout(plan_rollouts(turn.session, digest), digest)
    if rollout is None:
        raise AicrError(Code.NOT_FOUND, no_open_rollout(digest))
    return rollout


@dataclass
class Pick:
    """A cluster's rollouts to the plan, newest first, and the open one (if any)."""

    rollouts: list[api.Rollout]
    open: api.Rollout | None


def pick(turn: Turn, digest: str) -> Pick:
    rollouts = plan_rollouts(turn.session, digest)
    return Pick(rollouts, open_rollout(rollouts, digest))


def would_refuse(action: Action, args: argparse.Namespace, rollout: api.Rollout) -> AicrError | None:
    """The command's own refusal of this rollout, as it would say it (before its policies), or None."""
    from aicr_core import clock

    try:  # the Action's own refusals, as the command runs them (the value it would propose is not needed)
        action.propose(rollout, "", clock.now(), "",
                       args.expires.delta if getattr(args, "expires", None) is not None else None)
    except AicrError as err:
        return err
    return None


def write_one(command: AicrCommand, args: argparse.Namespace, action: Action, turn: Turn,
              rollout: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The single-cluster write on this cluster's rollout, with its session; its result word, and its warnings."""
    from aicr_core.domain.rollout_write import write
    from aicr_core.domain.write_flags import write_request

    try:
        request = write_request(cluster_args(args, turn, rollout=rollout), action, rollout)
        written = write(turn.session, request)
    except AicrError as err:
        if err.code is Code.USAGE:  # the command's usage error (the fleet re-raises it), not this rollout's refusal
            raise
        return refusal_item(turn.context, rollout, err, reach=reach_of(args, turn.context)), ()
    warnings = tuple(f"context {turn.context}: {w}" for w in written.warnings)
    return item(turn.context, action.past, rollout, None, written_message(action, written.data)), warnings


def written_message(action: Action, data: dict[str, Any]) -> str:
    """The fleet's line of one cluster's write (the action's message), and whether it was a dry run."""
    text = action.said(data)
    mode = data.get("dryRun")
    return f"{text} ({mode} dry run: nothing was written)" if mode in ("client", "server") else text


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


def warn_shared(command: AicrCommand, servers: Mapping[str, str | None],
                runtimes: Mapping[str, str] | None = None) -> None:
    """Each shared server or ClusterRuntime a `warning:` line on stderr, before anything is asked or written."""
    for warning in shared_clusters(servers, runtimes):
        command.app.warn(warning)


def confirm(command: AicrCommand, question: str, stop: Interruption | None = None) -> bool:
    """Ask at the terminal (stderr, stdin): y or yes goes ahead; a signal there (`stop` records it) does not."""
    command.app.stderr.write(f"{question} [y/N] ")
    command.app.stderr.flush()
    try:
        with stop.prompting() if stop is not None else contextlib.nullcontext():
            answer = sys.stdin.readline()
    except interruption.Interrupted:
        command.app.stderr.write("\n")
        return False
    return answer.strip().lower() in ("y", "yes")


# -- the command ---------------------------------------------------------------------------------------

def fleet_write(command: AicrCommand, args: argparse.Namespace, action: Action) -> Result:
    """`approve|revoke|acknowledge --plan DIGEST --contexts ...`: one result a cluster (FleetWrite).

    A signal on the way (SIGINT, SIGTERM) is recorded, not raised: the result is printed all the same.
    """
    with interruption.deferred() as stop:
        return interrupted_result(command, stop, write_across(command, args, action, stop))


def write_across(command: AicrCommand, args: argparse.Namespace, action: Action, stop: Interruption) -> Result:
    """Pick the plan's rollout in each cluster, list, confirm, write; after a signal, nothing more is written."""
    check_inputs(args, action)
    check_confirmation(args, action)
    selection = Fleet.from_args(args)
    picks = selection.run(lambda turn: pick(turn, args.plan))
    items: dict[str, dict[str, Any]] = {}
    to_write: list[tuple[str, api.Rollout]] = []
    for outcome in picks:
        if outcome.value is None:
            items[outcome.context] = outcome_item(outcome, None, reach_of(args, outcome.context))
            continue
        rollout = outcome.value.open
        if rollout is None:
            items[outcome.context] = item(outcome.context, SKIPPED, message=no_open_rollout(args.plan))
            continue
        refusal = would_refuse(action, args, rollout)
        if refusal is not None:
            items[outcome.context] = refusal_item(outcome.context, rollout.name, refusal,
                                                  reach=reach_of(args, outcome.context))
        else:
            to_write.append((outcome.context, rollout))
    if to_write and not stop.requested:
        servers = {context: selection.members.server(context) for context, _ in to_write}
        tell(command, "\n".join(listing_lines(action, args.plan, to_write, servers)) + "\n")
        warn_shared(command, servers, {context: r.runtime_uid for context, r in to_write})
        if dry_run(args) == "none" and not args.yes:
            clusters = len(to_write)
            if not confirm(command, f"{action.title} {len(to_write)} rollout{'s' * (len(to_write) != 1)} in "
                                    f"{clusters} cluster{'s' * (clusters != 1)}?", stop) and not stop.requested:
                raise UsageError("not confirmed; nothing was written")
    if stop.requested:  # no write is sent after a signal
        for context, rollout in to_write:
            items[context] = item(context, INTERRUPTED, rollout.name, None,
                                  f"not written: interrupted ({stop.name}) before its turn")
        to_write = []
    names = dict(to_write)
    warnings: list[str] = []
    written = selection.run(lambda turn: write_one(command, args, action, turn, names[turn.context].name),
                            contexts=[context for context, _ in to_write])
    for done in written:
        if done.value is None:
            items[done.context] = outcome_item(done, names[done.context].name, reach_of(args, done.context))
            continue
        items[done.context], cluster_warnings = done.value
        warnings += cluster_warnings
    ordered = [with_server(items[context], selection) for context in selection.contexts if context in items]
    return fleet_result(command, ordered, warnings)


def with_server(entry: dict[str, Any], selection: Fleet) -> dict[str, Any]:
    """An inventory member's item with its `server` (HOST:PORT), as the list before the write showed it;
    a context's item as it always was."""
    server = selection.members.server(entry["context"])
    return {**entry, "server": server} if server else entry


def outcome_item(outcome: Outcome[Any], rollout: str | None, reach: str | None) -> dict[str, Any]:
    """The item of a cluster whose turn gave no value: its error, or the interruption that left it."""
    assert outcome.error is not None
    return refusal_item(outcome.context, rollout, outcome.error, reach=reach, write_unanswered=outcome.write_unanswered)


def interrupted_result(command: AicrCommand, stop: Interruption, result: Result) -> Result:
    """After a signal: one line on stderr saying so, and the exit 128 + the signal (130, 143)."""
    if not stop.requested:
        return result
    items = result.data["items"]
    not_written = sum(1 for i in items if i["result"] == INTERRUPTED)
    unsure = sum(1 for i in items if i["result"] == FAILED and i["code"] == str(Code.INTERRUPTED))
    tell(command, f"interrupted ({stop.name}): no write was sent after it; {not_written} "
                   f"cluster{'s' * (not_written != 1)} not written (interrupted)"
          + (f", {unsure} whose write had no answer (it may be stored)" if unsure else "") + "\n")
    return Result(result.kind, result.data, stop.exit_code, result.names, result.warnings)


def fleet_result(command: AicrCommand, items: list[dict[str, Any]], warnings: list[str],
                 stopped: bool = False) -> Result:
    """The FleetWrite document; `error:` lines for the clusters that failed; exit 1 when any was refused or failed."""
    failed = [i for i in items if i["result"] == FAILED and i["code"]]
    for entry in failed:
        command.app.print_error(AicrError(entry["code"], f"context {entry['context']}: {entry['message']}"))
    bad = stopped or any(i["result"] in (REFUSED, FAILED) for i in items)
    errors = [{"context": i["context"], "code": i["code"], "message": i["message"]} for i in failed]
    from aicr_core.domain import operator_api as api

    names = tuple(f"{i['context']}/{api.rollout_reference(i['rollout'])}" for i in items if i["rollout"])
    return Result("FleetWrite", {"items": items, "errors": errors}, 1 if bad else 0, names, tuple(warnings))


def tell(command: AicrCommand, text: str) -> None:
    """`text` on stderr, made safe for a terminal (the listing before a fleet's write)."""
    from aicr_core.framework.terminal import safe

    command.app.stderr.write(safe(text))
    command.app.stderr.flush()
