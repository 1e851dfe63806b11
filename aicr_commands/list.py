"""`kubectl aicr list`: the rollouts, and which of them wait for a person."""
from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from aicr_commands import _rollouts
from aicr_core import clock
from aicr_core.command import AicrCommand
from aicr_core.errors import AicrError, Code
from aicr_core.result import Result

if TYPE_CHECKING:
    from aicr_core import operator_api as api  # imported when the command runs, so `help` stays fast
    from aicr_core.kube import Cluster

# AICR's verdicts, worst first: a list shows the worst verdict of a rollout's report.
VERDICTS = ("blocked", "unknown", "manual", "unversioned", "safe")
# The operator's phases (operator_api.PHASES, spelled here so that `help` need not import the API module).
PHASES = ("Pending", "AwaitingApproval", "Progressing", "AwaitingAcknowledgement", "Validating", "Ended")
MAX_WARNINGS = 5  # about malformed rollouts: a handful names them, the rest are counted


def phase_name(text: str) -> str:
    if text not in PHASES:
        raise argparse.ArgumentTypeError(f"unknown phase {text!r}: use one of {', '.join(PHASES)}")
    return text


class List(AicrCommand):
    """List rollouts that have not ended, newest first, and what each waits for.

    Columns: NAME, PHASE (with the outcome once ended), APPROVAL (worded as
    describe words it), DEADLINE (and the time left), WAITING-ON (the release
    whose acknowledgement the rollout awaits), ASSESSMENT (the worst verdict of
    AICR's report, only when its sha256 matches the digest the rollout records:
    blocked > unknown > manual > unversioned > safe; else unverified, missing,
    invalid, none, or unavailable when you may not read the reports), AGE.
    -o wide adds the transition and the number of steps; -o name prints
    runtimerollout.operator.aicr.run/<name> lines.

    Two API requests whatever the number of rollouts: one paginated LIST of
    rollouts and one LIST of assessment ConfigMaps (label
    operator.aicr.run/role=assessment) in the operator namespace. Without
    permission to list ConfigMaps you still get the list, with a warning.

    Examples:
      # What waits for me?
      kubectl aicr list --pending

      # Every rollout, ended ones too, with transitions and step counts
      kubectl aicr list --all -o wide

      # Names of those in one phase, for a script
      kubectl aicr list --phase AwaitingAcknowledgement -o name

    Codes:
      NOT_FOUND  the API server does not serve RuntimeRollouts (no operator CRDs)
      FORBIDDEN  you may not list rollouts
      API
    """

    uses_flags = ("operator_namespace",)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--all", action="store_true", help="include rollouts that have ended")
        parser.add_argument("--pending", action="store_true",
                            help="only rollouts waiting for a person: AwaitingApproval with no approval yet, or "
                                 "AwaitingAcknowledgement of a release nobody has acknowledged")
        action = parser.add_argument(
            "--phase", metavar="PHASE", type=phase_name, action="append", default=[],
            help="only rollouts in this phase (repeatable; Ended lists ended ones without --all): "
                 + ", ".join(PHASES))
        action.completer = lambda prefix, **_: [p for p in PHASES if p.startswith(prefix)]  # type: ignore[attr-defined]

    def take_action(self, args: argparse.Namespace) -> Result:
        from concurrent.futures import ThreadPoolExecutor

        from aicr_core import kube
        from aicr_core import operator_api as api
        from aicr_core.deadline import Deadline

        cluster = _rollouts.session(args)
        # The reports are read beside the rollouts (a second connection with the same deadline):
        # the server works on one list while this process parses the other.
        with _rollouts.many_objects(), ThreadPoolExecutor(1) as beside:
            sibling = kube.Cluster(cluster.settings, Deadline(cluster.deadline.remaining()))
            reading = beside.submit(read_reports, sibling, args.operator_namespace)
            objects = list_rollouts(cluster)
            rollouts, warnings = parse_all(objects)
            del objects  # the raw JSON is most of the memory: let it go before the reports arrive
            rollouts = [r for r in rollouts if (args.all or not r.ended or api.PHASE_ENDED in args.phase)
                        and (not args.phase or r.phase in args.phase)
                        and (not args.pending or _rollouts.waits_for_person(r))]
            rollouts.sort(key=lambda r: r.name)
            rollouts.sort(key=lambda r: r.created or _EPOCH, reverse=True)  # newest first, ties by name
            reports, warning = reading.result()
            if warning and any(r.assessment_digest for r in rollouts):
                warnings.append(warning)
            assessments = Assessments(reports, args.operator_namespace)
            items = [item(r, assessments.of(r.assessment_digest)) for r in rollouts]
        return Result("RolloutList", {"items": items}, names=tuple(api.rollout_reference(r.name) for r in rollouts),
                      warnings=tuple(warnings))


