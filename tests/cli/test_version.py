"""`kubectl aicr version` through the real kubectl: against the control plane, and one without the operator."""
from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path

from testfixtures import compare

from support.harness import INSTALLED, Aicr, client_version_lines, error_line

CLIENT = client_version_lines()


def test_client_only_sends_nothing(aicr: Aicr, tmp_path: Path) -> None:
    log = tmp_path / "requests"
    proc = aicr("version", "--client", AICR_REQUEST_LOG=str(log))  # no kubeconfig at all
    compare((proc.returncode, proc.stdout.splitlines(), proc.stderr), expected=(0, CLIENT, ""))
    assert not log.exists()
    doc = json.loads(aicr("version", "--client", "-o", "json").stdout)
    commit, built = doc["client"].pop("commit"), doc["client"].pop("buildTime")
    compare(doc, expected={"kind": "Version", "client": {
        "kubectlAicr": metadata.version("kubectl-aicr"), "installed": INSTALLED, "python": platform.python_version(),
        "kubernetesClient": metadata.version("kubernetes")}, "server": None})
    compare((commit[:12] if commit else "unknown", built or "unknown"),
            expected=(CLIENT[2].split(": ")[1], CLIENT[3].split(": ")[1]))


def test_without_a_kubeconfig_the_server_part_fails(aicr: Aicr) -> None:
    proc = aicr("version")
    compare((proc.returncode, error_line(proc).startswith("error: [KUBECONFIG] no kubeconfig found")),
            expected=(1, True))
    compare(proc.stdout.splitlines(), expected=CLIENT)  # the client's part all the same, as kubectl version


def test_an_unreachable_cluster_still_prints_the_client_part(aicr: Aicr, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
                          "users: [{name: u, user: {token: t}}]\n"
                          "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n")
    proc = aicr("version", "--request-timeout", "5s", kubeconfig=kubeconfig)
    compare((proc.returncode != 0, proc.stdout.splitlines(), error_line(proc).startswith("error: [")),
            expected=(True, CLIENT, True))

