"""The release archive holds no link (issue 37, item 8): krew refuses a symlink, a hard link or a `..` member, and a
framework Python's build holds links; and `--version` is checked whole (item 7: `$` passed a final newline)."""
from __future__ import annotations

import os
import sys
import tarfile
from pathlib import Path

import pytest
from testfixtures import ShouldRaise, compare

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import release  # noqa: E402


def staged(tmp_path: Path) -> Path:
    """A staged program folder as a macOS framework build leaves it: a symlink to a file, to a folder, a hard link."""
    program = tmp_path / "kubectl-aicr"
    versions = program / "_internal" / "Python.framework" / "Versions" / "3.11"
    versions.mkdir(parents=True)
    (versions / "Python").write_bytes(b"\x7fELF python")
    (program / "kubectl-aicr").write_bytes(b"#!program")
    (program / "kubectl-aicr").chmod(0o755)
    (program / "_internal" / "Python.framework" / "Versions" / "Current").symlink_to("3.11")
    (program / "_internal" / "Python").symlink_to("Python.framework/Versions/Current/Python")
    os.link(program / "kubectl-aicr", program / "_internal" / "hard-copy")
    return program


def test_links_are_stored_as_what_they_point_to(tmp_path: Path) -> None:
    program = staged(tmp_path)
    (tmp_path / "LICENSE").write_text("license\n")
    archive = tmp_path / "out.tar.gz"
    release.write_archive(archive, program, tmp_path / "LICENSE", 1_700_000_000)
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        kinds = {m.name: ("dir" if m.isdir() else "file" if m.isreg() else "link") for m in members}
        contents = {m.name: tar.extractfile(m).read() for m in members if m.isreg()}  # type: ignore[union-attr]
    compare(kinds, expected={
        "LICENSE": "file", "_internal": "dir", "_internal/Python": "file", "_internal/Python.framework": "dir",
        "_internal/Python.framework/Versions": "dir", "_internal/Python.framework/Versions/3.11": "dir",
        "_internal/Python.framework/Versions/3.11/Python": "file", "_internal/Python.framework/Versions/Current": "dir",
        "_internal/Python.framework/Versions/Current/Python": "file", "_internal/hard-copy": "file",
        "kubectl-aicr": "file"})
    compare((contents["_internal/Python"], contents["_internal/hard-copy"], contents["kubectl-aicr"]),
            expected=(b"\x7fELF python", b"#!program", b"#!program"))
    assert not any(".." in m.split("/") for m in kinds)


@pytest.mark.parametrize("target, why", [
    ("missing", "is a link to missing, which does not exist"),
    ("/etc", "is a link to /etc, outside the program's folder"),
    ("..", "is a link to .., a folder that holds it"),
])
def test_a_link_that_dangles_or_leaves_the_folder_is_refused(tmp_path: Path, target: str, why: str) -> None:
    program = staged(tmp_path)
    (program / "_internal" / "odd").symlink_to(target)
    (tmp_path / "LICENSE").write_text("license\n")
    with ShouldRaise(release.ReleaseError) as raised:
        release.write_archive(tmp_path / "out.tar.gz", program, tmp_path / "LICENSE", 0)
    assert str(raised.raised).startswith("the build's _internal/odd ") and why in str(raised.raised), raised.raised
    assert not (tmp_path / "out.tar.gz").exists()


def test_the_version_is_checked_whole() -> None:
    compare(release.pep440_of("v0.2.0rc1"), expected="0.2.0rc1")
    for bad in ("v0.2.0\n", "v0.2.0 ", "0.2.0", "v0.2"):
        with ShouldRaise(release.ReleaseError(f"--version {bad!r} is not vX.Y.Z")):
            release.pep440_of(bad)
