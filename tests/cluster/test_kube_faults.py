"""The session under faults a real API server will not produce on request (tests/fake_apiserver.py).

The deadline is a wall clock: a trickling server, a hung credentials plugin
and slow answers never stretch a command past it. Failures of every kind
print our one error line and nothing else, and never a credential.
"""
from __future__ import annotations

import json
from pathlib import Path

import envtest
from testfixtures import compare

from support.harness import Aicr


def test_an_insecure_real_cluster_works_silently(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                tmp_path: Path) -> None:
    config = json.loads(plane.kubeconfig_for("victor").read_text())
    cluster = config["clusters"][0]["cluster"]
    del cluster["certificate-authority-data"]
    cluster["insecure-skip-tls-verify"] = True
    (tmp_path / "kc").write_text(json.dumps(config))
    proc = aicr("describe", seed.rollout(), kubeconfig=tmp_path / "kc")
    compare((proc.returncode, proc.stderr), expected=(0, ""))


# -- secrets never printed ------------------------------------------------------------------------------


