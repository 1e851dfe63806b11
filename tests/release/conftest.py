"""The release tier: the archive tools/release.py built (AICR_RELEASE_DIR), unpacked and run as a user runs it.

.ci/run builds the release for this platform once and points AICR_RELEASE_DIR at it. Outside CI
a missing release skips these tests with the command that builds one; under CI=true it fails.
"""
from __future__ import annotations

import os
import platform
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.harness import ROOT

RELEASE_DIR = "AICR_RELEASE_DIR"


@pytest.fixture(scope="session")
def release() -> Path:
    configured = os.environ.get(RELEASE_DIR)
    if not configured:
        why = (f"the release tests need {RELEASE_DIR}: python3 tools/release.py --version vX.Y.Z --out DIR, "
               f"then {RELEASE_DIR}=DIR")
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the release tests, but: {why}")
        pytest.skip(why)
    return Path(configured)


@pytest.fixture(scope="session")
def archive(release: Path) -> Path:
    arch = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}[platform.machine()]
    found = sorted(release.glob(f"kubectl-aicr_v*_{platform.system().lower()}_{arch}.tar.gz"))
    if len(found) != 1:
        pytest.fail(f"{release} holds {len(found)} archives of this platform, not one")
    return found[0]


@pytest.fixture(scope="session")
def frozen(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The archive unpacked: the folder holding the frozen `kubectl-aicr`."""
    folder = tmp_path_factory.mktemp("frozen")
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="tar")
    yield folder


@pytest.fixture(scope="session")
def example_wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The example site packages built as wheels (pip wheel: the way a site builds its own)."""
    import subprocess
    import sys

    out, sources = tmp_path_factory.mktemp("wheels"), tmp_path_factory.mktemp("sources")
    wheels: dict[str, Path] = {}
    for example in ("aicr-site-example", "aicr-broken-example"):
        source = sources / example  # a copy: a build writes build/ and *.egg-info beside the sources
        shutil.copytree(ROOT / "examples" / example, source)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)],
                       check=True, capture_output=True)
        built = sorted(out.glob(example.replace("-", "_") + "-*.whl"))
        assert len(built) == 1, built
        wheels[example] = built[0]
    return wheels
