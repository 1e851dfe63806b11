"""Build a release of kubectl-aicr for this machine's platform (docs/release.md).

    python3 tools/release.py --version v0.2.0 --out DIR [--base-uri URL] [--reuse-envs]

Needs only python3 (3.10+) and git: the build tools live in virtualenvs under build/release/
(ignored by git), made afresh by every run, and nothing of the checkout changes. With --reuse-envs
they are kept under build/release-kept/ and used again by a later build whose inputs are the same
(CI builds twice to compare the bytes: the second pays for the freeze alone). Writes into DIR:
the one-folder frozen program as `kubectl-aicr_<version>_<os>_<arch>.tar.gz`, `SHA256SUMS`, the
krew manifest `aicr.yaml`, `constraints.txt` (the distributions inside the program), the
CycloneDX SBOM of those distributions, and the wheel and the sdist, all stamped with the version.

Reproducible: the time of every file is the commit's (SOURCE_DATE_EPOCH), PYTHONHASHSEED is fixed,
and the archive and the sdist have sorted names, owner 0 and a gzip header without name or time.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import krew_manifest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "release"
KEPT = ROOT / "build" / "release-kept"  # --reuse-envs: the virtualenvs of an earlier build, each with its key
DISTRIBUTION = "kubectl-aicr"
VERSION = re.compile(r"v(?P<pep440>\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?)")  # whole: fullmatch (`$` passes a final newline)
# The build's own tools, pinned: a release is built the same way until someone changes these.
BUILD_TOOLS = ("pip==26.3", "build==1.3.0", "setuptools==80.9.0")
SBOM_TOOL = "cyclonedx-bom==7.5.0"
FREEZER = "pyinstaller==6.22.3"
# The extras the release carries: the dashboard's web stack (`kubectl aicr dashboard`, docs/dashboard.md).
EXTRAS = "[dashboard]"
OS_NAMES = {"Linux": "linux", "Darwin": "darwin"}
ARCH_NAMES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


class ReleaseError(Exception):
    pass


def run(*command: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ReleaseError(f"{' '.join(str(c) for c in command)} exited {proc.returncode}:\n"
                           f"{proc.stdout[-4000:]}{proc.stderr[-4000:]}")
    return proc.stdout


def step(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def this_platform() -> tuple[str, str]:
    system, machine = platform.system(), platform.machine()
    if system not in OS_NAMES or machine not in ARCH_NAMES:
        raise ReleaseError(f"no release is built for {system}/{machine}: only linux and darwin, amd64 and arm64")
    return OS_NAMES[system], ARCH_NAMES[machine]


def commit_and_time() -> tuple[str, int, bool]:
    """HEAD's hash and time (the build's SOURCE_DATE_EPOCH), and whether tracked files differ from it."""
    commit = run("git", "rev-parse", "HEAD", cwd=ROOT).strip()
    epoch = int(run("git", "show", "-s", "--format=%ct", "HEAD", cwd=ROOT).strip())
    modified = bool(run("git", "status", "--porcelain", "--untracked-files=no", cwd=ROOT).strip())
    return commit, epoch, modified


def stage_source(dest: Path, version: str, commit: str, epoch: int) -> None:
    """The tracked files as they are in the working tree, with the version and the build's stamp in them."""
    for name in run("git", "ls-files", "-z", cwd=ROOT).split("\0"):
        source = ROOT / name
        if not name or not source.is_file():  # a tracked file deleted in the working tree is not built
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest / name)
    setup_cfg = dest / "setup.cfg"
    text, count = re.subn(r"(?m)^version = .*$", f"version = {version}", setup_cfg.read_text(encoding="utf-8"),
                          count=1)
    if count != 1:
        raise ReleaseError("setup.cfg has no `version = ` line to stamp")
    setup_cfg.write_text(text, encoding="utf-8")
    built = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    (dest / "aicr_core" / "_build_stamp.py").write_text(
        '"""Written by tools/release.py into the release it builds (never part of the repository)."""\n'
        f"COMMIT = {commit!r}\nBUILD_TIME = {built!r}\n", encoding="utf-8")


def venv(path: Path, with_pip: bool = True) -> Path:
    run(sys.executable, "-m", "venv", *([] if with_pip else ["--without-pip"]), path)
    return path / "bin" / "python"


