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
  met by the program, the folder or the other wheels of the same install.
"""
from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from email.parser import HeaderParser
from pathlib import Path
from typing import NamedTuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import sys_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from aicr_core import plugin_folders
from aicr_core.errors import AicrError, Code, UsageError

INSTALLER_NAME = "kubectl-aicr"


class Installed(NamedTuple):
    name: str
    version: str


class WheelInfo(NamedTuple):
    path: Path
    name: str
    version: Version
    requires: tuple[str, ...]


def program_distributions(folders: Sequence[str]) -> dict[str, Installed]:
    """The distributions of the program's own environment (sys.path without the plugin folders), by canonical name."""
    own_path = [entry for entry in sys.path if os.path.realpath(entry or ".") not in
                {os.path.realpath(folder) for folder in folders}]
    return _by_name(importlib.metadata.distributions(path=own_path))


def folder_distributions(folder: Path) -> dict[str, Installed]:
    return _by_name(importlib.metadata.distributions(path=[str(folder)])) if folder.is_dir() else {}


def _by_name(distributions: Iterable[importlib.metadata.Distribution]) -> dict[str, Installed]:
    found: dict[str, Installed] = {}
    for dist in distributions:
        name = dist.metadata["Name"]
        if name:
            found.setdefault(canonicalize_name(name), Installed(name, dist.version))
    return found


def read_wheel(path: Path) -> WheelInfo:
    """Name, version and requirements of a wheel file; [USAGE] naming it when it is not one."""
    from installer.sources import WheelFile

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
        with WheelFile.open(path) as source:
            metadata = HeaderParser().parsestr(source.read_dist_info("METADATA"))
            source.validate_record()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except Exception as err:  # noqa: BLE001 - a zip, a dist-info or a RECORD that is not right: one line
        raise UsageError(f"{path}: not a valid wheel: {type(err).__name__}: {err}") from None
    return WheelInfo(path, str(name), version, tuple(metadata.get_all("Requires-Dist") or ()))


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
    folders = plugin_folders.folders()
    folder = Path(folders[0])
    wheels = [read_wheel(path) for path in wheel_paths]
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
    for wheel in wheels:
        problem = unmet_requirement(wheel, available)
        if problem is not None:
            raise UsageError(f"{wheel.path}: {problem}")

    def change(staging: Path) -> None:
        for wheel, name in zip(wheels, names, strict=True):
            if name in in_folder:  # a newer (or the same) version of one installed: replaced
                _remove_distribution(staging, name)
            _unpack(wheel.path, staging)

    _replace_folder(folder, change)
    return str(folder), [Installed(w.name, str(w.version)) for w in wheels]


def uninstall(name: str) -> tuple[str, Installed]:
    """Remove the distribution NAME and every file it installed from the first plugin folder."""
    folders = plugin_folders.folders()
    folder = Path(folders[0])
    present = folder_distributions(folder).get(canonicalize_name(name))
    if present is None:
        program = program_distributions(folders).get(canonicalize_name(name))
        if program is not None:
            raise UsageError(f"{name} is part of the program ({program.name} {program.version}), "
                             f"not a plugin of {folder}")
        raise UsageError(f"{name} is not installed in the plugin folder {folder}")
    _replace_folder(folder, lambda staging: _remove_distribution(staging, canonicalize_name(name)))
    return str(folder), present


def _unpack(wheel: Path, target: Path) -> None:
    from installer import install as install_wheel
    from installer.destinations import SchemeDictionaryDestination
    from installer.sources import WheelFile

    scheme = {"purelib": str(target), "platlib": str(target), "headers": str(target / "include"),
              "scripts": str(target / "bin"), "data": str(target / "data")}
    destination = SchemeDictionaryDestination(scheme, interpreter=sys.executable, script_kind="posix",
                                              bytecode_optimization_levels=())
    with WheelFile.open(wheel) as source:
        install_wheel(source, destination, additional_metadata={"INSTALLER": INSTALLER_NAME.encode()})


def _remove_distribution(folder: Path, name: str) -> None:
    """Delete the files a distribution's RECORD lists (inside the folder only), then empty folders they leave."""
    for dist in importlib.metadata.distributions(path=[str(folder)]):
        if canonicalize_name(dist.metadata["Name"] or "") != name:
            continue
        root = folder.resolve()
        parents: set[Path] = set()
        for entry in dist.files or ():
            path = (folder / entry).resolve()
            if root not in path.parents:
                raise AicrError(Code.PLUGIN_ERROR, f"{name}'s RECORD names {entry}, outside {folder}: "
                                "nothing was removed")
            if path.is_file() or path.is_symlink():
                path.unlink()
            parents.update(p for p in path.parents if root in p.parents)
        for parent in sorted(parents, key=lambda p: len(p.parts), reverse=True):
            if parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
        return


def _replace_folder(folder: Path, change: Callable[[Path], None]) -> None:
    """Apply `change` to a copy of the folder, then put the copy in the folder's place (the old one removed)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.new-", dir=folder.parent))
    old = folder.parent / f".{folder.name}.old-{staging.name.rsplit('-', 1)[-1]}"
    try:
        shutil.rmtree(staging)
        if folder.is_dir():
            shutil.copytree(folder, staging, symlinks=True)
        else:
            staging.mkdir()
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
        raise AicrError(Code.WRITE_FAILED, f"cannot change the plugin folder {folder}: {err.strerror or err}; "
                        "it is as it was") from None
    except Exception as err:  # noqa: BLE001 - installer's refusal of a wheel's content: one line, folder unchanged
        raise AicrError(Code.WRITE_FAILED, f"cannot change the plugin folder {folder}: {type(err).__name__}: "
                        f"{err}; it is as it was") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
