"""docs/alerting.md's snippets are what the real programs accept: the plain Prometheus scrape config
and the optional absent-webhook rule, checked with promtool (tools/build_monitoring.py builds it)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from testfixtures import compare

from support import monitoring_stack

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "alerting.md").read_text(encoding="utf-8")
pytestmark = pytest.mark.monitoring  # promtool


def yaml_block(starting: str) -> str:
    """The ```yaml block of the page whose text starts with `starting`."""
    for block in re.findall(r"```yaml\n(.*?)```", DOC, re.S):
        if block.startswith(starting):
            return str(block)
    raise AssertionError(f"docs/alerting.md has no yaml block starting {starting!r}")


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(monitoring_stack.binaries() / "promtool"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_the_plain_prometheus_config_is_valid_and_scrapes_the_webhook_s_pods(tmp_path: Path) -> None:
    config = yaml_block("rule_files: [rules.yaml]")
    shutil.copy(ROOT / "manifests" / "monitoring" / "rules.yaml", tmp_path)
    (tmp_path / "prometheus.yml").write_text(config, encoding="utf-8")
    proc = promtool("check", "config", "prometheus.yml", cwd=tmp_path)
    compare(proc.returncode, expected=0, suffix=proc.stdout + proc.stderr)
    jobs = {job["job_name"]: job for job in yaml.safe_load(config)["scrape_configs"]}
    webhook = jobs["aicr-admission"]
    compare([sd["role"] for sd in webhook["kubernetes_sd_configs"]], expected=["pod"])  # not the Service: see the page
    assert {"target_label": "aicr_component", "replacement": "admission-webhook"} in webhook["relabel_configs"]
    assert {"source_labels": ["__meta_kubernetes_pod_phase"], "regex": "Succeeded|Failed", "action": "drop"} \
        in webhook["relabel_configs"]  # an evicted replica, Failed until collected, is no replica down
    assert "kube-state-metrics" in jobs, jobs


def test_the_absent_webhook_rule_is_a_valid_rule(tmp_path: Path) -> None:
    rule = yaml.safe_load(yaml_block("- alert: AICRAdmissionWebhookAbsent"))
    (tmp_path / "absent.yaml").write_text(yaml.safe_dump({"groups": [{"name": "site", "rules": rule}]}))
    proc = promtool("check", "rules", "absent.yaml", cwd=tmp_path)
    compare(proc.returncode, expected=0, suffix=proc.stdout + proc.stderr)
