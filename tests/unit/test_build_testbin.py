"""The build step's own logic: the replace list comes from upstream's go.mod; failures say what to do."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import go_builds
import pytest
from testfixtures import ShouldRaise, compare

import build_testbin

GOMOD = """module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
\tgithub.com/blang/semver/v4 v4.0.0
\tk8s.io/api v0.0.0
\tk8s.io/utils v0.0.0-20250820121507-0af2bda4dd1d
\tk8s.io/streaming v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/cri-streaming => ./staging/src/k8s.io/cri-streaming
)
"""


def test_staging_modules_come_from_the_go_mod_and_skip_pseudo_versions() -> None:
    compare(build_testbin.staging_modules(GOMOD),
            expected=["k8s.io/api", "k8s.io/cri-streaming", "k8s.io/streaming"])
    compare(build_testbin.directive_lines(GOMOD), expected=["go 1.26.0", "godebug default=go1.26"])


def test_a_too_old_go_is_named() -> None:
    with ShouldRaise(build_testbin.BuildError(
            f"go1.25.3 is too old: Kubernetes {build_testbin.KUBE_VERSION} needs go 1.26.0")):
        build_testbin.check_go(GOMOD, "go1.25.3")
    build_testbin.check_go(GOMOD, "go1.26.8")


def test_missing_go_is_a_clear_error(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path), AICR_TESTBIN_CACHE=str(tmp_path / "cache"))
    env.pop("KUBEBUILDER_ASSETS", None)
    proc = subprocess.run([sys.executable, build_testbin.__file__], capture_output=True, text=True, env=env)
    compare(proc.returncode, expected=1)
    assert "error: Go is not installed" in proc.stderr and "Traceback" not in proc.stderr


def test_an_incomplete_assets_folder_is_reported(tmp_path: Path) -> None:
    env = dict(os.environ, KUBEBUILDER_ASSETS=str(tmp_path))
    proc = subprocess.run([sys.executable, build_testbin.__file__], capture_output=True, text=True, env=env)
    compare(proc.returncode, expected=1)
    assert f"KUBEBUILDER_ASSETS={tmp_path} does not hold kube-apiserver and etcd" in proc.stderr


def test_a_module_the_proxy_does_not_serve_is_named() -> None:
    with ShouldRaise(build_testbin.BuildError) as caught:
        build_testbin.download_gomod("k8s.io/kubernetes", "v1.99.99")
    assert "not served" in str(caught.raised), caught.raised


def test_a_short_disk_is_refused_before_building(tmp_path: Path) -> None:
    from collections import namedtuple

    from testfixtures import Replacer

    usage = namedtuple("usage", "total used free")
    with Replacer() as replace:
        replace("shutil.disk_usage", lambda path: usage(10 * 1024**3, 9 * 1024**3, 1024**3))
        with ShouldRaise(build_testbin.BuildError("only 1.0 GiB free; the build needs about 6 GiB")):
            build_testbin.check_disk(tmp_path)
        needed = build_testbin.MIN_FREE_BYTES
        replace("shutil.disk_usage", lambda path: usage(needed * 2, needed - 1, needed + 1), strict=False)
        compare(build_testbin.check_disk(tmp_path), expected=None)  # just enough: the build goes on
        replace("shutil.disk_usage", lambda path: usage(needed * 2, needed + 1, needed - 1), strict=False)
        with ShouldRaise(build_testbin.BuildError):
            build_testbin.check_disk(tmp_path)


def test_a_long_step_says_it_is_still_running(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setattr(go_builds, "HEARTBEAT_SECONDS", 0.05)
    with build_testbin.step("compiling"):
        time.sleep(0.2)
    lines = [line.split("]: ", 1)[1] for line in capsys.readouterr().err.splitlines()]
    compare((lines[0], lines[-1]), expected=("compiling ...", "compiling: done in 0s"))
    assert "compiling: still running after 0s" in lines[1:-1], lines