class KeptEnvs:
    """The build's virtualenvs, kept across builds (`folder`) or made afresh under BUILD (None).

    A kept one is used again only when its key (what was installed into it, with which Python) is the
    one asked for; its key file is written last, so one left half-made by an interrupted build is made
    again. What a kept one holds is not under test: the tools that build, and the program's
    distributions as the wheel's requirements resolve them; the freeze and every file of the release
    are made anew by every build."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def path(self, name: str) -> Path:
        return (self.folder or BUILD) / name

    def reused(self, name: str, key: str) -> dict[str, Any] | None:
        """What the kept env `name` recorded when it was made, if it was made for `key`; else None (it is removed)."""
        if self.folder is None:
            return None
        record = self.path(name).with_suffix(".key.json")
        try:
            kept = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            kept = None
        if isinstance(kept, dict) and kept.get("key") == key and (self.path(name) / "bin" / "python").exists():
            return kept
        record.unlink(missing_ok=True)
        shutil.rmtree(self.path(name), ignore_errors=True)
        return None

    def made(self, name: str, key: str, **facts: Any) -> None:
        if self.folder is not None:
            self.path(name).with_suffix(".key.json").write_text(json.dumps({"key": key, **facts}), encoding="utf-8")


def key_of(*parts: str) -> str:
    return hashlib.sha256("\0".join((sys.version, *parts)).encode()).hexdigest()


def distributions_of(python: Path) -> list[tuple[str, str]]:
    """(name, version) of every distribution that interpreter sees, sorted by name."""
    listing = run(python, "-I", "-c", "import importlib.metadata as m\n"
                  "for d in m.distributions(): print(d.metadata['Name'], d.version)", cwd=BUILD)
    pairs = {(line.partition(" ")[0], line.partition(" ")[2]) for line in listing.splitlines() if line}
    found = sorted(pairs, key=lambda nv: nv[0].lower())
    names = [normalized(name) for name, _ in found]
    if len(set(names)) != len(names):
        raise ReleaseError(f"{python} sees a distribution twice: {found}")
    return found


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def frozen_distributions(folder: Path) -> set[str]:
    """The normalized names of the distributions whose metadata the frozen program carries."""
    return {normalized(p.name[:-len(".dist-info")].rsplit("-", 1)[0]) for p in folder.glob("_internal/*.dist-info")}


def stamped(info: tarfile.TarInfo, epoch: int) -> tarfile.TarInfo:
    """A member as every archive of the release stores it: owner 0, no names, the commit's time, no PAX extras."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = epoch
    info.pax_headers = {}
    return info


def write_gzip(target: Path, tar_bytes: bytes) -> None:
    """TARGET, atomically, as `gzip -n` writes it: no name and no time in the header."""
    partial = target.with_name(target.name + ".partial")
    with partial.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(tar_bytes)
    partial.replace(target)


def write_archive(archive: Path, program: Path, license_file: Path, epoch: int) -> None:
    """A tar.gz whose bytes depend only on the files: sorted names, owner 0, the commit's time, no gzip name.

    Only folders and regular files: krew refuses an archive holding a symlink, a hard link or a `..`
    member, and a framework Python's build holds symlinks (macOS `_internal/Python`). A link inside the
    program's folder is stored as what it points to (a file's bytes, a folder's files); one that dangles
    or points outside is refused, naming it."""
    members = [(license_file, "LICENSE"), *archive_members(program)]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, name in sorted(members, key=lambda member: member[1]):
            info = tarfile.TarInfo(name)
            if path.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(stamped(info, epoch))
                continue
            info.size = path.stat().st_size
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            with path.open("rb") as data:
                tar.addfile(stamped(info, epoch), data)
    write_gzip(archive, buffer.getvalue())


