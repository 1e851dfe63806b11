"""The monitoring programs' build step: its folder and versions, and failures that say what to do."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import build_monitoring
import pytest
from testfixtures import ShouldRaise, compare


def test_prometheus_module_versions_name_their_release() -> None:
    compare(build_monitoring.release_of("v0.316.0"), expected="3.16.0")
    compare(build_monitoring.release_of("v0.305.1"), expected="3.5.1")
    with ShouldRaise(build_monitoring.BuildError("v3.16.0 is not a Prometheus module version such as v0.316.0")):
        build_monitoring.release_of("v3.16.0")


def test_the_folder_is_keyed_by_every_version_and_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AICR_MONITORING_BIN", raising=False)
    name = build_monitoring.binaries_folder().name
    for part in (build_monitoring.KSM_VERSION, build_monitoring.PROMETHEUS_VERSION,
                 build_monitoring.ALERTMANAGER_VERSION, build_monitoring.go_version()):
        assert part in name, (part, name)


def test_a_folder_missing_one_program_is_incomplete(tmp_path: Path) -> None:
    for program in build_monitoring.BINARIES[:-1]:
        (tmp_path / program).write_text("")
        (tmp_path / program).chmod(0o755)
    compare(build_monitoring.complete(tmp_path), expected=False)
    (tmp_path / build_monitoring.BINARIES[-1]).write_text("")
    (tmp_path / build_monitoring.BINARIES[-1]).chmod(0o755)
    compare(build_monitoring.complete(tmp_path), expected=True)


def test_missing_go_is_a_clear_error(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path), AICR_MONITORING_CACHE=str(tmp_path / "cache"))
    env.pop("AICR_MONITORING_BIN", None)
    proc = subprocess.run([sys.executable, build_monitoring.__file__], capture_output=True, text=True, env=env)
    compare(proc.returncode, expected=1)
    assert "error: Go is not installed" in proc.stderr and "Traceback" not in proc.stderr


def test_an_incomplete_folder_named_by_the_environment_is_reported(tmp_path: Path) -> None:
    env = dict(os.environ, AICR_MONITORING_BIN=str(tmp_path))
    proc = subprocess.run([sys.executable, build_monitoring.__file__], capture_output=True, text=True, env=env)
    compare(proc.returncode, expected=1)
    assert f"AICR_MONITORING_BIN={tmp_path} does not hold kube-state-metrics" in proc.stderr, proc.stderr


def test_a_module_the_proxy_does_not_serve_is_named() -> None:
    with ShouldRaise(build_monitoring.BuildError) as caught:
        build_monitoring.download_module("github.com/prometheus/alertmanager", "v0.99.99")
    assert "not served" in str(caught.raised), caught.raised
