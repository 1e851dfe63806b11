"""What tools/release.py wrote: the archive's form, SHA256SUMS, the krew manifest, constraints.txt, the SBOM,
the wheel and the sdist (docs/release.md)."""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from testfixtures import compare

from support.harness import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import krew_manifest  # noqa: E402


def commit_time() -> int:
    return int(subprocess.run(["git", "-C", str(ROOT), "show", "-s", "--format=%ct"], capture_output=True,
                              text=True, check=True).stdout)


def version_of(archive: Path) -> str:
    match = krew_manifest.ARCHIVE.match(archive.name)
    assert match is not None, archive.name
    return match["version"]


def test_the_archive_is_written_the_same_way_every_time(archive: Path) -> None:
    raw = archive.read_bytes()
    compare((raw[:2], raw[3] & 0x08, int.from_bytes(raw[4:8], "little")), expected=(b"\x1f\x8b", 0, 0))  # gzip -n
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    compare(names, expected=sorted(names))
    compare({(m.uid, m.gid, m.uname, m.gname, m.mtime) for m in members}, expected={(0, 0, "", "", commit_time())})
    top = {name.split("/", 1)[0] for name in names}
    compare(top, expected={"LICENSE", "kubectl-aicr", "kubectl_complete-aicr", "_internal"})
    modes = {m.name: m.mode for m in members}
    compare((modes["kubectl-aicr"], modes["kubectl_complete-aicr"], modes["LICENSE"]),
            expected=(0o755, 0o755, 0o644))


def test_the_license_is_in_the_archive_the_wheel_and_the_sdist(release: Path, archive: Path) -> None:
    licence = (ROOT / "LICENSE").read_bytes()
    assert b"Apache License" in licence and b"Version 2.0, January 2004" in licence
    with tarfile.open(archive) as tar:
        member = tar.extractfile("LICENSE")
        assert member is not None
        compare(member.read(), expected=licence)
    version = version_of(archive)[1:]
    with zipfile.ZipFile(release / f"kubectl_aicr-{version}-py3-none-any.whl") as wheel:
        licences = [n for n in wheel.namelist() if n.endswith("/LICENSE")]
        compare([wheel.read(n) for n in licences], expected=[licence])
        metadata = wheel.read(f"kubectl_aicr-{version}.dist-info/METADATA").decode()
        assert f"\nVersion: {version}\n" in metadata
    sdists = list(release.glob(f"kubectl*aicr-{version}.tar.gz"))
    compare(len(sdists), expected=1)
    with tarfile.open(sdists[0]) as sdist:
        compare(sdist.extractfile(f"{sdists[0].name[:-len('.tar.gz')]}/LICENSE").read(),  # type: ignore[union-attr]
                expected=licence)


def test_the_sdist_depends_only_on_its_files(release: Path, archive: Path) -> None:
    """Sorted names, owner 0, the commit's time on every file (setuptools' own PKG-INFO included) and a
    gzip header without a name or a time: the same commit gives the same bytes (.ci/run builds twice)."""
    (sdist,) = release.glob(f"kubectl*aicr-{version_of(archive)[1:]}.tar.gz")
    header = sdist.read_bytes()[:10]
    compare((header[:3], header[3] & 0x08, int.from_bytes(header[4:8], "little")), expected=(b"\x1f\x8b\x08", 0, 0))
    with tarfile.open(sdist) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    compare(names, expected=sorted(names))
    compare({(m.uid, m.gid, m.uname, m.gname, m.mtime) for m in members}, expected={(0, 0, "", "", commit_time())})
    assert any(name.endswith("/PKG-INFO") for name in names), names


def test_sha256sums_and_the_krew_manifest(release: Path, archive: Path) -> None:
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    sums = (release / "SHA256SUMS").read_text()
    compare(sums, expected=f"{digest}  {archive.name}\n")
    version = version_of(archive)
    compare((release / "aicr.yaml").read_text(), expected=krew_manifest.manifest(
        version, {archive.name: digest}, krew_manifest.release_download_uri(version)))
    assert krew_manifest.release_download_uri(version) == \
        f"https://github.com/OWNER/kubectl-aicr/releases/download/{version}"


def test_constraints_and_the_sbom_are_the_archives_distributions(release: Path, archive: Path) -> None:
    with tarfile.open(archive) as tar:
        carried = sorted(re.sub(r"[-_.]+", "-", m.name[len("_internal/"):-len(".dist-info")].rsplit("-", 1)[0]).lower()
                         + "==" + m.name[:-len(".dist-info")].rsplit("-", 1)[1]
                         for m in tar.getmembers() if re.fullmatch(r"_internal/[^/]+\.dist-info", m.name))
    lines = [line for line in (release / "constraints.txt").read_text().splitlines() if not line.startswith("#")]
    pins = sorted(re.sub(r"[-_.]+", "-", line.split("==")[0]).lower() + "==" + line.split("==")[1] for line in lines)
    compare(pins, expected=carried)
    assert f"kubectl-aicr=={version_of(archive)[1:]}" in pins
    assert not any(p.startswith(("pyinstaller", "cyclonedx", "pip==", "setuptools==")) for p in pins)
    sbom = json.loads((release / archive.name.replace(".tar.gz", ".cdx.json")).read_text())
    compare(sbom["bomFormat"], expected="CycloneDX")
    components = sorted(f"{re.sub(r'[-_.]+', '-', c['name']).lower()}=={c['version']}" for c in sbom["components"])
    compare(components, expected=pins)
