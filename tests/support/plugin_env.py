"""Plugins for tests without touching the project's virtualenv.

A site package is "installed" into a temporary folder of its own: its modules
are copied there and a `<name>-<version>.dist-info` with generated entry-point
metadata is written beside them, exactly what `pip install --target` leaves.
The real `kubectl aicr` sees it through PYTHONPATH (importlib.metadata scans
every sys.path entry), so nothing is installed into the project's
environment and an interrupted test leaves only a temporary folder behind.
"""
from __future__ import annotations

import configparser
import os
import shutil
import textwrap
from collections.abc import Mapping
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class PluginPath:
    """A folder on PYTHONPATH holding zero or more generated distributions."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def add(self, name: str, version: str, entry_points: Mapping[str, Mapping[str, str]],
            modules: Mapping[str, str] = {}, packages: Mapping[str, Path] = {}) -> PluginPath:
        """A distribution: entry points by group, modules as source text, packages as folders to copy."""
        for module, source in modules.items():
            target = self.root / (module.replace(".", "/") + ".py")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(textwrap.dedent(source))
        for package, folder in packages.items():
            shutil.copytree(folder, self.root / package, ignore=shutil.ignore_patterns("__pycache__"))
        dist_info = self.root / f"{name.replace('-', '_')}-{version}.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        # top_level.txt maps modules to this distribution (importlib.metadata.packages_distributions)
        top_level = sorted({m.split(".")[0] for m in modules} | {p.split(".")[0] for p in packages})
        (dist_info / "top_level.txt").write_text("".join(f"{m}\n" for m in top_level))
        lines = []
        for group, points in entry_points.items():
            lines.append(f"[{group}]")
            lines += [f"{ep} = {target}" for ep, target in points.items()]
            lines.append("")
        (dist_info / "entry_points.txt").write_text("\n".join(lines))
        return self

    def add_example(self, folder: Path) -> PluginPath:
        """One of examples/, as its setup.cfg declares it."""
        cfg = configparser.ConfigParser()
        cfg.read(folder / "setup.cfg")
        entry_points = {group: dict(_pairs(text)) for group, text in cfg["options.entry_points"].items()}
        packages = {p.strip(): folder / p.strip() for p in cfg["options"]["packages"].split(",") if p.strip()}
        return self.add(cfg["metadata"]["name"], cfg["metadata"]["version"], entry_points, packages=packages)

    def env(self) -> dict[str, str]:
        """What to add to a subprocess's environment for it to see these distributions: PYTHONPATH for the pip
        installation; a frozen program under test ignores PYTHONPATH and reads the folder as a plugin folder."""
        rest = os.environ.get("PYTHONPATH")
        env = {"PYTHONPATH": str(self.root) + (os.pathsep + rest if rest else "")}
        if os.environ.get("AICR_PROGRAM_UNDER_TEST"):
            env["AICR_PLUGIN_PATH"] = str(self.root)
        return env


def _pairs(text: str) -> list[tuple[str, str]]:
    pairs = []
    for line in text.strip().splitlines():
        name, _, target = line.partition("=")
        pairs.append((name.strip(), target.strip()))
    return pairs
