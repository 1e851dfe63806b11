"""What the rollout commands share: the ROLLOUT argument, reading, the policies, and the conditional write.

Imported by command modules at module level, so it imports nothing heavy;
`aicr_core.kube` (the Kubernetes client) is imported only when a command runs.
"""
from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from aicr_core.errors import AicrError, Code, UsageError

if TYPE_CHECKING:
    from datetime import datetime

    from aicr_core import operator_api as api  # imported when a command runs, so `help` stays fast
    from aicr_core.deadline import Deadline
    from aicr_core.hookspecs import Identity
    from aicr_core.kube import Cluster
    from aicr_core.policy import Decision

# A Kubernetes object name (DNS subdomain): anything else cannot name a rollout
# and must not reach a URL path.
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def object_name(text: str) -> str:
    if not _NAME.fullmatch(text):  # fullmatch: `$` alone would let a trailing newline through
        raise argparse.ArgumentTypeError(f"{text!r} is not a valid rollout name")
    return text


def many_objects() -> AbstractContextManager[None]:
    """Pause the cyclic garbage collector while thousands of objects are decoded and parsed (see aicr_core.memory)."""
    from aicr_core.memory import paused_gc

    return paused_gc()


def add_rollout_argument(parser: argparse.ArgumentParser, waiting_first: bool = False, optional: bool = False) -> None:
    """ROLLOUT; TAB completes it from the cluster (`waiting_first`: those waiting for a person come first).

    `optional`: the command has a fleet form (`--plan DIGEST`) that stands in for it.
    """
    action = parser.add_argument("rollout", metavar="ROLLOUT", type=object_name, nargs="?" if optional else None,
                                 help="the RuntimeRollout, e.g. rollout-3f9a1c0d2b7e4a51-1")
    action.completer = RolloutNames(waiting_first)  # type: ignore[attr-defined]
    action.fleet_alternative = "--plan DIGEST" if optional else None  # type: ignore[attr-defined]


class RolloutNames:
    """Completes ROLLOUT: not-ended rollouts newest first, ended ones last (one LIST, within the budget)."""

    def __init__(self, waiting_first: bool) -> None:
        self.waiting_first = waiting_first

    def __call__(self, prefix: str, parsed_args: argparse.Namespace, **_: Any) -> Any:
        from aicr_core import operator_api as api
        from aicr_core.completion import API_SECONDS, KEEP_ORDER, NO_FILES, Candidates
        from aicr_core.deadline import Deadline

        with many_objects():
            objects, _version = connect(parsed_args, Deadline(API_SECONDS)).list(api.rollouts_path())
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
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: use none, client or server")
    return text


def add_dry_run_flag(parser: argparse.ArgumentParser) -> None:
    action = parser.add_argument(
        "--dry-run", metavar="MODE", type=dry_run_mode, default="none",
        help="server: send the same conditional write with dryRun=All (RBAC, CRD rules and admission decide, "
             "nothing is stored); client: check the refusals, the policies and your permissions "
             "(SelfSubjectAccessReviews) and print what would be written, sending no write; none (default)")
    action.completer = lambda prefix, **_: [m for m in DRY_RUN_MODES if m.startswith(prefix)]  # type: ignore[attr-defined]


def connect(args: argparse.Namespace, deadline: Deadline | None = None) -> Cluster:
    """A session from the connection flags; `deadline` bounds all its calls (default: the command's).

    Run across clusters (aicr_core.fleet), a command is run once per cluster with that cluster's
    session in `fleet_session`: the same code path, on the session the fleet made for it.
    """
    from aicr_core import kube

    session: Cluster | None = getattr(args, "fleet_session", None)
    if session is not None:
        return session if deadline is None else kube.Cluster(session.settings, deadline)
    return kube.connect_args(args, deadline)


def waits_for_person(rollout: api.Rollout) -> bool:
    """AwaitingApproval with no approval yet, or AwaitingAcknowledgement of a release nobody acknowledged."""
    from aicr_core import operator_api as api

    if rollout.phase == api.PHASE_AWAITING_APPROVAL:
        return rollout.approval_required and rollout.approval is None
    if rollout.awaiting_acknowledgement and rollout.awaiting_release:
        return not any(a.release == rollout.awaiting_release for a in rollout.acknowledgements)
    return False


