"""The webhook's metrics: their labels from a decision, the policy file's health, the plain-HTTP listener."""
from __future__ import annotations

import math
import subprocess
import urllib.request

import envtest
import pytest
from prometheus_client.parser import text_string_to_metric_families
from testfixtures import compare

from aicr_admission.metrics import BUCKETS, Metrics, labels_of
from aicr_admission.policy_source import PolicySource
from aicr_admission.review import Answer
from aicr_core.domain.policy_engine import load_policies
from aicr_core.errors import AicrError, Code

from support import monitoring_stack


def test_labels_name_the_one_action_and_the_verdict() -> None:
    compare([labels_of(a) for a in (
        Answer("u", True, actions=["approve"]),
        Answer("u", False, actions=["revoke"], code="POLICY_DENIED"),
        Answer("u", False, actions=["acknowledge"], code="POLICY_ERROR"),
        Answer("u", False, actions=["approve"], code="ADMISSION_DENIED"),
        Answer("u", True, actions=[]),
        Answer("u", True, actions=["approve", "acknowledge"]),
    )], expected=[("approve", "allow"), ("revoke", "deny"), ("acknowledge", "error"), ("approve", "deny"),
                  ("other", "allow"), ("other", "allow")])


def test_the_buckets_span_1_ms_to_3_s_and_include_the_api_servers_bounds() -> None:
    compare((BUCKETS[0], BUCKETS[-1]), expected=(0.001, 3.0))
    assert list(BUCKETS) == sorted(set(BUCKETS))
    assert {0.005, 0.01, 0.025, 0.1} <= set(BUCKETS)


def test_the_policy_files_health_follows_its_reads() -> None:
    clock = [100.0]
    answers: list[object] = [(None, "ConfigMap aicr-system/aicr-approval-policy"),
                             AicrError(Code.UNAVAILABLE, "connection refused")]

    def read() -> tuple[str | None, str]:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[return-value]

    source = PolicySource(load_policies(), read, monotonic=lambda: clock[0])
    compare(source.health(), expected=(False, math.inf))  # never read
    source.refresh()
    clock[0] += 3
    compare(source.health(), expected=(True, 3.0))
    source.refresh()  # the API server is unreachable: the last file stays in force for a while
    clock[0] += 4
    compare(source.health(), expected=(False, 7.0))


def test_metrics_are_served_in_prometheus_text_on_their_own_port() -> None:
    metrics = Metrics()
    metrics.watch_policy_file(lambda: (True, 1.5))
    metrics.reviewed("approve", "allow", 0.002)
    metrics.reviewed("approve", "allow", 0.004)
    metrics.connections.inc()
    port = metrics.serve("127.0.0.1", envtest.free_port())
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
    finally:
        metrics.stop()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}
    compare(samples[("aicr_admission_reviews_total", (("action", "approve"), ("verdict", "allow")))], expected=2.0)
    compare(samples[("aicr_admission_reviews_total", (("action", "revoke"), ("verdict", "deny")))], expected=0.0)
    compare(samples[("aicr_admission_review_duration_seconds_bucket", (("le", "0.003"),))], expected=1.0)
    compare(samples[("aicr_admission_review_duration_seconds_count", ())], expected=2.0)
    compare(samples[("aicr_admission_connections_total", ())], expected=1.0)
    compare(samples[("aicr_admission_policy_file_ok", ())], expected=1.0)
    compare(samples[("aicr_admission_policy_file_age_seconds", ())], expected=1.5)
    compare(samples[("aicr_admission_events_dropped_total", ())], expected=0.0)


def served_text(metrics: Metrics) -> str:
    port = metrics.serve("127.0.0.1", envtest.free_port())
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            return resp.read().decode()
    finally:
        metrics.stop()


@pytest.mark.monitoring  # promtool
def test_no_created_series_and_promtool_finds_nothing_to_report() -> None:
    """prometheus_client adds a `_created` series beside every counter and histogram unless told not to."""
    metrics = Metrics()
    metrics.watch_policy_file(lambda: (True, 1.5))
    metrics.reviewed("approve", "allow", 0.002)
    text = served_text(metrics)
    names = {s.name for family in text_string_to_metric_families(text) for s in family.samples}
    compare(sorted(n for n in names if n.endswith("_created")), expected=[])
    assert "aicr_admission_reviews_total" in names
    promtool = monitoring_stack.binaries() / "promtool"
    proc = subprocess.run([str(promtool), "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    compare((proc.returncode, proc.stdout + proc.stderr), expected=(0, ""))
