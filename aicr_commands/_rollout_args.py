"""What the rollout commands share: the ROLLOUT argument, the session, and the path of a write.

The domain itself (what an action is, the reads, the decision) is the core's:
`aicr_core.domain.actions` and `aicr_core.domain.rollouts`; this module maps flags onto it.

Imported by command modules at module level, so it imports nothing heavy;
`aicr_core.session.kube` (the Kubernetes client) is imported only when a command runs.
"""
from __future__ import annotations

import argparse
import re
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from aicr_core.errors import AicrError, Code, UsageError, shown

if TYPE_CHECKING:
    from datetime import datetime

    from aicr_core.domain import operator_api as api  # imported when a command runs, so `help` stays fast
    from aicr_core.domain.actions import Action
    from aicr_core.domain.policy_engine import Decision
    from aicr_core.session.deadline import Deadline
    from aicr_core.session.kube import Cluster

# A Kubernetes object name (DNS subdomain): anything else cannot name a rollout
# and must not reach a URL path.
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def valid_rollout_name(text: str) -> str:
    """ROLLOUT as typed, if it can name a Kubernetes object (argparse type)."""
    if not _NAME.fullmatch(text):  # fullmatch: `$` alone would let a trailing newline through
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a valid rollout name")
    return text


def many_objects() -> AbstractContextManager[None]:
    """Pause the cyclic garbage collector while thousands of objects are decoded and parsed
    (see aicr_core.framework.gc_pause)."""
    from aicr_core.framework.gc_pause import paused_gc

    return paused_gc()


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
        from aicr_core.domain import operator_api as api
        from aicr_core.framework.completion import API_SECONDS, KEEP_ORDER, NO_FILES, Candidates
        from aicr_core.session.deadline import Deadline

        with many_objects():
            objects, _version = session(parsed_args, Deadline(API_SECONDS)).list(api.rollouts_path())
            rollouts = []
            for obj in objects:
                try:
                    rollouts.append(api.parse_rollout(obj, records=False))
                except AicrError:
                    continue
        rollouts = [r for r in rollouts if r.name.startswith(prefix)]
        rollouts.sort(key=lambda r: r.name)
        rollouts.sort(key=lambda r: r.created.timestamp() if r.created else 0, reverse=True)
        rollouts.sort(key=lambda r: (r.ended, not (self.waiting_first and waits_for_person(r))))
        return Candidates([f"{r.name}\t{self.describe(r)}" for r in rollouts], NO_FILES | KEEP_ORDER)

    @staticmethod
    def describe(r: api.Rollout) -> str:
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


def session(args: argparse.Namespace, deadline: Deadline | None = None) -> Cluster:
    """A session from the connection flags; `deadline` bounds all its calls (default: the command's).
    (Here so that command modules need not import the Kubernetes client before they run.)

    Run across clusters (aicr_core.fleet.fan_out), a command is run once per cluster with that cluster's
    session in `fleet_session`: the same code path, on the session the fleet made for it.
    """
    from aicr_core.session import kube

    given: Cluster | None = getattr(args, "fleet_session", None)
    if given is not None:
        return given if deadline is None else kube.Cluster(given.settings, deadline)
    return kube.connect_args(args, deadline)


def waits_for_person(rollout: api.Rollout) -> bool:
    """AwaitingApproval with no approval yet, or AwaitingAcknowledgement of a release nobody acknowledged."""
    from aicr_core.domain import operator_api as api

    if rollout.phase == api.PHASE_AWAITING_APPROVAL:
        return rollout.approval_required and rollout.approval is None
    if rollout.awaiting_acknowledgement and rollout.awaiting_release:
        return not any(a.release == rollout.awaiting_release for a in rollout.acknowledgements)
    return False