def get_object(cluster: Cluster, path: str, what: str) -> dict[str, Any]:
    """GET one object; a 404 says which object in words (`what`), not the server's path."""
    try:
        return cluster.get(path)
    except AicrError as err:
        if err.code == Code.NOT_FOUND:
            raise AicrError(Code.NOT_FOUND, f"{what} not found") from None
        raise


def read_rollout(cluster: Cluster, name: str) -> api.Rollout:
    from aicr_core import operator_api as api

    return api.parse_rollout(get_object(cluster, api.rollout_path(name), f"rollout {name}"))


# -- the policy file and the facts policies may ask for ---------------------------------------

class PolicyFileUnreadable(AicrError):
    """The user may not read the policy file (POLICY_ERROR)."""


def read_policy_file(cluster: Cluster, namespace: str) -> tuple[str | None, str]:
    """(text, source) of the cluster's policy file: one GET. No ConfigMap: (None, source).

    A file that cannot be read (no permission, no `policy.yaml` key) refuses:
    not knowing the rules must not mean having none.
    """
    from aicr_core import operator_api as api
    from aicr_core import policy_file

    source = policy_file.configmap_source(namespace)
    try:
        configmap = cluster.get(api.configmap_path(namespace, policy_file.CONFIGMAP_NAME))
    except AicrError as err:
        if err.code == Code.NOT_FOUND:
            return None, source
        if err.code in (Code.FORBIDDEN, Code.UNAUTHORIZED):
            raise PolicyFileUnreadable(Code.POLICY_ERROR, f"cannot read the policy file {source}: {err.message}; "
                                       "refusing (fail closed)") from None
        raise
    try:
        return policy_file.configmap_text(configmap, source), source
    except policy_file.PolicyFileError as err:
        raise err.as_error() from None


def read_local_policy_file(path: str) -> tuple[str, str]:
    """(text, source) of `--policy-file PATH`; an unreadable path is a usage error, one that is no regular
    file or too large a POLICY_ERROR (read no further than the limit)."""
    from aicr_core import local_files, policy_file

    try:
        return local_files.read_text(path, policy_file.MAX_BYTES), path
    except local_files.Refused as refused:
        raise policy_file.PolicyFileError(path, [f"(file): {refused}"]).as_error() from None
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise UsageError(f"--policy-file {path}: cannot read it: {reason}") from None


def read_assessment(cluster: Cluster, namespace: str, rollout: api.Rollout) -> api.Assessment:
    """The rollout's report, verified exactly as `describe` verifies it, as policies see it."""
    from aicr_commands.describe import read_assessment as describe_assessment
    from aicr_core import operator_api as api

    document = describe_assessment(cluster, namespace, rollout.assessment_digest)
    verified = document.get("status") == "verified"
    components = tuple(api.ComponentVerdict(str(c.get("component") or ""), str(c.get("verdict") or ""))
                       for c in (document.get("components") or []) if verified and isinstance(c, dict))
    return api.Assessment(str(document.get("status")), document.get("digest"), components)


def decide(cluster: Cluster, args: argparse.Namespace, command: str, policy_file: tuple[str | None, str],
           action: str, rollout: api.Rollout, user: Identity, now: datetime, **proposed: Any) -> Decision:
    """Every active policy's verdict on `action` under `policy_file` ((text, source): the cluster's or a local one).

    `now` is the instant the proposed write was built at: the policies decide at that instant, so
    `--expires 2h` is an approval of 2h to them, even when the clock ticks between the two.
    """
    from aicr_core.hookspecs import PolicyContext
    from aicr_core.policy import PolicyEngine, load_policies

    engine = PolicyEngine.build(load_policies(), *policy_file)
    if action == "approve" and engine.wants("approve", "assessment"):  # one more GET, only when needed
        proposed["assessment"] = read_assessment(cluster, args.operator_namespace, rollout)
    return engine.decide(action, rollout=rollout, user=user, context=PolicyContext.from_args(command, args, now),
                         overrides=args.override or (), **proposed)


