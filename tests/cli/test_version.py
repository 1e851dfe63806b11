"""`kubectl aicr version` through the real kubectl: against the control plane, and one without the operator."""
from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path

from testfixtures import compare

from support.harness import Aicr, error_line

CLIENT = [f"Client Version: {metadata.version('kubectl-aicr')}", f"Python Version: {platform.python_version()}",
          f"Kubernetes Client Version: {metadata.version('kubernetes')}"]


def test_client_only_sends_nothing(aicr: Aicr, tmp_path: Path) -> None:
    log = tmp_path / "requests"
    proc = aicr("version", "--client", AICR_REQUEST_LOG=str(log))  # no kubeconfig at all
    compare((proc.returncode, proc.stdout.splitlines(), proc.stderr), expected=(0, CLIENT, ""))
    assert not log.exists()
    doc = json.loads(aicr("version", "--client", "-o", "json").stdout)
    compare(doc, expected={"kind": "Version", "client": {
        "kubectlAicr": metadata.version("kubectl-aicr"), "python": platform.python_version(),
        "kubernetesClient": metadata.version("kubernetes")}, "server": None})


def test_without_a_kubeconfig_the_server_part_fails(aicr: Aicr) -> None:
    proc = aicr("version")
    compare((proc.returncode, error_line(proc).startswith("error: [KUBECONFIG] no kubeconfig found")),
            expected=(1, True))

