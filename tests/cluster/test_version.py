"""`kubectl aicr version` through the real kubectl: against the control plane, and one without the operator."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import envtest
import pytest
from testfixtures import compare

from support.harness import Aicr, client_version_lines, error_line


class BarePlane(envtest.ControlPlane):
    """etcd and kube-apiserver with nothing applied: no AICR CRDs, no roles."""

    def _apply_manifests(self) -> None:
        pass

    def _wait_for_policy(self) -> None:
        pass


@pytest.fixture(scope="module")
def bare_plane(plane: envtest.ControlPlane) -> Iterator[envtest.ControlPlane]:
    bare = BarePlane().start()
    yield bare
    bare.stop()


CLIENT = client_version_lines()


def test_server_version_and_the_operator_api(aicr: Aicr, plane: envtest.ControlPlane, tmp_path: Path) -> None:
    log = tmp_path / "requests"
    proc = aicr("version", kubeconfig=plane.kubeconfig_for("nora"), AICR_REQUEST_LOG=str(log))  # no rights needed
    server = json.loads(plane.kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]
    compare((proc.returncode, proc.stdout.splitlines(), proc.stderr), expected=(0, [
        *CLIENT, f"Server Version: {server}",
        "Operator API: operator.aicr.run/v1alpha1 RuntimeRollouts served"], ""))
    compare(log.read_text().splitlines(), expected=["GET /version", "GET /apis/operator.aicr.run/v1alpha1"])
    doc = json.loads(aicr("version", "-o", "yaml", "-o", "json", kubeconfig=plane.kubeconfig_for("nora")).stdout)
    compare(doc["server"], expected={"version": server, "operatorAPI": {
        "groupVersion": "operator.aicr.run/v1alpha1", "runtimeRolloutsServed": True}})


def test_a_cluster_without_the_operator_gets_a_warning(aicr: Aicr, bare_plane: envtest.ControlPlane) -> None:
    proc = aicr("version", kubeconfig=bare_plane.kubeconfig_for("alice"))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    compare(proc.stdout.splitlines()[-1],
            expected="Operator API: operator.aicr.run/v1alpha1 RuntimeRollouts not served")
    compare(proc.stderr, expected="warning: the API server does not serve operator.aicr.run/v1alpha1 RuntimeRollouts: "
                                  "the AICR operator's CRDs are not installed on this cluster\n")
    doc = json.loads(aicr("version", "-o", "json", kubeconfig=bare_plane.kubeconfig_for("alice")).stdout)
    compare(doc["server"]["operatorAPI"]["runtimeRolloutsServed"], expected=False)


def test_list_on_a_cluster_without_the_operator(aicr: Aicr, bare_plane: envtest.ControlPlane) -> None:
    proc = aicr("list", kubeconfig=bare_plane.kubeconfig_for("admin"))
    compare((proc.returncode, error_line(proc)), expected=(1, (
        "error: [NOT_FOUND] this API server does not serve operator.aicr.run/v1alpha1 RuntimeRollouts: "
        "the AICR operator's CRDs are not installed")))