class RolloutWrite:
    """The path approve, revoke and acknowledge share: who you are, the rollout, the policies, one write.

    Requests: a SelfSubjectReview, a GET of the rollout, a GET of the policy
    file (after the command's own refusals), a GET of the assessment report
    only if an active policy reads it, a conditional PATCH (and a second GET
    of the rollout only when the PATCH lost a race; an access review only
    when the policy file may not be read). `--dry-run=server` sends
    that PATCH with dryRun=All; `--dry-run=client` sends two
    SelfSubjectAccessReviews instead and no write.
    """

    def __init__(self, args: argparse.Namespace, command: str) -> None:
        if getattr(args, "policy_file", None) and getattr(args, "dry_run", "none") == "none":
            # Trying a file is what --policy-file is for: with a real write, a local file would
            # stand in for the cluster's rules. With --dry-run nothing is written, so it may.
            raise UsageError(f"--policy-file only tries a policy file: use it with --dry-run=client|server "
                             f"or policy check; a real {command} always follows the cluster's policy file")
        self.args, self.command = args, command
        # The policies' warnings (warn mode, overridden refusals): the command's Result carries them,
        # so they are printed with the write that followed them, never before a refusal that wrote nothing.
        self.warnings: list[str] = []
        self.cluster = connect(args)
        self.me = self.cluster.whoami()
        self.rollout = read_rollout(self.cluster, args.rollout)
        self.override: api.Override | None = None

    def check_policies(self, hook: str, now: datetime, **proposed: Any) -> None:
        """Every policy's verdict on the write proposed at `now`; raises POLICY_DENIED or POLICY_ERROR.

        Warnings (policies in warn mode, overridden refusals) are kept in
        `warnings` for the result; an override is kept to be recorded by `write`.
        """
        from aicr_core import operator_api as api

        action = hook.removeprefix("aicr_pre_")
        try:
            local = getattr(self.args, "policy_file", None)  # only with --dry-run: see __init__
            policy_file = (read_local_policy_file(local) if local
                           else read_policy_file(self.cluster, self.args.operator_namespace))
        except PolicyFileUnreadable:
            # Approvers may read the file. Someone who may not approve at all is refused by the
            # API server whatever the policies say: let it say why (one access review, only here).
            if not self.cluster.can_i(**api.approver_access(self.rollout.name)):
                return
            raise
        decision = decide(self.cluster, self.args, self.command, policy_file, action, self.rollout, self.me, now,
                          **proposed)
        refusal = decision.refusal()
        if refusal is not None:
            raise refusal
        self.warnings.extend(decision.warnings())
        if decision.overridden:
            self.override = api.Override(self.me.username, action, tuple(decision.overridden), now)

    def write(self, patch: dict[str, Any], explain_conflict: Callable[[api.Rollout], AicrError]) -> dict[str, Any]:
        """One conditional write (with the override, if any); on a lost race, re-read and say who won.

        Returns what the result reports about a dry run: `dryRun`, and with
        `client` the request that was not sent.
        """
        from aicr_core import operator_api as api

        if self.override is not None:
            patch = api.with_override(self.rollout, patch, self.override)
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
                raise AicrError(Code.TIMEOUT, f"{err.message}; the {self.command} was sent and may have been "
                                f"stored: check with kubectl aicr describe {self.rollout.name}", err.details) from None
            if err.code != Code.CONFLICT:
                raise
        raise explain_conflict(read_rollout(self.cluster, self.rollout.name))

    def check_permissions(self) -> None:
        """What the API server will check before the write, asked as SelfSubjectAccessReviews."""
        from aicr_core import operator_api as api

        name, missing = self.rollout.name, []
        if not self.cluster.can_i(**api.approver_access(name)):
            missing.append(f"update {api.ROLLOUTS}/approve (what approving, revoking and acknowledging need)")
        if not self.cluster.can_i("patch", group=api.GROUP, resource=api.ROLLOUTS, name=name):
            missing.append(f"patch {api.ROLLOUTS}")
        if missing:
            raise AicrError(Code.FORBIDDEN, f"(client dry run) {self.me.username} may not write rollout {name}; "
                            "the API server would refuse", [f"not allowed: {m}" for m in missing])
