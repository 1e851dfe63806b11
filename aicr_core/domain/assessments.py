"""The ASSESSMENT of many rollouts: their reports read with one LIST, verified once per digest, the worst verdict.

The read model's part that reads (a listing's, `list` and the fleet's; a dashboard's):
`describe` reads and verifies one report itself (`rollouts.read_report`).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from aicr_core.domain import operator_api as api
from aicr_core.errors import AicrError, Code

if TYPE_CHECKING:
    from aicr_core.session.kube import KubeSession

# AICR's verdicts, worst first: a list shows the worst verdict of a rollout's report.
VERDICTS = ("blocked", "unknown", "manual", "unversioned", "safe")


def read_reports(cluster: KubeSession, namespace: str) -> tuple[Mapping[str, str | None] | None, str | None]:
    """Assessment ConfigMaps by name -> report.json text, with one LIST; None and a warning if not allowed."""
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

    def __init__(self, reports: Mapping[str, str | None] | None, namespace: str,
                 cluster: KubeSession | None = None) -> None:
        self.reports, self.namespace = reports, namespace
        self.cluster = cluster  # list --watch: a report that was not there at the start is read when needed
        self._by_digest: dict[str, dict[str, Any]] = {}

    def of(self, digest: str | None) -> dict[str, Any]:
        if digest is None:
            return {"status": "none", "digest": None, "verdict": None}
        if digest not in self._by_digest:
            self._by_digest[digest] = self._verify(digest)
        return self._by_digest[digest]

    def _verify(self, digest: str) -> dict[str, Any]:
        from aicr_core.domain.rollouts import read_report, verify_report

        if self.reports is None:
            return {"status": "unavailable", "digest": digest, "verdict": None}
        name = api.assessment_configmap_name(digest)
        if name not in self.reports and self.cluster is not None:
            report = read_report(self.cluster, self.namespace, digest)
        elif name not in self.reports:
            return {"status": "missing", "digest": digest, "verdict": None}
        else:
            report = verify_report(digest, self.reports[name], verdicts_only=True)
        verdict = worst_verdict(v.verdict for v in report.verdicts) if report.status == "verified" else None
        return {"status": report.status, "digest": digest, "verdict": verdict}


def worst_verdict(verdicts: Iterable[Any]) -> str:
    """blocked > unknown > manual > unversioned > safe; a verdict AICR does not define counts as unknown,
    and a report that assesses no component shows nothing to be safe: unknown."""
    ranks = [VERDICTS.index(v) if v in VERDICTS else VERDICTS.index("unknown") for v in verdicts]
    return VERDICTS[min(ranks)] if ranks else "unknown"