_EPOCH = clock.parse_time("1970-01-01T00:00:00Z")


def list_rollouts(cluster: Cluster) -> list[dict[str, Any]]:
    """Every rollout (one paginated LIST); a server without the operator's CRDs says so in words."""
    from aicr_core import operator_api as api

    try:
        objects, _ = cluster.list(api.rollouts_path())
    except AicrError as err:
        if err.code == Code.NOT_FOUND:
            raise AicrError(Code.NOT_FOUND, f"this API server does not serve {api.GROUP}/{api.VERSION} "
                            "RuntimeRollouts: the AICR operator's CRDs are not installed") from None
        raise
    return objects


def parse_all(objects: Iterable[Mapping[str, Any]]) -> tuple[list[api.Rollout], list[str]]:
    """Every rollout that parses; one that does not is named in a warning, never a reason to list nothing."""
    from aicr_core import operator_api as api

    rollouts, bad = [], []
    for obj in objects:
        try:
            rollouts.append(api.parse_rollout(obj, records=False))
        except AicrError as err:
            if err.code != Code.INVALID_OBJECT:
                raise
            bad.append(err.message)
    warnings = [f"not listed: {message}" for message in bad[:MAX_WARNINGS]]
    if len(bad) > MAX_WARNINGS:
        warnings.append(f"not listed: {len(bad) - MAX_WARNINGS} more malformed rollouts")
    return rollouts, warnings


def read_reports(cluster: Cluster, namespace: str) -> tuple[Mapping[str, str | None] | None, str | None]:
    """Assessment ConfigMaps by name -> report.json text, with one LIST; None and a warning if not allowed."""
    from aicr_core import operator_api as api

    try:
        configmaps, _ = cluster.list(api.configmaps_path(namespace), {"labelSelector": api.ASSESSMENT_SELECTOR})
    except AicrError as err:
        if err.code not in (Code.FORBIDDEN, Code.UNAUTHORIZED):
            raise
        return None, (f"cannot list assessment reports in namespace {namespace}: {err.message}; "
                      "ASSESSMENT shows unavailable")
    return {api.metadata_name(cm): api.report_text(cm) for cm in configmaps}, None


class Assessments:
    """The ASSESSMENT of each rollout, verified as describe verifies it, once per report digest."""

    def __init__(self, reports: Mapping[str, str | None] | None, namespace: str) -> None:
        self.reports, self.namespace = reports, namespace
        self._by_digest: dict[str, dict[str, Any]] = {}

    def of(self, digest: str | None) -> dict[str, Any]:
        if digest is None:
            return {"status": "none", "digest": None, "verdict": None}
        if digest not in self._by_digest:
            self._by_digest[digest] = self._verify(digest)
        return self._by_digest[digest]

    def _verify(self, digest: str) -> dict[str, Any]:
        from aicr_core import operator_api as api
        from aicr_core.rollouts import verify_report

        if self.reports is None:
            return {"status": "unavailable", "digest": digest, "verdict": None}
        name = api.assessment_configmap_name(digest)
        if name not in self.reports:
            return {"status": "missing", "digest": digest, "verdict": None}
        report = verify_report(digest, self.reports[name], verdicts_only=True)
        verdict = worst_verdict(v.verdict for v in report.verdicts) if report.status == "verified" else None
        return {"status": report.status, "digest": digest, "verdict": verdict}


def worst_verdict(verdicts: Iterable[Any]) -> str:
    """blocked > unknown > manual > unversioned > safe; a verdict AICR does not define counts as unknown,
    and a report that assesses no component shows nothing to be safe: unknown."""
    ranks = [VERDICTS.index(v) if v in VERDICTS else VERDICTS.index("unknown") for v in verdicts]
    return VERDICTS[min(ranks)] if ranks else "unknown"


def item(r: api.Rollout, assessment: dict[str, Any]) -> dict[str, Any]:
    from aicr_commands.describe import approval_data, time_or_none

    return {
        "name": r.name,
        "created": time_or_none(r.created),
        "phase": r.phase,
        "outcome": r.outcome or None,
        "approval": approval_data(r),
        "deadline": time_or_none(r.deadline),
        "waitingOn": r.awaiting_release or None if r.awaiting_acknowledgement else None,
        "waitingForPerson": _rollouts.waits_for_person(r),
        "assessment": assessment,
        "transition": {"from": r.from_digest, "to": r.to_digest},
        "steps": len(r.steps),
    }
