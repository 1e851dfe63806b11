"""Install a site's wheels into a plugin folder, and uninstall them: without pip, without the network.

The wheels are unpacked by `installer` (pypa/installer, what pip itself
uses for the job) into a copy of the folder, and the copy then takes the
folder's place: a refusal or a failure leaves the folder as it was. What a
wheel needs is checked before anything is written (docs/plugins.md):

- its tags: a wheel this Python cannot run (a compiled one for another
  Python or platform) is refused;
- its name: a distribution the program carries (`kubectl-aicr`,
  `pydantic`, ...) would be shadowed, or shadow it: refused;
- its requirements (`Requires-Dist`, markers evaluated here): each must be
  met by the program, the folder or the other wheels of the same install;
- its archive (wheel_archive): bounded before anything is inflated, every
  member a plain path of its own, METADATA's name the file name's;
- its top-level modules (module_shadows): none may shadow a name the program can import, or
  one its dependencies import when present (`OPTIONAL_IMPORTS`);
- the folder: trusted (plugin_folders), not the program's own environment; a
  symlinked folder is changed where it points, the link left as it is.

No plugin's code runs meanwhile (the `plugins` command loads no hook).
"""
from __future__ import annotations

import contextlib
import importlib.metadata
import os
import re
import shutil
import sys
import sysconfig
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import sys_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from aicr_core import plugin_folders
from aicr_core.entry_points_cache import name_and_version
from aicr_core.errors import AicrError, Code, UsageError
from aicr_core.framework.module_shadows import shadowing
from aicr_core.framework.wheel_archive import DIST_INFO_LIMITS, WheelArchive, WheelRefused

INSTALLER_NAME = "kubectl-aicr"
RECORD_LIMIT = DIST_INFO_LIMITS["RECORD"]


class Installed(NamedTuple):
    name: str
    version: str


class WheelInfo(NamedTuple):
    path: Path
    name: str
    version: Version
    requires: tuple[str, ...]
    archive: WheelArchive | None = None  # open while the install runs


def program_distributions(folders: Sequence[str]) -> dict[str, Installed]:
    """The distributions of the program's own environment (sys.path without the plugin folders), by canonical name."""
    return _by_name(importlib.metadata.distributions(path=own_path(folders)))


def own_path(folders: Sequence[str]) -> list[str]:
    """sys.path without the plugin folders: where the program finds what it carries."""
    plugin = {os.path.realpath(folder) for folder in folders}
    return [entry for entry in sys.path if os.path.realpath(entry or ".") not in plugin]


def folder_distributions(folder: Path) -> dict[str, Installed]:
    return _by_name(importlib.metadata.distributions(path=[str(folder)])) if folder.is_dir() else {}


def _by_name(distributions: Iterable[importlib.metadata.Distribution]) -> dict[str, Installed]:
    found: dict[str, Installed] = {}
    for dist in distributions:
        name, version = name_and_version(dist)
        if name:
            found.setdefault(canonicalize_name(name), Installed(name, version))
    return found


def target_folder() -> tuple[str, Path]:
    """The first plugin folder as configured, and the folder written (a symlink's target): refused when there
    is none, when it is the program's own environment, or when it is not trusted (plugin_folders)."""
    folders = plugin_folders.folders()
    if not folders:
        raise UsageError(f"{plugin_folders.ENV} names no plugin folder (its entries are empty or relative): "
                         "give it an absolute folder")
    configured = folders[0]
    real = Path(os.path.realpath(configured))
    environment = {os.path.realpath(p) for p in own_path(folders) if p}
    environment.update(os.path.realpath(sysconfig.get_paths()[key]) for key in ("purelib", "platlib"))
    if str(real) in environment:
        raise UsageError(f"the plugin folder {configured} is the program's own Python environment: plugins are "
                         "installed into a folder of their own (set AICR_PLUGIN_PATH to another folder)")
    problem = plugin_folders.trust_problem(configured)
    if problem is not None:
        raise AicrError(Code.PLUGIN_ERROR, problem)
    return configured, real


