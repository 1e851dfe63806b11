"""Every test here runs against the real control plane: marked `cluster` by tests/conftest.py, not one by one."""
from __future__ import annotations

from collections.abc import Iterator

import envtest
import pytest

from support.fleet_planes import Fleet, three_planes


@pytest.fixture(scope="session")
def fleet(plane: envtest.ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Three planes (the session's and two more) and a kubeconfig naming them and a down one: the fleet's
    tests share them (contexts and ClusterProfiles), so the two more start once a session."""
    yield from three_planes(plane, tmp_path_factory.mktemp("fleet"))
