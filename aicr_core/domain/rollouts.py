"""The domain reads of a rollout command: what the CLI and the webhook share.

Through a session passed in (this module never imports the Kubernetes
client): the rollout, the cluster's policy file (or a local one), and the
assessment report with its verification. The decision on a write is
`aicr_core.domain.write_decision`'s; the write `aicr_core.domain.rollout_write`'s.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from aicr_core.domain import operator_api as api
from aicr_core.domain.actions import ACTIONS
from aicr_core.errors import AicrError, Code, UsageError, shown, shown_argument

if TYPE_CHECKING:
    from aicr_core.domain.policy_engine import PolicyEngine
    from aicr_core.session.kube import KubeSession


# -- the rollout --------------------------------------------------------------------------------------

def parse_rollout(obj: Mapping[str, Any], records: bool = True) -> api.Rollout:
    """The rollout an object holds (INVALID_OBJECT when it is none), its records' actions checked against the
    Action table: a record naming an action the table does not hold is malformed, and left out (operator_api
    knows no action's name; it is given them here). `records=False` leaves the transition records and
    conditions out, as a listing does. The one parse of a rollout: the CLI's, the webhook's, the face's."""
    return api.rollout_from_object(obj, ACTIONS, records=records)


def added(before: api.Rollout, after: api.Rollout) -> api.Added:
    """What an update adds (operator_api.added), each new record's action one of the Action table's
    (else INVALID_OBJECT: the webhook refuses a record naming an unknown action)."""
    return api.added(before, after, ACTIONS)


def get_object(cluster: KubeSession, path: str, what: str) -> dict[str, Any]:
    """GET one object; a 404 says which object in words (`what`), not the server's path."""
    try:
        return cluster.get(path)
    except AicrError as err:
        if err.code == Code.NOT_FOUND:
            raise AicrError(Code.NOT_FOUND, f"{what} not found") from None
        raise


def read_rollout(cluster: KubeSession, name: str) -> api.Rollout:
    """The rollout `name`; an answer that is some other object (`{}`, say) is INVALID_OBJECT, never a rollout
    of dashes."""
    path = api.rollout_path(name)
    rollout = parse_rollout(get_object(cluster, path, f"rollout {name}"))
    if rollout.name != name:
        raise AicrError(Code.INVALID_OBJECT, f"GET {path}: the API server answered an object named "
                        f"{shown(rollout.name or 'nothing')}, not the rollout {name}")
    return rollout


# -- the policy file ----------------------------------------------------------------------------------

class PolicyFile(NamedTuple):
    """A policy file's text (None: there is none where it was looked for) and where it is, in words."""

    text: str | None
    source: str


class PolicyFileUnreadable(AicrError):
    """The user may not read the policy file (POLICY_ERROR)."""


# Where the cluster's policy file lives is decided on the cluster, by whoever may annotate its
# ClusterRuntime (the operator and cluster admins; the operator's approver role may only get it): no flag,
# environment variable or kubeconfig setting of an approver moves it (docs/policies.md). Every approver
# may read the runtime under the operator's own RBAC, so nothing of ours needs granting. The annotation
# names the namespace; without it (or without a runtime), aicr-system.
LOCATION_ANNOTATION = api.ANNOTATION_POLICY_NAMESPACE
DEFAULT_POLICY_NAMESPACE = api.DEFAULT_OPERATOR_NAMESPACE
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def policy_namespace(cluster: KubeSession) -> str:
    """The namespace of the cluster's policy file, as the cluster's admins set it (one GET)."""
    where = f"the ClusterRuntime {api.RUNTIME_NAME}'s annotation {LOCATION_ANNOTATION}"
    try:
        runtime = cluster.get(api.runtime_path())
    except AicrError as err:
        if err.code == Code.NOT_FOUND:
            return DEFAULT_POLICY_NAMESPACE
        if err.code in (Code.FORBIDDEN, Code.UNAUTHORIZED):
            # Not knowing where the rules are must not mean having none (nor reading them elsewhere).
            raise PolicyFileUnreadable(Code.POLICY_ERROR, f"cannot read the ClusterRuntime {api.RUNTIME_NAME}, "
                                       f"whose annotation {LOCATION_ANNOTATION} says where the policy file "
                                       f"lives: {err.message}; refusing (fail closed)") from None
        raise
    annotated, namespace = api.policy_namespace_annotation(runtime)
    if not annotated:
        return DEFAULT_POLICY_NAMESPACE
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
        shown = repr(namespace[:80]) if isinstance(namespace, str) else type(namespace).__name__
        raise AicrError(Code.POLICY_ERROR, f"{where} is no namespace name ({shown}); refusing (fail closed)")
    return namespace


def read_policy_file(cluster: KubeSession) -> PolicyFile:
    """The cluster's policy file, where the cluster says it is: two GETs. No ConfigMap: text None.

    A file that cannot be read (no permission, no `policy.yaml` key) refuses:
    not knowing the rules must not mean having none.
    """
    from aicr_core.domain import policy_file  # its schema (pydantic models): describe does without it

    namespace = policy_namespace(cluster)
    source = policy_file.configmap_source(namespace)
    try:
        configmap = cluster.get(api.configmap_path(namespace, policy_file.CONFIGMAP_NAME))
    except AicrError as err:
        if err.code == Code.NOT_FOUND:
            return PolicyFile(None, source)
        if err.code in (Code.FORBIDDEN, Code.UNAUTHORIZED):
            raise PolicyFileUnreadable(Code.POLICY_ERROR, f"cannot read the policy file {source}: {err.message}; "
                                       "refusing (fail closed)") from None
        raise
    try:
        return PolicyFile(policy_file.configmap_text(configmap, source), source)
    except policy_file.PolicyFileError as err:
        raise err.as_error() from None


def read_local_policy_file(path: str) -> PolicyFile:
    """`--policy-file PATH` or `policy validate FILE`; an unreadable path is a usage error, one that is no
    regular file or too large a POLICY_ERROR (read no further than the limit)."""
    from aicr_core.domain import local_files, policy_file

    try:
        return PolicyFile(local_files.read_text(path, policy_file.MAX_BYTES), path)
    except local_files.Refused as refused:
        raise policy_file.PolicyFileError(shown_argument(path), [f"(file): {refused}"]).as_error() from None
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise UsageError(f"--policy-file {shown_argument(path)}: cannot read it: {reason}") from None


def engine_for(file: PolicyFile | AicrError) -> PolicyEngine | AicrError:
    """The policy engine of the installed policies under `file`, or why there is none (every write refused)."""
    from aicr_core.domain.policy_engine import PolicyEngine, load_policies

    if isinstance(file, AicrError):
        return file
    return PolicyEngine.build(load_policies(), file.text, file.source)


# -- the assessment report ----------------------------------------------------------------------------

class ReportRead(NamedTuple):
    """A rollout's assessment report as far as it could be read and verified.

    `status`: `none` (the rollout records no report), `verified`, `unverified`
    (no report.json, or its sha256 is not the recorded digest), `invalid`
    (matches, but is not a report), `missing` (recorded, not found) or
    `unavailable` (could not be read). `report` and `verdicts` only when verified.
    A NamedTuple: `describe` defines it at every start, where a frozen dataclass would cost it more
    (docs/performance.md, "What the code's shape saves").
    """

    status: str
    digest: str | None = None
    configmap: str | None = None  # namespace/name
    report_digest: str | None = None  # sha256 of the report.json found
    error: str | None = None
    report: api.AssessmentReport | None = None  # the whole report (not with verdicts_only)
    verdicts: tuple[api.ComponentVerdict, ...] = ()

    def for_policies(self) -> api.Assessment:
        """What an approval policy is given (`assessment`)."""
        return api.Assessment(self.status, self.digest, self.verdicts if self.status == "verified" else ())


def read_report(cluster: KubeSession, namespace: str, digest: str | None) -> ReportRead:
    """The report the rollout records, verified against its digest (one API read)."""
    if digest is None:
        return ReportRead("none")
    name = api.assessment_configmap_name(digest)
    where = f"{namespace}/{name}"
    try:
        configmap = cluster.get(api.configmap_path(namespace, name))
    except AicrError as err:
        if err.code == Code.NOT_FOUND:
            return ReportRead("missing", digest, where)
        if err.code == Code.FORBIDDEN:
            return ReportRead("unavailable", digest, where, error=err.message)
        raise
    return verify_report(digest, api.report_text(configmap), where)


def verify_report(digest: str, text: str | None, where: str | None = None, *,
                  verdicts_only: bool = False) -> ReportRead:
    """A report is trusted only when its sha256 is the digest the rollout records.

    `verdicts_only` (a listing): the same verification and status, without parsing the rest of the report.
    """
    if text is None:
        return ReportRead("unverified", digest, where)
    actual = api.sha256_digest(text)
    if actual != digest:
        return ReportRead("unverified", digest, where, actual)
    try:
        if verdicts_only:
            return ReportRead("verified", digest, where, actual, verdicts=api.report_verdicts(text))
        report = api.parse_report(text)
    except AicrError as err:
        return ReportRead("invalid", digest, where, actual, error=err.message)
    return ReportRead("verified", digest, where, actual, report=report, verdicts=tuple(
        api.ComponentVerdict(c.component, c.verdict) for c in report.components))