@contextlib.contextmanager
def opened_wheel(path: Path) -> Iterator[WheelInfo]:
    """The wheel's name, version and requirements, its archive checked and kept open (the very file that is
    unpacked later); [USAGE] naming it when it is not one or is refused."""
    try:
        name, version, _build, tags = parse_wheel_filename(path.name)
    except (InvalidWheelFilename, InvalidVersion) as err:
        raise UsageError(f"{path}: not a wheel ({err})") from None
    supported = set(sys_tags())
    if not any(tag in supported for tag in tags):
        raise UsageError(f"{path}: this Python ({sys.implementation.name} {sys.version_info[0]}."
                         f"{sys.version_info[1]}) on this platform cannot run it: its tags are "
                         f"{', '.join(sorted(str(t) for t in tags))}")
    try:
        archive = WheelArchive(path, str(name), version)
    except WheelRefused as err:
        raise UsageError(f"{path}: {err}") from None
    try:
        try:
            _wheel_file(archive).validate_record()
        except Exception as err:  # noqa: BLE001 - a RECORD that is not right: installer's first issue, one line
            raise UsageError(f"{path}: {_installer_problem(err)}") from None
        yield WheelInfo(path, str(name), version, tuple(archive.metadata.get_all("Requires-Dist") or ()), archive)
    finally:
        archive.close()


def read_wheel(path: Path) -> WheelInfo:
    """Name, version and requirements of a wheel file (closed again); [USAGE] naming it when it is not one."""
    with opened_wheel(path) as info:
        return info


def unmet_requirement(wheel: WheelInfo, available: dict[str, Installed]) -> str | None:
    """Why one of the wheel's requirements is not met by what is available, or None."""
    for text in wheel.requires:
        try:
            requirement = Requirement(text)
        except InvalidRequirement as err:
            return f"its requirement {text!r} does not parse: {err}"
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        present = available.get(canonicalize_name(requirement.name))
        if present is None:
            return f"it requires {requirement}, which neither the program nor the plugin folder holds"
        if not requirement.specifier.contains(present.version, prereleases=True):
            return f"it requires {requirement}, but {present.name} {present.version} is installed"
    return None


def install(wheel_paths: Sequence[Path]) -> tuple[str, list[Installed]]:
    """Install the wheels into the first plugin folder, all or none; the folder and what was installed."""
    configured, folder = target_folder()
    folders = plugin_folders.folders()
    with contextlib.ExitStack() as stack:
        wheels = [stack.enter_context(opened_wheel(path)) for path in wheel_paths]
        program = program_distributions(folders)
        in_folder = folder_distributions(folder)
        names = [canonicalize_name(w.name) for w in wheels]
        for wheel, name in zip(wheels, names, strict=True):
            if names.count(name) > 1:
                raise UsageError(f"{wheel.path}: {wheel.name} is given more than once")
            if name in program:
                raise UsageError(f"{wheel.path}: it would shadow {program[name].name} {program[name].version}, "
                                 "which the program carries")
        given: dict[str, Installed] = {
            name: Installed(wheel.name, str(wheel.version)) for name, wheel in zip(names, wheels, strict=True)}
        available: dict[str, Installed] = {**in_folder, **given, **program}
        search = [p for p in sys.path if os.path.realpath(p or ".") != str(folder)]
        for wheel in wheels:
            modules = wheel.archive.top_level if wheel.archive else set()
            problem = unmet_requirement(wheel, available) or shadowing(modules, search)
            if problem is not None:
                raise UsageError(f"{wheel.path}: {problem}")

        def change(staging: Path) -> None:
            for wheel, name in zip(wheels, names, strict=True):
                if name in in_folder:  # a newer (or the same) version of one installed: replaced
                    _remove_distribution(staging, name)
                _unpack(wheel, staging)

        _replace_folder(folder, change, configured)
    return configured, [Installed(w.name, str(w.version)) for w in wheels]


def uninstall(name: str) -> tuple[str, Installed]:
    """Remove the distribution NAME and every file it installed from the first plugin folder."""
    configured, folder = target_folder()
    present = folder_distributions(folder).get(canonicalize_name(name))
    if present is None:
        program = program_distributions(plugin_folders.folders()).get(canonicalize_name(name))
        if program is not None:
            raise UsageError(f"{name} is part of the program ({program.name} {program.version}), "
                             f"not a plugin of {configured}")
        raise UsageError(f"{name} is not installed in the plugin folder {configured}")
    _replace_folder(folder, lambda staging: _remove_distribution(staging, canonicalize_name(name)), configured)
    return configured, present


def _wheel_file(archive: WheelArchive) -> Any:
    from installer.sources import WheelFile

    return WheelFile(archive.zip)


