"""One write on one cluster: who you are, the rollout, its refusals, the policies, the conditional PATCH.

`write(session, request)` is what `approve`, `revoke` and `acknowledge` do, on
one cluster or on each of a fleet's (the fleet passes each cluster's session);
`decide_on_cluster(session, request)` the same reads and decision without the
write (`policy check`). The command only turns its flags into a `WriteRequest`
and what comes back into its `Result`.

Requests: a SelfSubjectReview, a GET of the rollout, a GET of where the policy
file is and one of the file (after the command's own refusals), a GET of the
assessment report only if an active policy reads it, a conditional PATCH (and
a second GET of the rollout only when the PATCH lost a race; an access review
only when the policy file may not be read; two after RBAC refused the PATCH, to
say what it lacks). `dry_run="server"` sends that PATCH with dryRun=All;
`"client"` sends two SelfSubjectAccessReviews instead and no write.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from aicr_core import clock
from aicr_core.domain import operator_api as api
from aicr_core.domain import rollouts
from aicr_core.domain.policy_engine import Decision
from aicr_core.domain.write_decision import decide, wants_assessment
from aicr_core.errors import AicrError, Code

if TYPE_CHECKING:
    from aicr_core.domain.actions import Action
    from aicr_core.session.identity import Identity
    from aicr_core.session.kube import KubeSession

# The last line of an RBAC refusal; the fleet adds the member's --context to it (aicr_core.fleet.plan_write).
WHOAMI_HINT = "who you are, your groups and whether you may approve: kubectl aicr whoami"


@dataclass(frozen=True)
class WriteRequest:
    """What a person asks: `action` on rollout `rollout`, with the flags that shape the write."""

    rollout: str
    action: Action
    reason: str | None = None           # --reason (None: not given)
    expires: timedelta | None = None    # --expires (None: the rollout's deadline)
    overrides: tuple[str, ...] = ()     # --override POLICY ...
    dry_run: str = "none"               # none | client | server
    operator_namespace: str = api.DEFAULT_OPERATOR_NAMESPACE  # where the assessment reports are
    local_policy: rollouts.PolicyFile | None = None       # --policy-file, read already (dry runs and checks only)
    flags: Mapping[str, Any] = field(default_factory=dict)  # the parsed flags, as policies see them (--ticket)


@dataclass(frozen=True)
class Written:
    """A write done (or, in a dry run, checked): the value, the Result's data, the policies' warnings."""

    value: Any
    data: dict[str, Any]  # rollout, the value's fields, dryRun (and with `client` the request not sent)
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class ClusterDecision:
    """The decision on a request as its cluster would take it: who asked, the rollout, the Decision."""

    me: Identity
    rollout: api.Rollout
    decision: Decision


def write(session: KubeSession, request: WriteRequest) -> Written:
    """The whole write; raises its refusals (the command's own, POLICY_DENIED, POLICY_ERROR, CONFLICT, ...)."""
    step = _OnCluster(session, request)
    now = clock.now()
    value = step.propose(now)  # the command's own refusals, before the policy file is read
    decision = step.decide(now)
    # Not `server_refuses`: where the user may neither read the policy file nor write, the PATCH is sent
    # and the API server refuses it in the words a user knows.
    refusal = decision.refusal()
    if refusal is not None:
        raise refusal
    data = {"rollout": request.rollout, **request.action.document(value), **step.send(value, decision, now)}
    return Written(value, data, tuple(decision.warnings()))


def decide_on_cluster(session: KubeSession, request: WriteRequest) -> ClusterDecision:
    """The write's reads and decision, nothing written. The command's own refusal is a Decision
    (`own_refusal`) decided before any policy file is read."""
    step = _OnCluster(session, request)
    now = clock.now()
    try:
        step.propose(now)
    except AicrError as refusal:
        return ClusterDecision(step.me, step.rollout, Decision.refused_by_command(request.action.name, now, refusal))
    return ClusterDecision(step.me, step.rollout, step.decide(now))


class _OnCluster:
    """One request on one cluster's session: the reads, in the order the requests are counted above."""

    def __init__(self, session: KubeSession, request: WriteRequest) -> None:
        self.session, self.request = session, request
        self.me = session.whoami()
        self.rollout = rollouts.read_rollout(session, request.rollout)

    def propose(self, now: datetime) -> Any:
        request = self.request
        return request.action.propose(self.rollout, self.me.username, now, request.reason or "", request.expires)

    def decide(self, now: datetime) -> Decision:
        """Every active policy's verdict, decided at `now` (the instant the value was built at: `--expires 2h`
        is an approval of 2h to the policies, even when the clock ticks in between)."""
        request = self.request
        file: rollouts.PolicyFile | AicrError
        try:
            file = request.local_policy or rollouts.read_policy_file(self.session)
        except AicrError as err:
            if err.code != Code.POLICY_ERROR:  # the file's own verdict refuses the write, as a decision
                raise
            file = err
        engine = rollouts.engine_for(file)
        may_write = True
        if isinstance(engine, rollouts.PolicyFileUnreadable):  # an access review, asked only then
            may_write = self.session.can_i(**api.approver_access(self.rollout.name))
        assessment: api.Assessment | AicrError | None = None
        if wants_assessment(engine, request.action):  # one more read, only when needed
            try:
                assessment = rollouts.read_report(self.session, request.operator_namespace,
                                                  self.rollout.assessment_digest).for_policies()
            except AicrError as err:
                if err.code in (Code.TIMEOUT, Code.INTERRUPTED):  # the command's own deadline, or Ctrl-C
                    raise
                assessment = err
        return decide(self.rollout, request.action, self.me, engine=engine, now=now, reason=request.reason,
                      expires=request.expires, overrides=request.overrides, assessment=assessment,
                      flags=request.flags, may_write=may_write)

    def send(self, value: Any, decision: Decision, now: datetime) -> dict[str, Any]:
        """One conditional write of `value` (with the override and the deciding policy file recorded); on a
        lost race, re-read and say who won. Returns what the result reports about a dry run: `dryRun`,
        and with `client` the request that was not sent."""
        request, rollout, action = self.request, self.rollout, self.request.action
        patch = action.patch(rollout, value)
        if decision.overridden:
            override = api.Override(self.me.username, action.name, tuple(decision.overridden), now)
            patch = api.with_override(rollout, patch, override)
        if request.local_policy is None and decision.source is not None:  # decided by the cluster's file: say which
            decided_by = api.PolicyDecision(self.me.username, action.name, now, decision.source, decision.digest)
            patch = api.with_policy_decision(rollout, patch, decided_by)
        mode, path = request.dry_run, api.rollout_path(rollout.name)
        if mode == "client":
            self.check_permissions()
            return {"dryRun": mode, "request": {"method": "PATCH", "path": path, "body": patch}}
        try:
            self.session.patch(path, patch, dry_run=mode == "server")
            return {"dryRun": mode}
        except AicrError as err:
            if err.code == Code.TIMEOUT and mode == "none":
                # The request was sent: the server may have stored it before the answer was lost.
                raise AicrError(Code.TIMEOUT, f"{err.message}; the {action.name} was sent and may have been "
                                f"stored: check with kubectl aicr describe {rollout.name}", err.details) from None
            if err.code == Code.FORBIDDEN:  # RBAC's no (admission's is ADMISSION_DENIED): say why, as the dry run
                raise self.refused_by_rbac(err) from None
            if err.code != Code.CONFLICT:
                raise
        raise action.lost_race(rollouts.read_rollout(self.session, rollout.name))

    def missing_permissions(self) -> list[str]:
        """What the API server checks before the write and RBAC does not grant this user, in words (two
        SelfSubjectAccessReviews): what `--dry-run=client` and a refused write both say is lacking."""
        name, missing = self.rollout.name, []
        if not self.session.can_i(**api.approver_access(name)):
            missing.append(f"update {api.ROLLOUTS}/approve (what approving, revoking and acknowledging need)")
        if not self.session.can_i("patch", group=api.GROUP, resource=api.ROLLOUTS, name=name):
            missing.append(f"patch {api.ROLLOUTS}")
        return missing

    def check_permissions(self) -> None:
        """What the API server will check before the write, asked as SelfSubjectAccessReviews."""
        missing = self.missing_permissions()
        if missing:
            raise AicrError(Code.FORBIDDEN, f"(client dry run) {self.me.username} may not write rollout "
                            f"{self.rollout.name}; the API server would refuse",
                            [f"not allowed: {m}" for m in missing])

    def refused_by_rbac(self, err: AicrError) -> AicrError:
        """The API server's 403 on the PATCH, explained: who it says you are, which command it refused,
        what RBAC does not grant (asked only now, after the refusal), and where to look next."""
        try:
            missing = self.missing_permissions()
        except AicrError as review_failed:  # the refusal stands; only its explanation is cut short
            if review_failed.code == Code.INTERRUPTED:  # Ctrl-C while asking: the person wants out, not more words
                raise
            missing, unexplained = [], f"what is lacking could not be asked: {review_failed.message}"
        else:
            unexplained = "RBAC grants both permissions now: it may have changed since the write was refused"
        lacking = [f"not allowed: {m}" for m in missing] or [unexplained]
        return AicrError(Code.FORBIDDEN, f"{self.me.username} may not {self.request.action.name} rollout "
                         f"{self.rollout.name}: the API server refused the write (RBAC); nothing was written",
                         [*lacking, f"the API server said: {err.message}", *err.details,
                          WHOAMI_HINT])