class RolloutWrite:
    """What approve, revoke, acknowledge and `policy check` share: who you are, the rollout, a decision, a write.

    Requests: a SelfSubjectReview, a GET of the rollout, a GET of where the
    policy file is and one of the file (after the command's own refusals), a GET of the assessment report
    only if an active policy reads it, a conditional PATCH (and a second GET
    of the rollout only when the PATCH lost a race; an access review only
    when the policy file may not be read). `--dry-run=server` sends
    that PATCH with dryRun=All; `--dry-run=client` sends two
    SelfSubjectAccessReviews instead and no write.
    """

    def __init__(self, args: argparse.Namespace, action: Action, *, writes: bool = True) -> None:
        from aicr_core.domain import rollouts

        if writes and getattr(args, "policy_file", None) and getattr(args, "dry_run", "none") == "none":
            # Trying a file is what --policy-file is for: with a real write, a local file would
            # stand in for the cluster's rules. With --dry-run nothing is written, so it may.
            raise UsageError(f"--policy-file only tries a policy file: use it with --dry-run=client|server "
                             f"or policy check; a real {action.name} always follows the cluster's policy file")
        # Read the local file first: a typo in its path fails before any request.
        self.local = rollouts.read_local_policy_file(args.policy_file) if getattr(args, "policy_file", None) else None
        self.args, self.action = args, action
        # The policies' warnings (warn mode, overridden refusals): the command's Result carries them,
        # so they are printed with the write that followed them, never before a refusal that wrote nothing.
        self.warnings: list[str] = []
        self.cluster = session(args)
        self.me = self.cluster.whoami()
        self.rollout = rollouts.read_rollout(self.cluster, args.rollout)
        self.override: api.Override | None = None
        self.decided_by: api.PolicyDecision | None = None  # the cluster's policy file that decided the write

    def propose(self, now: datetime) -> Any:
        """What the command would write at `now`; raises its own refusals (ENDED, ALREADY_APPROVED, ...)."""
        expires = self.args.expires.delta if getattr(self.args, "expires", None) is not None else None
        return self.action.propose(self.rollout, self.me.username, now, str(getattr(self.args, "reason", "") or ""),
                                   expires)

    def decision(self, value: Any, now: datetime) -> Decision:
        """Every active policy's verdict on writing `value`, decided at `now` (the instant it was built at:
        `--expires 2h` is an approval of 2h to the policies, even when the clock ticks in between)."""
        from aicr_core.domain import operator_api as api
        from aicr_core.domain import rollouts
        from aicr_core.domain.hookspecs import PolicyContext

        file: rollouts.PolicyFile | AicrError
        try:
            file = self.local or rollouts.read_policy_file(self.cluster)
        except AicrError as err:
            if err.code != Code.POLICY_ERROR:  # the file's own verdict refuses the write, as a decision
                raise
            file = err
        return rollouts.decide_write(
            self.action, value, engine=rollouts.engine_for(file), rollout=self.rollout, user=self.me,
            context=PolicyContext.from_args(self.action.name, self.args, now), overrides=self.args.override or (),
            read_assessment=lambda: rollouts.read_report(self.cluster, self.args.operator_namespace,
                                                         self.rollout.assessment_digest).for_policies(),
            may_write=lambda: self.cluster.can_i(**api.approver_access(self.rollout.name)))

    def check_policies(self, value: Any, now: datetime) -> None:
        """Raises the decision's refusal (POLICY_DENIED, POLICY_ERROR); warnings are kept in `warnings` for
        the result; an override and the policy file that decided are kept to be recorded by `write`."""
        from aicr_core.domain import operator_api as api

        decision = self.decision(value, now)
        refusal = decision.refusal()
        if refusal is not None:
            raise refusal
        self.warnings.extend(decision.warnings())
        if decision.overridden:
            self.override = api.Override(self.me.username, self.action.name, tuple(decision.overridden), now)
        if self.local is None and decision.source is not None:  # decided by the cluster's file: say which
            self.decided_by = api.PolicyDecision(self.me.username, self.action.name, now, decision.source,
                                                 decision.digest)

    def write(self, value: Any) -> dict[str, Any]:
        """One conditional write of `value` (with the override, if any); on a lost race, re-read and say who won.

        Returns what the result reports about a dry run: `dryRun`, and with
        `client` the request that was not sent.
        """
        from aicr_core.domain import operator_api as api
        from aicr_core.domain import rollouts

        patch = self.action.patch(self.rollout, value)
        if self.override is not None:
            patch = api.with_override(self.rollout, patch, self.override)
        if self.decided_by is not None:
            patch = api.with_policy_decision(self.rollout, patch, self.decided_by)
        mode, path = getattr(self.args, "dry_run", "none"), api.rollout_path(self.rollout.name)
        if mode == "client":
            self.check_permissions()
            return {"dryRun": mode, "request": {"method": "PATCH", "path": path, "body": patch}}
        try:
            self.cluster.patch(path, patch, dry_run=mode == "server")
            return {"dryRun": mode}
        except AicrError as err:
            if err.code == Code.TIMEOUT and mode == "none":
                # The request was sent: the server may have stored it before the answer was lost.
                raise AicrError(Code.TIMEOUT, f"{err.message}; the {self.action.name} was sent and may have been "
                                f"stored: check with kubectl aicr describe {self.rollout.name}", err.details) from None
            if err.code != Code.CONFLICT:
                raise
        raise self.action.lost_race(rollouts.read_rollout(self.cluster, self.rollout.name))

    def run(self) -> tuple[Any, dict[str, Any]]:
        """The command: propose, decide, write. Returns the value written and what `write` reports."""
        from aicr_core import clock

        now = clock.now()
        value = self.propose(now)
        self.check_policies(value, now)
        return value, self.write(value)

    def check_permissions(self) -> None:
        """What the API server will check before the write, asked as SelfSubjectAccessReviews."""
        from aicr_core.domain import operator_api as api

        name, missing = self.rollout.name, []
        if not self.cluster.can_i(**api.approver_access(name)):
            missing.append(f"update {api.ROLLOUTS}/approve (what approving, revoking and acknowledging need)")
        if not self.cluster.can_i("patch", group=api.GROUP, resource=api.ROLLOUTS, name=name):
            missing.append(f"patch {api.ROLLOUTS}")
        if missing:
            raise AicrError(Code.FORBIDDEN, f"(client dry run) {self.me.username} may not write rollout {name}; "
                            "the API server would refuse", [f"not allowed: {m}" for m in missing])
