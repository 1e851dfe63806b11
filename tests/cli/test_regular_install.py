"""A regular (not editable) `pip install` of a copy of this tree, without extras, into a virtualenv of its own.

What a user's `pip install .` gives: every module of the five packages (setup.cfg finds the
sub-packages: `packages = find:`), a `kubectl aicr help` that runs from them, and an
`aicr-admission` that, without the `admission` extra, says in one line what to install.
The editable install the other tests use finds modules in the source tree, so it shows none of this.
The copy and the virtualenv are removed after (pip's cache makes the install quick).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from testfixtures import compare

from aicr_admission.main import INSTALL_EXTRA

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("aicr_core", "aicr_commands", "aicr_renderers", "aicr_policies", "aicr_admission")
# What a checkout holds that is no source: left out of the copy.
NOT_SOURCE = (".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".tox", ".pytest_cache", "site",
              "aicr-reproduce", ".testbin")


class Installed:
    def __init__(self, base: Path) -> None:
        self.tree, self.venv = base / "tree", base / "venv"
        self.bin = self.venv / "bin"

    def site_packages(self) -> Path:
        found = sorted(self.venv.glob("lib/python3*/site-packages"))
        assert len(found) == 1, found
        return found[0]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("regular-install")
    it = Installed(base)
    try:
        shutil.copytree(ROOT, it.tree, ignore=shutil.ignore_patterns(*NOT_SOURCE))
        subprocess.run([sys.executable, "-m", "venv", str(it.venv)], check=True, capture_output=True)
        pip = subprocess.run([str(it.bin / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                              str(it.tree)], capture_output=True, text=True, cwd=base)
        assert pip.returncode == 0, pip.stderr
        yield it
    finally:
        shutil.rmtree(base, ignore_errors=True)


def modules(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_of_the_five_packages_is_installed(installed: Installed) -> None:
    site = installed.site_packages()
    for package in PACKAGES:
        compare(modules(site / package), expected=modules(ROOT / package), prefix=package)


def test_kubectl_aicr_help_runs_from_the_regular_install(installed: Installed, kubectl: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "AICR_", "PYTHON"))}
    env.update(PATH=f"{installed.bin}{os.pathsep}{Path(kubectl).parent}{os.pathsep}{env.get('PATH', '')}",
               HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))
    found = subprocess.run([kubectl, "plugin", "list"], capture_output=True, text=True, env=env)
    paths = [line for line in found.stdout.splitlines() if line.startswith("/")]
    assert paths[0] == str(installed.bin / "kubectl-aicr"), found.stdout  # the one kubectl runs
    proc = subprocess.run([kubectl, "aicr", "help"], capture_output=True, text=True, env=env, cwd=tmp_path)
    compare((proc.returncode, proc.stderr), expected=(0, ""))
    listed = {line.split()[0] for line in proc.stdout.split("Commands:\n")[1].split("\n\n")[0].splitlines()}
    assert {"describe", "approve", "revoke", "acknowledge", "list", "wait", "policy", "help"} <= listed, proc.stdout


@pytest.mark.parametrize("args", [["--help"], [], ["--tls-cert-file", "/nonexistent/tls.crt",
                                                   "--tls-private-key-file", "/nonexistent/tls.key"]])
def test_the_webhook_without_its_extra_says_what_to_install(installed: Installed, tmp_path: Path,
                                                            args: list[str]) -> None:
    """One line, exit 1, before it reads its flags (--help included) or its certificate files."""
    proc = subprocess.run([str(installed.bin / "aicr-admission"), *args], capture_output=True, text=True,
                          cwd=tmp_path, env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)})
    compare((proc.returncode, proc.stdout, len(proc.stderr.splitlines())), expected=(1, "", 1), suffix=proc.stderr)
    line = json.loads(proc.stderr)
    compare({k: line[k] for k in ("level", "msg", "error")}, expected={
        "level": "error", "msg": "cannot start",
        "error": f"the admission extra is not installed (no module prometheus_client): {INSTALL_EXTRA}"})
