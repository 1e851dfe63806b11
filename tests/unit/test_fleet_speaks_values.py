"""The fleet speaks values: no module of aicr_core/fleet/ but flags.py knows argparse, the command or the terminal.

`.importlinter`'s contract "The fleet speaks values" forbids the imports (lint-imports sees no import
under TYPE_CHECKING: the project excludes them); this test holds the contract's list whole, shows the
contract catches a wrong import, and reads every module's source for what no contract sees: an
import of argparse or of the command under TYPE_CHECKING, and sys.stdin or sys.stderr.
"""
from __future__ import annotations

import ast
import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from testfixtures import compare

ROOT = Path(__file__).resolve().parents[2]
FLEET = ROOT / "aicr_core" / "fleet"
COMMAND_LINE_SIDE = "flags"
FORBIDDEN_MODULES = ("argparse", "aicr_core.framework.command")
TERMINAL = ("stdin", "stderr")
CONTRACT = "importlinter:contract:fleet-speaks-values"


def fleet_modules() -> list[str]:
    """Every module of the fleet but its command-line side, by name."""
    return sorted(path.stem for path in FLEET.glob("*.py") if path.stem not in ("__init__", COMMAND_LINE_SIDE))


def test_the_contract_names_every_module_of_the_fleet_but_flags() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    listed = config[CONTRACT]["source_modules"].split()
    compare(sorted(listed), expected=[f"aicr_core.fleet.{name}" for name in fleet_modules()])
    compare(config[CONTRACT]["forbidden_modules"].split(), expected=list(FORBIDDEN_MODULES))


def problems(path: Path) -> list[str]:
    """What a module of the fleet may not do, found in its source, wherever it is (TYPE_CHECKING included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            if module == "sys":
                found += [f"line {node.lineno}: from sys import {a.name}" for a in node.names if a.name in TERMINAL]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "sys" \
                and node.attr in TERMINAL:
            found.append(f"line {node.lineno}: sys.{node.attr}")
            continue
        else:
            continue
        wrong = [name for name in names if any(name == f or name.startswith(f"{f}.") for f in FORBIDDEN_MODULES)]
        found += [f"line {node.lineno}: imports {wrong[0]}"] if wrong else []
    return sorted(found, key=lambda problem: int(problem.split()[1].rstrip(":")))


@pytest.mark.parametrize("name", fleet_modules())
def test_no_module_of_the_fleet_but_flags_knows_argparse_the_command_or_the_terminal(name: str) -> None:
    compare(problems(FLEET / f"{name}.py"), expected=[])


def test_the_scan_sees_what_it_looks_for(tmp_path: Path) -> None:
    """Not a rule that cannot fail: each forbidden thing, written into a module, is found."""
    module = tmp_path / "wrong.py"
    module.write_text("import sys\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import argparse\n"
                      "    from aicr_core.framework.command import AicrCommand\n"
                      "from aicr_core.framework import command\nfrom sys import stdin\n"
                      "def ask() -> str:\n    sys.stderr.write('?')\n    return sys.stdin.readline()\n")
    compare(problems(module), expected=[
        "line 4: imports argparse", "line 5: imports aicr_core.framework.command",
        "line 6: imports aicr_core.framework.command", "line 7: from sys import stdin", "line 9: sys.stderr",
        "line 10: sys.stdin"])
    compare(problems(FLEET / f"{COMMAND_LINE_SIDE}.py") != [], expected=True)  # the one that may


def test_a_fleet_module_that_imports_argparse_breaks_the_contract(tmp_path: Path) -> None:
    for package in ("aicr_core", "aicr_commands", "aicr_renderers", "aicr_policies", "aicr_admission"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    with (tmp_path / "aicr_core" / "fleet" / "fan_out.py").open("a") as module:
        module.write("\nimport argparse  # noqa: E402 - the deliberate mistake\n")
    proc = subprocess.run([str(Path(sys.executable).with_name("lint-imports")), "--no-cache", "--config",
                           str(tmp_path / ".importlinter")], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=120)
    compare(proc.returncode, expected=1, suffix=proc.stdout)
    assert "The fleet speaks values" in proc.stdout and "BROKEN" in proc.stdout, proc.stdout
    assert "aicr_core.fleet.fan_out -> argparse" in proc.stdout, proc.stdout
