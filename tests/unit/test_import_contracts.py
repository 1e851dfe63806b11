"""The layering contracts of .importlinter hold, and they do catch a wrong import (not a rule that cannot fail)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from testfixtures import compare

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("aicr_core", "aicr_commands", "aicr_renderers", "aicr_policies", "aicr_admission", "aicr_dashboard")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(tree / ".importlinter")],
                          cwd=tree, env=env, capture_output=True, text=True, timeout=120)


def copy_of_the_tree(tmp_path: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    return tmp_path


def test_the_contracts_hold_on_the_tree(tmp_path: Path) -> None:
    proc = lint_imports(copy_of_the_tree(tmp_path))
    compare(proc.returncode, expected=0, suffix=proc.stdout + proc.stderr)


def test_a_command_that_imports_a_renderer_breaks_a_contract(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    with (tree / "aicr_commands" / "whoami.py").open("a") as module:
        module.write("\nfrom aicr_renderers import layouts  # noqa: E402 - the deliberate mistake\n")
    proc = lint_imports(tree)
    compare(proc.returncode, expected=1, suffix=proc.stdout)
    assert "Commands return a Result: they import no renderer, policy or the webhook BROKEN" in proc.stdout, proc.stdout
    assert "aicr_commands.whoami -> aicr_renderers.layouts" in proc.stdout, proc.stdout


def test_the_framework_that_reaches_into_the_domain_breaks_the_layers(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    with (tree / "aicr_core" / "framework" / "common_flags.py").open("a") as module:
        module.write("\nfrom aicr_core.domain import actions  # noqa: E402 - the deliberate mistake\n")
    proc = lint_imports(tree)
    compare(proc.returncode, expected=1, suffix=proc.stdout)
    assert "(neither imports the other), the session at the bottom BROKEN" in " ".join(proc.stdout.split()), \
        proc.stdout
    assert "aicr_core.framework.common_flags -> aicr_core.domain.actions" in proc.stdout, proc.stdout


def test_a_command_that_imports_another_command_breaks_a_contract(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    with (tree / "aicr_commands" / "list.py").open("a") as module:
        module.write("\nfrom aicr_commands import describe  # noqa: E402 - the deliberate mistake\n")
    proc = lint_imports(tree)
    compare(proc.returncode, expected=1, suffix=proc.stdout)
    assert "Commands import no other command" in proc.stdout and "BROKEN" in proc.stdout, proc.stdout
    assert "aicr_commands.list -> aicr_commands.describe" in proc.stdout, proc.stdout


def test_the_commands_contract_lists_every_command_module() -> None:
    """A new command module is in the independence contract, or the contract would not cover it."""
    text = (ROOT / ".importlinter").read_text()
    section = text.split("[importlinter:contract:commands-apart]", 1)[1].split("[importlinter:", 1)[0]
    listed = sorted(line.strip() for line in section.splitlines() if line.strip().startswith("aicr_commands."))
    public = sorted(f"aicr_commands.{p.stem}" for p in (ROOT / "aicr_commands").glob("*.py")
                    if not p.stem.startswith("_"))
    compare(listed, expected=public)


def test_the_domain_that_imports_the_framework_breaks_a_contract(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    with (tree / "aicr_core" / "domain" / "write_limits.py").open("a") as module:
        module.write("\nfrom aicr_core.framework import common_flags  # noqa: E402 - the deliberate mistake\n")
    proc = lint_imports(tree)
    compare(proc.returncode, expected=1, suffix=proc.stdout)
    assert "The domain imports nothing of the command-line framework" in proc.stdout, proc.stdout
    assert "aicr_core.domain.write_limits -> aicr_core.framework.common_flags" in proc.stdout, proc.stdout
    # The rooms' layers say it too: the domain and the framework are siblings that import neither the other.
    assert "(neither imports the other), the session at the bottom BROKEN" in " ".join(proc.stdout.split()), \
        proc.stdout


def test_the_operator_api_that_imports_the_action_table_breaks_a_contract(tmp_path: Path) -> None:
    """The circle issue 27 found (operator_api -> actions -> action_rules -> operator_api) cannot come back."""
    tree = copy_of_the_tree(tmp_path)
    with (tree / "aicr_core" / "domain" / "operator_api" / "__init__.py").open("a") as module:
        module.write("\nfrom aicr_core.domain.actions import ACTIONS  # noqa: E402 - the deliberate mistake\n")
    proc = lint_imports(tree)
    compare(proc.returncode, expected=1, suffix=proc.stdout)
    assert "The operator API knows no action" in proc.stdout and "BROKEN" in proc.stdout, proc.stdout
    assert "aicr_core.domain.operator_api -> aicr_core.domain.actions" in proc.stdout, proc.stdout


def test_a_module_of_the_operator_api_package_that_imports_the_action_table_breaks_it_too(tmp_path: Path) -> None:
    """The contract names the package: each of its modules is held by it, not only `__init__`."""
    tree = copy_of_the_tree(tmp_path)
    with (tree / "aicr_core" / "domain" / "operator_api" / "rollout_object.py").open("a") as module:
        module.write("\nfrom aicr_core.domain.action_rules import MIN_APPROVAL  # noqa: E402 - the mistake\n")
    proc = lint_imports(tree)
    compare(proc.returncode, expected=1, suffix=proc.stdout)
    assert "The operator API knows no action" in proc.stdout and "BROKEN" in proc.stdout, proc.stdout
    assert "aicr_core.domain.operator_api.rollout_object -> aicr_core.domain.action_rules" \
        in " ".join(proc.stdout.split()), proc.stdout  # the report wraps its lines


def test_every_module_at_the_top_of_the_core_is_a_leaf_of_the_leaves_contract() -> None:
    """docs/architecture.md: no new module at the top of aicr_core but a leaf, each in the leaves' contract (the
    face and the testing kit aside: the face imports the rooms, the kit is the site authors' pytest plugin)."""
    text = (ROOT / ".importlinter").read_text()
    section = text.split("[importlinter:contract:leaves]", 1)[1].split("forbidden_modules", 1)[0]
    leaves = sorted(line.strip() for line in section.splitlines() if line.strip().startswith("aicr_core."))
    top = sorted(f"aicr_core.{p.stem}" for p in (ROOT / "aicr_core").glob("*.py")
                 if p.stem not in ("__init__", "plugin", "testing", "_build_stamp"))  # _build_stamp: a release's
    compare(leaves, expected=top)


def test_the_dashboard_is_imported_by_its_command_alone_and_imports_no_renderer(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    with (tree / "aicr_commands" / "list.py").open("a") as module:
        module.write("\nfrom aicr_dashboard import serving  # noqa: E402 - the deliberate mistake\n")
    with (tree / "aicr_dashboard" / "page_render.py").open("a") as module:
        module.write("\nfrom aicr_renderers import layouts  # noqa: E402 - the deliberate mistake\n")
    proc = lint_imports(tree)
    compare(proc.returncode, expected=1, suffix=proc.stdout)
    text = " ".join(proc.stdout.split())
    assert "Nothing but its command imports the dashboard" in text and "aicr_commands.list -> aicr_dashboard" in text
    assert "aicr_dashboard.page_render -> aicr_renderers.layouts" in text, proc.stdout
