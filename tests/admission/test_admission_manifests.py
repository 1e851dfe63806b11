"""What manifests/admission/ and the Containerfile promise, checked statically.

(The end-to-end tests register the same ValidatingWebhookConfiguration and
RBAC on a real API server, and dry-run-apply the rest there.)
"""
from __future__ import annotations

import configparser
import re
from pathlib import Path
from typing import Any

import yaml
from testfixtures import compare

from aicr_admission.main import parse_args

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "manifests" / "admission"


def documents() -> dict[tuple[str, str], dict[str, Any]]:
    docs = {}
    for path in sorted(FOLDER.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs[(doc["kind"], doc["metadata"]["name"])] = doc
    return docs


def test_the_webhook_is_registered_fail_closed_for_approver_writes_only() -> None:
    (hook,) = documents()[("ValidatingWebhookConfiguration", "aicr-admission")]["webhooks"]
    compare({k: hook[k] for k in ("failurePolicy", "sideEffects", "admissionReviewVersions")},
            expected={"failurePolicy": "Fail", "sideEffects": "NoneOnDryRun", "admissionReviewVersions": ["v1"]})
    assert 0 < hook["timeoutSeconds"] < 10
    compare([(r["operations"], r["resources"], r["apiGroups"]) for r in hook["rules"]],
            expected=[(["UPDATE"], ["runtimerollouts"], ["operator.aicr.run"])])  # not runtimerollouts/status
    (condition,) = hook["matchConditions"]
    for added in ("approval", "revocation", "acknowledgements"):
        assert f"has(object.spec.{added})" in condition["expression"], added
    compare(hook["clientConfig"]["service"], expected={"namespace": "aicr-system", "name": "aicr-admission",
                                                       "path": "/validate", "port": 443})


def test_its_service_account_may_read_the_runtime_and_the_policy_file_and_nothing_more() -> None:
    docs = documents()
    compare(docs[("Role", "aicr-admission-policy-reader")]["rules"], expected=[
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["aicr-approval-policy"],
         "verbs": ["get", "list", "watch"]}])
    compare(docs[("RoleBinding", "aicr-admission-policy-reader")]["subjects"],
            expected=[{"kind": "ServiceAccount", "name": "aicr-admission", "namespace": "aicr-system"}])
    cluster_wide = {(kind, name) for kind, name in docs if kind in ("ClusterRole", "ClusterRoleBinding")}
    compare(cluster_wide, expected={("ClusterRole", "aicr-admission-runtime-reader"),
                                    ("ClusterRoleBinding", "aicr-admission-runtime-reader")})
    compare(docs[("ClusterRole", "aicr-admission-runtime-reader")]["rules"], expected=[  # where the policy file is
        {"apiGroups": ["operator.aicr.run"], "resources": ["clusterruntimes"], "resourceNames": ["cluster"],
         "verbs": ["get"]}])
    compare(docs[("ClusterRoleBinding", "aicr-admission-runtime-reader")]["subjects"],
            expected=[{"kind": "ServiceAccount", "name": "aicr-admission", "namespace": "aicr-system"}])


def test_the_webhook_may_record_events_in_default_and_approvers_may_read_them() -> None:
    docs = documents()
    compare(docs[("Role", "aicr-admission-event-recorder")]["rules"], expected=[
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]}])
    compare(docs[("Role", "aicr-approver-event-reader")]["rules"], expected=[
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["get", "list", "watch"]}])
    compare({name: (doc["metadata"]["namespace"], doc["subjects"]) for (kind, name), doc in docs.items()
             if kind == "RoleBinding" and name.endswith(("event-recorder", "event-reader"))}, expected={
        "aicr-admission-event-recorder": ("default", [
            {"kind": "ServiceAccount", "name": "aicr-admission", "namespace": "aicr-system"}]),
        "aicr-approver-event-reader": ("default", [
            {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "aicr:approvers"}])})