def _unpack(wheel: WheelInfo, target: Path) -> None:
    from installer import install as install_wheel
    from installer.destinations import SchemeDictionaryDestination

    assert wheel.archive is not None
    scheme = {"purelib": str(target), "platlib": str(target), "headers": str(target / "include"),
              "scripts": str(target / "bin"), "data": str(target / "data")}
    for member in wheel.archive.zip.namelist():  # a file of another distribution is never overwritten
        landing = _landing(wheel.archive, member)
        if landing is not None and os.path.lexists(os.path.join(scheme[landing[0]], landing[1])):
            raise UsageError(f"{wheel.path}: member {member!r} would overwrite a file another distribution "
                             "of the plugin folder installed")
    destination = SchemeDictionaryDestination(scheme, interpreter=sys.executable, script_kind="posix",
                                              bytecode_optimization_levels=())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # installer's RuntimeWarning is a refusal, in one line
            install_wheel(_wheel_file(wheel.archive), destination,
                          additional_metadata={"INSTALLER": INSTALLER_NAME.encode()})
    except (AicrError, OSError):
        raise
    except Exception as err:  # noqa: BLE001 - installer's refusal of the wheel's content: one line, the wheel named
        raise UsageError(f"{wheel.path}: {_installer_problem(err, target)}") from None


def _landing(archive: WheelArchive, member: str) -> tuple[str, str] | None:
    """(scheme, path inside it) where a member is written; None for a folder entry or the dist-info's RECORD."""
    if member.endswith("/") or member == f"{archive.dist_info}/RECORD":
        return None
    parts = member.split("/")
    if parts[0] == archive.data_dir and len(parts) >= 3:
        return parts[1], "/".join(parts[2:])
    return "purelib", member


def _installer_problem(err: BaseException, staging: Path | None = None) -> str:
    """installer's message in one line: no object reprs, no staging path, the first issue of a list."""
    issues = getattr(err, "issues", None)
    text = str(issues[0]) if isinstance(issues, list) and issues else str(err)
    text = re.sub(r"<[^<>]*? object at 0x[0-9a-fA-F]+>", "the wheel", text)
    if staging is not None:
        text = text.replace(str(staging) + os.sep, "").replace(str(staging), "the plugin folder")
    text = re.sub(r"^In [^,]*\.whl, ", "", text)
    return " ".join(text.split())[:300] or type(err).__name__


def _remove_distribution(folder: Path, name: str) -> None:
    """Delete the files a distribution's RECORD lists (inside the folder only), their compiled `__pycache__`
    files, then the folders they leave empty."""
    root = Path(os.path.realpath(folder))
    for dist in importlib.metadata.distributions(path=[str(folder)]):
        if canonicalize_name(name_and_version(dist)[0]) != name:
            continue
        record = Path(str(dist.locate_file(""))) / _metadata_folder(dist) / "RECORD"
        if record.is_file() and record.stat().st_size > RECORD_LIMIT:
            raise AicrError(Code.PLUGIN_ERROR, f"{name}'s RECORD is larger than {RECORD_LIMIT} bytes: "
                            "nothing was removed")
        paths: list[Path] = []
        for entry in dist.files or ():
            path = Path(os.path.normpath(folder / entry))  # the link itself, never what it points to
            parent = Path(os.path.realpath(path.parent))
            if not (parent == root or root in parent.parents) or path == folder:
                raise AicrError(Code.PLUGIN_ERROR, f"{name}'s RECORD names {entry}, outside {folder}: "
                                "nothing was removed")
            paths.append(path)
        parents: set[Path] = set()
        for path in paths:
            if path.is_symlink() or path.is_file():
                path.unlink()
            if path.suffix == ".py":
                for compiled in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
                    compiled.unlink()
                parents.add(path.parent / "__pycache__")
            parents.update(p for p in path.parents if p == folder or folder in p.parents)
        parents.discard(folder)
        for parent in sorted(parents, key=lambda p: len(p.parts), reverse=True):
            if parent.is_dir() and not parent.is_symlink() and not any(parent.iterdir()):
                parent.rmdir()
        return


def _metadata_folder(dist: importlib.metadata.Distribution) -> str:
    folder = getattr(dist, "_path", None)
    return Path(str(folder)).name if folder is not None else ""


def _replace_folder(folder: Path, change: Callable[[Path], None], shown: str) -> None:
    """Apply `change` to a copy of the folder, then put the copy in the folder's place (the old one removed).

    `folder` is the real folder (a configured symlink's target: the link stays as it is); `shown` is the folder
    as configured, the one messages name."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.new-", dir=folder.parent))
    old = folder.parent / f".{folder.name}.old-{staging.name.rsplit('-', 1)[-1]}"
    try:
        shutil.rmtree(staging)
        if folder.is_dir():
            shutil.copytree(folder, staging, symlinks=True)
        else:
            staging.mkdir(mode=0o755)
        change(staging)
        if folder.is_dir():
            folder.rename(old)
        try:
            staging.rename(folder)
        except OSError:
            if old.is_dir():
                old.rename(folder)
            raise
    except AicrError:
        raise
    except OSError as err:
        raise AicrError(Code.WRITE_FAILED, f"cannot change the plugin folder {shown}: {err.strerror or err}; "
                        "it is as it was") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
