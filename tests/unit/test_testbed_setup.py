"""The harness around the control plane: real binaries, skip outside CI, fail under CI, the README's demo."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from testfixtures import compare

from support.harness import ROOT


def run_one_cluster_test(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("CI", "KUBEBUILDER_ASSETS")}
    clean.update(TEST_ASSET_KUBE_APISERVER=str(tmp_path / "missing"), TEST_ASSET_ETCD=str(tmp_path / "missing"), **env)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "tests/cluster/test_harness.py::test_short_name"], cwd=ROOT, env=clean,
                          capture_output=True, text=True, timeout=120)


def test_without_binaries_cluster_tests_skip_with_the_build_command(tmp_path: Path) -> None:
    proc = run_one_cluster_test(tmp_path)
    compare(proc.returncode, expected=0, suffix=proc.stdout)
    assert "1 skipped" in proc.stdout and "run: python3 tools/build_testbin.py" in proc.stdout


def test_under_ci_missing_binaries_fail_the_run(tmp_path: Path) -> None:
    proc = run_one_cluster_test(tmp_path, CI="true")
    assert proc.returncode != 0 and "CI must run the real-cluster tests" in proc.stdout, proc.stdout