def test_the_deployment_runs_the_program_with_flags_it_accepts() -> None:
    docs = documents()
    deployment = docs[("Deployment", "aicr-admission")]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = parse_args(container["args"])  # a flag the program does not know would raise UsageError
    compare((args.secure_port, args.operator_namespace), expected=(8443, "aicr-system"))
    compare({p["name"]: p["containerPort"] for p in container["ports"]}, expected={"https": 8443, "metrics": 8080})
    compare(args.metrics_port, expected=8080)
    compare((container["readinessProbe"]["httpGet"]["path"], container["livenessProbe"]["httpGet"]["path"]),
            expected=("/readyz", "/healthz"))
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert args.tls_cert_file.startswith(mounts["tls"] + "/"), (args.tls_cert_file, mounts)
    secret = next(v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls")
    compare(secret["secret"]["secretName"], expected=docs[("Certificate", "aicr-admission")]["spec"]["secretName"])
    assert deployment["spec"]["replicas"] >= 2
    compare(docs[("PodDisruptionBudget", "aicr-admission")]["spec"]["minAvailable"], expected=1)
    compare(docs[("Service", "aicr-admission")]["spec"]["ports"][0]["targetPort"], expected="https")
    config = docs[("ValidatingWebhookConfiguration", "aicr-admission")]
    compare(config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"], expected="aicr-system/aicr-admission")


def test_the_deployment_rolls_without_refusing_a_write() -> None:
    """docs/webhook.md, "Rolling updates": the settings that make a rollout lose no review."""
    deployment = documents()[("Deployment", "aicr-admission")]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = parse_args(container["args"])
    compare(deployment["spec"]["strategy"]["rollingUpdate"], expected={"maxUnavailable": 0, "maxSurge": 1})
    assert args.shutdown_delay_duration >= 5, args.shutdown_delay_duration  # endpoint propagation
    assert pod["terminationGracePeriodSeconds"] >= args.shutdown_delay_duration + args.request_timeout + 5
    assert args.idle_timeout > 90  # kube-apiserver's own idle timeout: the client closes first
    readiness = container["readinessProbe"]
    compare((readiness["periodSeconds"], readiness["failureThreshold"]), expected=(2, 1))


def test_the_containerfile_builds_every_package_and_runs_the_console_script() -> None:
    text = (ROOT / "aicr_admission" / "Containerfile").read_text()
    lines = [line for line in re.sub(r"\\\n", " ", text).splitlines() if line.strip() and not line.startswith("#")]
    instructions = {line.split()[0] for line in lines}
    known = {"ARG", "FROM", "WORKDIR", "COPY", "RUN", "USER", "EXPOSE", "ENTRYPOINT", "CMD"}
    assert instructions <= known, instructions
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    # `packages = find:` with an include list of top-level packages (each with its sub-packages: `aicr_core*`)
    compare(cfg["options"]["packages"].strip(), expected="find:")
    packages = [p.strip().rstrip("*") for p in cfg["options.packages.find"]["include"].split(",")]
    copied = {line.split()[1] for line in lines if line.startswith("COPY ")}
    for package in packages:
        assert package in copied, f"the Containerfile does not copy {package}"
    scripts = dict(line.split(" = ") for line in cfg["options.entry_points"]["console_scripts"].strip().splitlines())
    compare(scripts["aicr-admission"], expected="aicr_admission.main:console_script")
    assert 'ENTRYPOINT ["aicr-admission"]' in lines
    assert sum(line.startswith("FROM ") for line in lines) == 2  # build, then a clean runtime stage


def test_the_cli_never_imports_the_webhook() -> None:
    """kubectl-aicr's start-up pays nothing for the webhook (it has no dependency of its own, either)."""
    import subprocess
    import sys

    code = ("import sys; from aicr_core.framework.app import main; import contextlib, io\n"
            "with contextlib.redirect_stdout(io.StringIO()): main(['help'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('aicr_admission')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    compare(proc.stdout.strip().splitlines()[-1], expected="[]", suffix=proc.stderr)
