"""What the tests of every tier share: the real `kubectl aicr` as a user runs it, and the control plane."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import envtest
import pytest
from testfixtures import compare

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# The one switch between the two installations the same tests run against: unset, the pip install
# of this virtualenv (BIN); set to a folder holding a frozen release's `kubectl-aicr` (an unpacked
# archive), that program, found first on PATH by the real kubectl (docs/contributing.md).
PROGRAM_UNDER_TEST = "AICR_PROGRAM_UNDER_TEST"


def program_folder() -> Path | None:
    """The folder of the frozen program under test, or None for the pip installation; a wrong one fails."""
    configured = os.environ.get(PROGRAM_UNDER_TEST)
    if not configured:
        return None
    folder = Path(configured)
    if not (folder / "kubectl-aicr").is_file():
        pytest.fail(f"{PROGRAM_UNDER_TEST}={configured}: no kubectl-aicr program there")
    return folder


INSTALLED = "frozen" if os.environ.get(PROGRAM_UNDER_TEST) else "pip"


def aicr_env(home: Path, kubeconfig: Path | None = None, **extra: str) -> dict[str, str]:
    """A clean environment: the program under test (our virtualenv's by default) and kubectl first, a private HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "AICR_"))}
    frozen = program_folder()
    env["PATH"] = (f"{frozen}{os.pathsep}" if frozen else "") + f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(home)
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    env.update(extra)
    return env



class Aicr:
    """Runs `kubectl aicr ...` as a user would: a real kubectl finds the real plugin on PATH."""

    def __init__(self, kubectl: str, home: Path, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.kubectl, self.home, self.cwd = kubectl, home, cwd
        self.extra_env = dict(env or {})

    def with_env(self, **env: str) -> Aicr:
        """The same, with more environment (PYTHONPATH of a test's plugins, say)."""
        return Aicr(self.kubectl, self.home, self.cwd, {**self.extra_env, **env})

    def __call__(self, *args: str, kubeconfig: Path | None = None, timeout: float = 90,
                 **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.kubectl, "aicr", *args], capture_output=True, text=True, timeout=timeout,
                              env=aicr_env(self.home, kubeconfig, **{**self.extra_env, **env}), cwd=self.cwd,
                              stdin=subprocess.DEVNULL)



def started_plane(apiserver_flags: Sequence[str] = ()) -> Iterator[envtest.ControlPlane]:
    """A control plane for a fixture to yield, stopped after; without binaries a skip, or under CI a failure."""
    try:
        envtest.find_binaries()
    except envtest.TestbedError as err:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the real-cluster tests, but: {err}")
        pytest.skip(f"real-cluster tests need the control plane binaries: {err}")
    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"  # the testbed's kubectl too
    control_plane = envtest.ControlPlane(apiserver_flags=apiserver_flags).start()
    yield control_plane
    control_plane.stop()



def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    return lines[0] if lines else ""


def complete(aicr: Aicr, *words: str, kubeconfig: Path | None = None, **env: str) -> tuple[list[str], str]:
    """What kubectl offers for `kubectl aicr WORDS<TAB>`: the candidates and the directive line."""
    # What is completed, not how fast: 10 s, as a loaded CI machine with three workers needs (the 2 s budget
    # has its own test, tests/cli/test_completion.py, with a server that never answers).
    env = {"AICR_COMPLETION_SECONDS": "10", **aicr.extra_env, **env}
    proc = subprocess.run([aicr.kubectl, "__complete", "aicr", *words], capture_output=True, text=True, timeout=30,
                          env=aicr_env(aicr.home, kubeconfig, **env), cwd=aicr.cwd)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    lines = proc.stdout.splitlines()
    return lines[:-1], lines[-1]


def words(candidates: list[str]) -> list[str]:
    return [c.split("\t")[0] for c in candidates]


def read_until_running(proc: subprocess.Popen[str], seconds: float) -> str:
    """What `tools/testbed.py demo|webhook` printed up to its "Running until interrupted" line (or its end)."""
    lines: list[str] = []
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            break
        lines.append(line)
        if line.startswith("Running until interrupted"):
            break
    return "".join(lines)


def client_version_lines() -> list[str]:
    """What `kubectl aicr version --client` prints for the program under test (a release is stamped with the
    commit it was built from and that commit's time; a pip install from this checkout knows neither)."""
    import platform
    from importlib import metadata

    commit, built = "unknown", "unknown"
    if INSTALLED == "frozen":
        git = ["git", "-C", str(ROOT), "show", "-s"]
        commit = subprocess.run([*git, "--format=%H"], capture_output=True, text=True, check=True).stdout.strip()[:12]
        epoch = int(subprocess.run([*git, "--format=%ct"], capture_output=True, text=True, check=True).stdout)
        built = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    return [f"Client Version: {metadata.version('kubectl-aicr')}", f"Installed: {INSTALLED}", f"Commit: {commit}",
            f"Build Time: {built}", f"Python Version: {platform.python_version()}",
            f"Kubernetes Client Version: {metadata.version('kubernetes')}"]