def archive_members(program: Path, folder: Path | None = None, prefix: str = "",
                    through: frozenset[Path] = frozenset()) -> list[tuple[Path, str]]:
    """(source, name in the archive) of every folder and file under `folder` (the program's own by default),
    links followed when they point inside the program's folder; ReleaseError naming one that does not."""
    root = program.resolve()
    folder = folder or program
    found: list[tuple[Path, str]] = []
    for entry in sorted(folder.iterdir()):
        name = f"{prefix}{entry.name}"
        source = entry
        if entry.is_symlink():
            target = entry.resolve()
            if not target.exists():
                raise ReleaseError(f"the build's {name} is a link to {os.readlink(entry)}, which does not exist")
            if target != root and root not in target.parents:
                raise ReleaseError(f"the build's {name} is a link to {target}, outside the program's folder")
            here = entry.parent.resolve()
            if target == here or target in here.parents:
                raise ReleaseError(f"the build's {name} is a link to {os.readlink(entry)}, a folder that holds it")
            source = target
        if source.is_dir():
            real = source.resolve()
            if real in through:
                raise ReleaseError(f"the build's {name} is a link back into a folder that holds it")
            found.append((source, name))
            found += archive_members(program, source, f"{name}/", through | {real})
        elif source.is_file():
            found.append((source, name))
        else:
            raise ReleaseError(f"the build's {name} is neither a file nor a folder")
    return found


def rewrite_sdist(sdist: Path, epoch: int) -> None:
    """The sdist again, its bytes depending only on its files: setuptools writes the time of the build
    into its gzip header and stamps the files it generates (PKG-INFO, SOURCES.txt) with their own time."""
    buffer = io.BytesIO()
    with tarfile.open(sdist, mode="r:gz") as source, \
            tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for member in sorted(source.getmembers(), key=lambda m: m.name):
            data = source.extractfile(member) if member.isfile() else None
            info = member
            if member.islnk():  # sorted, a hard link may come before its target: a file of its own instead
                target = source.getmember(member.linkname)
                data = source.extractfile(target)
                info = tarfile.TarInfo(member.name)
                info.size, info.mode = target.size, target.mode
            tar.addfile(stamped(info, epoch), data)
    write_gzip(sdist, buffer.getvalue())


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pep440_of(version: str) -> str:
    """The version without its `v`, checked whole: `v0.2.0\\n` is refused."""
    match = VERSION.fullmatch(version)
    if match is None:
        raise ReleaseError(f"--version {version!r} is not vX.Y.Z")
    return match["pep440"]


