"""manifests/monitoring/ agrees with the operator API module, the CRDs and the contract of docs/alerting.md.

The kube-state-metrics config spells the operator's field paths a second time (it
is YAML a site hands to kube-state-metrics): each path is checked here against
what aicr_core/domain/operator_api/ reads, by writing a value at that path and
seeing parse_rollout return it, so a rename in the operator's API fails here and
stays a change in one package. The rule checks are the contract's static ones;
`promtool test rules` (.ci/run) and tests/cluster/test_alerting.py show them work.
"""
from __future__ import annotations

import configparser
import copy
import datetime as dt
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from testfixtures import compare

from aicr_core.domain import operator_api
from aicr_core.domain.rollouts import parse_rollout

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "manifests" / "monitoring"

# The contract's metrics (docs/alerting.md, "Metrics"): name -> its own labels.
METRICS = {
    "aicr_runtimerollout_info": {"rollout", "runtime", "to_digest"},
    "aicr_runtimerollout_status_phase": {"rollout", "phase"},
    "aicr_runtimerollout_approval_required": {"rollout"},
    "aicr_runtimerollout_deadline_timestamp_seconds": {"rollout"},
    "aicr_runtimerollout_approval_expires_timestamp_seconds": {"rollout", "approver"},
    "aicr_runtimerollout_created_timestamp_seconds": {"rollout"},
    "aicr_runtimerollout_status_condition": {"rollout", "type", "reason"},
    "aicr_clusterruntime_status_condition": {"runtime", "type", "reason"},
    # Beyond the contract's eight (it allows more): what people did that the phase does not show yet.
    "aicr_runtimerollout_revocation_timestamp_seconds": {"rollout", "revoker"},
    "aicr_runtimerollout_acknowledgement_timestamp_seconds": {"rollout", "release", "acknowledger"},
    "aicr_runtimerollout_awaiting_release_info": {"rollout", "release"},
}
ALERTS = {  # name -> severity
    "AICRApprovalPending": "warning",
    "AICRApprovalDeadlineSoon": "critical",
    "AICRApprovalExpiringSoon": "warning",
    "AICRAcknowledgementPending": "warning",
    "AICRRolloutStalled": "warning",
    "AICRAdmissionWebhookDown": "critical",
    "AICRAdmissionPolicyFileBroken": "critical",
}
WAITING = {"AICRApprovalPending": "30m", "AICRAcknowledgementPending": "30m", "AICRRolloutStalled": "15m",
           "AICRAdmissionWebhookDown": "5m", "AICRAdmissionPolicyFileBroken": "5m"}

MOMENT = "2031-02-03T04:05:06Z"
LATER = "2031-02-03T09:05:06Z"


def load(name: str) -> Any:
    with open(MONITORING / name, encoding="utf-8") as file:
        return yaml.safe_load(file)


def resources() -> dict[str, dict[str, Any]]:
    return {r["groupVersionKind"]["kind"]: r for r in load("custom-resource-state.yaml")["spec"]["resources"]}


def metric_paths(resource: dict[str, Any]) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """(metric name, label or `value`, the full field path) of every path a resource's config reads.

    `labelsFromPath` inside a metric is relative to that metric's `path` (kube-state-metrics' rule)."""
    prefix = resource["metricNamePrefix"]
    for label, path in resource.get("labelsFromPath", {}).items():
        yield "*", label, tuple(path)
    for metric in resource["metrics"]:
        name, each = f"{prefix}_{metric['name']}", metric["each"]
        body = each[{"Gauge": "gauge", "StateSet": "stateSet", "Info": "info"}[each["type"]]]
        base = tuple(body.get("path", ()))
        if each["type"] != "Info":
            yield name, "value", base + tuple(body.get("valueFrom", ()))
        for label, path in body.get("labelsFromPath", {}).items():
            yield name, label, base + tuple(path)


