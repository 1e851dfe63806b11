"""The dashboard's app under Starlette's test client (support/dashboard_app.py), with the usual fixture objects."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.dashboard_app import OBJECTS, Served, serve


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path, OBJECTS)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path, OBJECTS, read_only=True)
