"""Every test here runs against the real control plane: marked `cluster` here, not one by one."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import testbed
from support.fleet_planes import Fleet, started_fleet

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def fleet(plane: testbed.ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """The session's control plane and two more, as a fleet (support/fleet_planes.py); started once a session,
    for the fleet's modules (test_fleet.py, test_fleet_interrupted.py)."""
    yield from started_fleet(plane, tmp_path_factory.mktemp("fleet"))