def rollout_object() -> dict[str, Any]:
    """A rollout as the operator writes it, with the fields the config reads set to values of their own."""
    return {
        "apiVersion": f"{operator_api.GROUP}/{operator_api.VERSION}", "kind": "RuntimeRollout",
        "metadata": {"name": "rollout-0123456789abcdef-1", "creationTimestamp": MOMENT},
        "spec": {"runtime": {"name": "cluster", "uid": "u"}, "to": {"digest": "sha256:" + "a" * 64},
                 "deadline": LATER, "approvalRequired": True,
                 "approval": {"user": "alice", "expires": LATER, "reason": "CHG-1"},
                 "revocation": {"user": "carol", "time": LATER, "reason": "CHG-2"},
                 "acknowledgements": [{"release": "nvsentinel", "user": "dave", "time": LATER}]},
        "status": {"phase": "AwaitingAcknowledgement", "awaitingRelease": "gpu-operator",
                   "conditions": [{"type": "Ready", "status": "True", "reason": "Reconciled"}]},
    }


def when(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


# The full path of each field the config reads -> (a new value to write there, what parse_rollout must give).
ROLLOUT_READS: dict[tuple[str, ...], tuple[Any, Callable[[operator_api.Rollout], Any]]] = {
    ("metadata", "name"): ("rollout-fedcba9876543210-2", lambda r: r.name),
    ("metadata", "creationTimestamp"): ("2030-01-01T00:00:00Z", lambda r: r.created),
    ("spec", "runtime", "name"): ("other", lambda r: r.runtime_name),
    ("spec", "to", "digest"): ("sha256:" + "b" * 64, lambda r: r.to_digest),
    ("spec", "deadline"): ("2030-01-01T00:00:00Z", lambda r: r.deadline),
    ("spec", "approvalRequired"): (False, lambda r: r.approval_required),
    ("spec", "approval", "expires"): ("2030-01-01T00:00:00Z", lambda r: r.approval and r.approval.expires),
    ("spec", "approval", "user"): ("bob", lambda r: r.approval and r.approval.user),
    ("spec", "revocation", "time"): ("2030-01-01T00:00:00Z", lambda r: r.revocation and r.revocation.time),
    ("spec", "revocation", "user"): ("erin", lambda r: r.revocation and r.revocation.user),
    ("spec", "acknowledgements", "release"): ("dcgm", lambda r: r.acknowledgements[0].release),
    ("spec", "acknowledgements", "user"): ("frank", lambda r: r.acknowledgements[0].user),
    ("spec", "acknowledgements", "time"): ("2030-01-01T00:00:00Z", lambda r: r.acknowledgements[0].time),
    ("status", "awaitingRelease"): ("dcgm", lambda r: r.awaiting_release),
    ("status", "phase"): ("Progressing", lambda r: r.phase),
    ("status", "conditions", "type"): ("Stalled", lambda r: r.conditions[0].type),
    ("status", "conditions", "reason"): ("InventoryDrift", lambda r: r.conditions[0].reason),
    ("status", "conditions", "status"): ("False", lambda r: r.conditions[0].status),
}
CONDITION_ITEM_FIELDS = {"type", "reason", "status"}


def written(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of obj with value at path (a `conditions` list: in its first item)."""
    out = copy.deepcopy(obj)
    node: Any = out
    for key in path[:-1]:
        node = node[key][0] if isinstance(node[key], list) else node[key]
    node[path[-1]] = value
    return out


def expected(value: Any) -> Any:
    return when(value) if isinstance(value, str) and re.fullmatch(r"\d{4}-.*Z", value) else value


def test_every_rollout_path_is_one_the_operator_api_module_reads() -> None:
    paths = {path for _, _, path in metric_paths(resources()["RuntimeRollout"])}
    compare(sorted(paths - set(ROLLOUT_READS)), expected=[])  # a path the table (and the module) does not know
    base = rollout_object()
    for path in sorted(paths):
        value, read = ROLLOUT_READS[path]
        before = read(parse_rollout(base))
        after = read(parse_rollout(written(base, path, value)))
        assert before != after, f"{'.'.join(path)}: operator_api does not read it"
        compare(after, expected=expected(value), prefix=".".join(path))


def test_the_phases_are_the_operator_api_modules() -> None:
    (phase,) = [m for m in resources()["RuntimeRollout"]["metrics"] if m["name"] == "status_phase"]
    compare(phase["each"]["stateSet"]["list"], expected=list(operator_api.PHASES))


def test_group_version_and_kinds_are_the_operator_apis_and_the_crds() -> None:
    crds = {}
    for name in ("10-crd-clusterruntimes.yaml", "11-crd-runtimerollouts.yaml"):
        with open(ROOT / "manifests" / name, encoding="utf-8") as file:
            doc = yaml.safe_load(file)
        crds[doc["spec"]["names"]["kind"]] = doc
    for kind, resource in resources().items():
        gvk = resource["groupVersionKind"]
        compare((gvk["group"], gvk["version"]), expected=(operator_api.GROUP, operator_api.VERSION))
        assert kind in crds, kind
        compare(crds[kind]["spec"]["group"], expected=operator_api.GROUP)
    compare(crds["RuntimeRollout"]["spec"]["names"]["plural"], expected=operator_api.ROLLOUTS)
    assert f"/{crds['ClusterRuntime']['spec']['names']['plural']}/" in operator_api.runtime_path()


def schema_has(schema: dict[str, Any], path: tuple[str, ...]) -> bool:
    node = schema
    for key in path:
        while node.get("type") == "array":
            node = node["items"]
        if key not in node.get("properties", {}):
            return False
        node = node["properties"][key]
    return True


def test_every_path_is_in_the_crds_schema() -> None:
    """The ClusterRuntime's conditions are read by no code of ours: its CRD's schema is what they are checked on,
    and their items have the fields the module reads of a rollout's conditions (metav1.Condition both)."""
    for kind, resource in resources().items():
        crd_file = {"RuntimeRollout": "11-crd-runtimerollouts.yaml", "ClusterRuntime": "10-crd-clusterruntimes.yaml"}
        with open(ROOT / "manifests" / crd_file[kind], encoding="utf-8") as file:
            schema = yaml.safe_load(file)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for metric, label, path in metric_paths(resource):
            if path[0] != "metadata":
                assert schema_has(schema, path), f"{kind} {metric} {label}: {'.'.join(path)} is not in its CRD"
            if "conditions" in path:
                assert path[-1] in CONDITION_ITEM_FIELDS, path
    runtime_paths = {path for _, _, path in metric_paths(resources()["ClusterRuntime"])}
    conditions = {("status", "conditions", field) for field in CONDITION_ITEM_FIELDS}
    compare(runtime_paths, expected={("metadata", "name"), *conditions})


def test_the_metrics_are_the_contracts() -> None:
    found: dict[str, set[str]] = {}
    for resource in resources().values():
        common = set(resource.get("labelsFromPath", {}))
        for metric in resource["metrics"]:
            name = f"{resource['metricNamePrefix']}_{metric['name']}"
            body = next(v for k, v in metric["each"].items() if k != "type")
            labels = common | set(body.get("labelsFromPath", {}))
            if metric["each"]["type"] == "StateSet":
                labels.add(body["labelName"])
            found[name] = labels
            assert metric.get("help"), name
    compare(found, expected=METRICS)


def test_no_metric_carries_what_people_typed() -> None:
    paths = {path for r in resources().values() for _, _, path in metric_paths(r)}
    typed = {("spec", "approval", "reason"), ("spec", "revocation", "reason"), ("status", "message")}
    compare(paths & typed, expected=set())


def test_the_cluster_role_is_list_and_watch_on_the_two_kinds_and_crds_only() -> None:
    role = load("kube-state-metrics-rbac.yaml")
    compare(role["kind"], expected="ClusterRole")
    rules = sorted((tuple(r["apiGroups"]), tuple(sorted(r["resources"])), tuple(sorted(r["verbs"])))
                   for r in role["rules"])
    compare(rules, expected=[(("apiextensions.k8s.io",), ("customresourcedefinitions",), ("list", "watch")),
                             ((operator_api.GROUP,), ("clusterruntimes", operator_api.ROLLOUTS), ("list", "watch"))])


def rules() -> list[dict[str, Any]]:
    return [rule for group in load("rules.yaml")["groups"] for rule in group["rules"]]


def test_the_prometheusrule_holds_the_same_groups() -> None:
    doc = load("prometheusrule.yaml")
    compare((doc["apiVersion"], doc["kind"]), expected=("monitoring.coreos.com/v1", "PrometheusRule"))
    compare(doc["spec"], expected=load("rules.yaml"))
    assert "release" in doc["metadata"]["labels"]  # kube-prometheus-stack selects rules by it


def runbook_base() -> str:
    """The repository's page: setup.cfg's `url` when it names one, else the placeholder OWNER (docs/alerting.md)."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    url = parser.get("metadata", "url", fallback="https://github.com/OWNER/kubectl-aicr").rstrip("/")
    return f"{url}/blob/main/docs/alerting.md"


def doc_anchors() -> set[str]:
    text = (ROOT / "docs" / "alerting.md").read_text(encoding="utf-8")
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.*)$", text, re.M)}


def test_every_alert_has_its_severity_texts_and_runbook() -> None:
    found = {rule["alert"]: rule["labels"]["severity"] for rule in rules()}
    compare(found, expected=ALERTS)
    anchors = doc_anchors()
    for rule in rules():
        name, notes = rule["alert"], rule["annotations"]
        compare(sorted(notes), expected=["description", "runbook_url", "summary"], prefix=name)
        compare(notes["runbook_url"], expected=f"{runbook_base()}#{name.lower()}", prefix=name)
        assert name.lower() in anchors, f"docs/alerting.md has no section {name}"
        compare(rule.get("for"), expected=WAITING.get(name), prefix=name)
        if name.startswith("AICRApproval") or name == "AICRAcknowledgementPending":
            assert "kubectl aicr describe {{ $labels.rollout }}{{ $ctx }}" in notes["description"], name
        assert "$labels.cluster" in notes["description"], name  # the --context when the series carry one


def test_the_rules_name_no_job_nor_namespace_and_keep_cluster_in_every_join() -> None:
    for rule in rules():
        expr = rule["expr"]
        assert not re.search(r"\b(job|namespace)\s*[=!]", expr), rule["alert"]
        for match in re.finditer(r"\b(on|ignoring|by|without)\s*\(([^)]*)\)", expr):
            assert match.group(1) == "on" and "cluster" in match.group(2), (rule["alert"], match.group(0))
        if rule.get("for"):  # the waiting time is the `for:`, never a comparison with a creation or transition time
            assert "created" not in expr and "time()" not in expr, rule["alert"]


def test_the_pending_alert_leaves_approved_rollouts_alone() -> None:
    (pending,) = [r for r in rules() if r["alert"] == "AICRApprovalPending"]
    assert re.search(r"unless on\(cluster, rollout\) aicr_runtimerollout_approval_expires_timestamp_seconds",
                     pending["expr"])


def test_the_alertmanager_example_reminds_escalates_and_inhibits() -> None:
    config = load("alertmanager-example.yaml")
    route = config["route"]
    assert "rollout" in route["group_by"] and "cluster" in route["group_by"]
    assert route["repeat_interval"]
    receivers = {r["name"] for r in config["receivers"]}
    critical = [r for r in route["routes"] if 'severity = "critical"' in r.get("matchers", [])]
    assert critical and critical[0]["receiver"] in receivers and critical[0]["receiver"] != route["receiver"]
    (inhibit,) = config["inhibit_rules"]
    compare((inhibit["source_matchers"], inhibit["target_matchers"]),
            expected=(['alertname = "AICRApprovalDeadlineSoon"'], ['alertname = "AICRApprovalPending"']))
    assert {"rollout", "cluster"} <= set(inhibit["equal"])
