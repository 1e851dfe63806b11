"""What the rollout commands share: the ROLLOUT argument and its completion, --dry-run, the session.

The domain itself (what an action is, the reads, the listing ROLLOUT is completed from, the
decision, the write, a write's request from the flags) is the core's: `aicr_core.domain.actions`,
`rollouts`, `rollout_listing`, `write_decision`, `rollout_write` and `write_flags`.

Imported by command modules at module level, so it imports nothing heavy;
`aicr_core.session.kube` (the Kubernetes client) is imported only when a command runs.
"""
from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

from aicr_core.errors import shown

if TYPE_CHECKING:
    from aicr_core.domain import operator_api as api  # imported when a command runs, so `help` stays fast
    from aicr_core.session.deadline import Deadline
    from aicr_core.session.kube import KubeSession

# A Kubernetes object name (DNS subdomain): anything else cannot name a rollout
# and must not reach a URL path.
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def valid_rollout_name(text: str) -> str:
    """ROLLOUT as typed, if it can name a Kubernetes object (argparse type)."""
    if not _NAME.fullmatch(text):  # fullmatch: `$` alone would let a trailing newline through
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a valid rollout name")
    return text


def add_rollout_argument(parser: argparse.ArgumentParser, waiting_first: bool = False, optional: bool = False) -> None:
    """ROLLOUT; TAB completes it from the cluster (`waiting_first`: those waiting for a person come first).

    `optional`: the command has a fleet form (`--plan DIGEST`) that stands in for it.
    """
    action = parser.add_argument("rollout", metavar="ROLLOUT", type=valid_rollout_name,
                                 nargs="?" if optional else None,
                                 help="the RuntimeRollout, e.g. rollout-3f9a1c0d2b7e4a51-1")
    action.completer = RolloutNames(waiting_first)  # type: ignore[attr-defined]
    action.fleet_alternative = "--plan DIGEST" if optional else None  # type: ignore[attr-defined]


class RolloutNames:
    """Completes ROLLOUT: not-ended rollouts newest first, ended ones last (one LIST, within the budget)."""

    def __init__(self, waiting_first: bool) -> None:
        self.waiting_first = waiting_first

    def __call__(self, prefix: str, parsed_args: argparse.Namespace, **_: Any) -> Any:
        from aicr_core.domain.rollout_documents import waits_for_person
        from aicr_core.domain.rollout_listing import list_rollouts
        from aicr_core.framework.completion import API_SECONDS, KEEP_ORDER, NO_FILES, Candidates
        from aicr_core.session.deadline import Deadline

        listed = list_rollouts(session(parsed_args, Deadline(API_SECONDS)))  # the damaged left out, unsaid
        rollouts = [r for r in listed.rollouts if r.name.startswith(prefix)]
        rollouts.sort(key=lambda r: r.name)
        rollouts.sort(key=lambda r: r.created.timestamp() if r.created else 0, reverse=True)
        rollouts.sort(key=lambda r: (r.ended, not (self.waiting_first and waits_for_person(r))))
        return Candidates([f"{r.name}\t{self.describe(r)}" for r in rollouts], NO_FILES | KEEP_ORDER)

    @staticmethod
    def describe(r: api.Rollout) -> str:
        from aicr_core.domain.rollout_documents import waits_for_person

        if r.ended:
            return f"Ended ({r.outcome or 'no outcome'})"
        if waits_for_person(r):
            return (f"{r.phase}: waits for an acknowledgement of {r.awaiting_release}" if r.awaiting_acknowledgement
                    else f"{r.phase}: waits for an approval")
        return r.phase


DRY_RUN_MODES = ("none", "client", "server")


def dry_run_mode(text: str) -> str:
    if text not in DRY_RUN_MODES:
        raise argparse.ArgumentTypeError(f"invalid value {shown(text)}: use none, client or server")
    return text


def add_dry_run_flag(parser: argparse.ArgumentParser) -> None:
    action = parser.add_argument(
        "--dry-run", metavar="MODE", type=dry_run_mode, default="none",
        help="server: send the same conditional write with dryRun=All (RBAC, CRD rules and admission decide, "
             "nothing is stored); client: check the refusals, the policies and your permissions "
             "(SelfSubjectAccessReviews) and print what would be written, sending no write; none (default)")
    action.completer = lambda prefix, **_: [m for m in DRY_RUN_MODES if m.startswith(prefix)]  # type: ignore[attr-defined]
    action.modes = ("client", "server", "none")  # type: ignore[attr-defined]  # named by a bare --dry-run (common_flags.py)


def session(args: argparse.Namespace, deadline: Deadline | None = None) -> KubeSession:
    """A session from the connection flags; `deadline` bounds all its calls (default: the command's).
    (Here so that command modules need not import the Kubernetes client before they run.)

    Across clusters the fleet makes each cluster's session and passes it explicitly (aicr_core.fleet.fan_out).
    """
    from aicr_core.session import kube

    return kube.connect_args(args, deadline)