def build(version: str, out: Path, base_uri: str | None, reuse_envs: bool = False) -> list[Path]:
    pep440 = pep440_of(version)
    os_name, arch = this_platform()
    status_before = run("git", "status", "--porcelain", cwd=ROOT)
    commit, epoch, modified = commit_and_time()
    if modified:
        step(f"warning: tracked files differ from {commit[:12]}: the build is of the working tree")
        commit += "-modified"
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(epoch), "PYTHONHASHSEED": "0",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)

    if BUILD.exists():
        shutil.rmtree(BUILD)
    source, dist, freeze = BUILD / "src", BUILD / "dist", BUILD / "freeze"
    for folder in (source, dist, freeze):
        folder.mkdir(parents=True)
    out.mkdir(parents=True, exist_ok=True)

    step(f"staging {commit[:12]} as {version} (SOURCE_DATE_EPOCH={epoch})")
    stage_source(source, pep440, commit, epoch)

    envs = KeptEnvs(KEPT if reuse_envs else None)
    if reuse_envs:
        KEPT.mkdir(parents=True, exist_ok=True)
    tools_key = key_of(*BUILD_TOOLS, SBOM_TOOL)
    tools = envs.path("tools") / "bin" / "python"
    if envs.reused("tools", tools_key) is not None:
        step("the build tools' virtualenv: kept (--reuse-envs)")
    else:
        step("the build tools' virtualenv")
        venv(envs.path("tools"))
        run(tools, "-m", "pip", "install", "-q", *BUILD_TOOLS, SBOM_TOOL, env=env)
        envs.made("tools", tools_key)

    step("the wheel and the sdist")
    run(tools, "-m", "build", "--no-isolation", "--wheel", "--sdist", "--outdir", dist, source, env=env)
    wheels, sdists = list(dist.glob("*.whl")), list(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise ReleaseError(f"the build made {wheels + sdists}, not one wheel and one sdist")
    rewrite_sdist(sdists[0], epoch)

    # The program's distributions (constraints.txt, the SBOM) from a virtualenv of the wheel alone; the
    # freeze from another that also holds the freezer, so that neither sees the other's packages.
    runtime_key = key_of(sha256(wheels[0]), EXTRAS)
    runtime = envs.path("runtime") / "bin" / "python"
    kept = envs.reused("runtime", runtime_key)
    if kept is not None:
        step("the program's virtualenv: kept (--reuse-envs; the same wheel)")
        inside = [(name, ver) for name, ver in kept["inside"]]
    else:
        step("the program's virtualenv: the wheel and its requirements")
        venv(envs.path("runtime"), with_pip=False)
        run(tools, "-m", "pip", "--python", runtime, "install", "-q", f"{wheels[0]}{EXTRAS}", env=env)
        inside = distributions_of(runtime)
        envs.made("runtime", runtime_key, inside=inside)
    constraints = out / "constraints.txt"
    constraints.write_text("# The distributions inside kubectl-aicr " + version + " (docs/install.md: pipx inject)\n"
                           + "".join(f"{name}=={ver}\n" for name, ver in inside), encoding="utf-8")

    archive_name = f"kubectl-aicr_{version}_{os_name}_{arch}"
    step("the SBOM of those distributions")
    sbom = out / f"{archive_name}.cdx.json"
    run(tools.parent / "cyclonedx-py", "environment", "--output-reproducible", "--of", "JSON",
        "--output-file", sbom, runtime, env=env)

    freezer_key = key_of(sha256(wheels[0]), EXTRAS, FREEZER)
    freezing = envs.path("runtime-freezer") / "bin" / "python"
    if envs.reused("runtime-freezer", freezer_key) is not None:
        step("the freezer's virtualenv: kept (--reuse-envs)")
    else:
        step("the freezer's virtualenv: the wheel, its requirements and PyInstaller")
        venv(envs.path("runtime-freezer"), with_pip=False)
        run(tools, "-m", "pip", "--python", freezing, "install", "-q", "-c", constraints, f"{wheels[0]}{EXTRAS}",
            FREEZER, env=env)
        envs.made("runtime-freezer", freezer_key)
    step("freezing (PyInstaller, one folder)")
    run(freezing.parent / "pyinstaller", "--noconfirm", "--clean", "--log-level", "WARN",
        "--distpath", freeze / "dist", "--workpath", freeze / "work", ROOT / "tools" / "freeze" / "kubectl-aicr.spec",
        cwd=BUILD, env=env)
    program = freeze / "dist" / DISTRIBUTION
    carried, expected = frozen_distributions(program), {normalized(name) for name, _ in inside}
    if carried != expected:
        raise ReleaseError(f"the frozen program's distributions differ from constraints.txt's: "
                           f"missing {sorted(expected - carried)}, extra {sorted(carried - expected)}")

    step("the archive, SHA256SUMS and the krew manifest")
    archive = out / f"{archive_name}.tar.gz"
    write_archive(archive, program, ROOT / "LICENSE", epoch)
    sums = out / "SHA256SUMS"
    sums.write_text(f"{sha256(archive)}  {archive.name}\n", encoding="utf-8")
    manifest = krew_manifest.manifest(version, krew_manifest.read_sums(sums.read_text(encoding="utf-8")),
                                      base_uri or krew_manifest.release_download_uri(version))
    (out / "aicr.yaml").write_text(manifest, encoding="utf-8")
    for built in (wheels[0], sdists[0]):
        shutil.copy2(built, out / built.name)

    if run("git", "status", "--porcelain", cwd=ROOT) != status_before:
        raise ReleaseError("the build changed the checkout (git status --porcelain)")
    return [archive, sums, out / "aicr.yaml", constraints, sbom, out / wheels[0].name, out / sdists[0].name]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True, help="the release's version, vX.Y.Z (stamped into everything)")
    parser.add_argument("--out", type=Path, required=True, help="the folder to write the release into")
    parser.add_argument("--base-uri", help="where the archives will be downloaded from (default: the GitHub release)")
    parser.add_argument("--reuse-envs", action="store_true",
                        help="keep the build's virtualenvs under build/release-kept/ and use them again when their "
                             "inputs are the same (CI's second build of the byte-for-byte check)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        written = build(args.version, args.out.resolve(), args.base_uri, args.reuse_envs)
    except (ReleaseError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    step(f"done in {time.monotonic() - started:.0f}s")
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
