"""Load and faults on the real control plane: many approvers at once, an API server that dies mid-approval."""
from __future__ import annotations

import json
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import envtest
import pytest
from testfixtures import compare

from support.harness import Aicr, error_line
from support.plugin_env import PluginPath

APPROVERS = ("alice", "bob", "carol", "erin")  # erin through an exec credential plugin


def test_32_approvals_at_once_store_exactly_one(aicr: Aicr, plane: envtest.ControlPlane,
                                                seed: envtest.Seeder) -> None:
    name = seed.rollout()
    runs = 32
    results: list[tuple[str, subprocess.CompletedProcess[str]]] = []
    lock, start = threading.Lock(), threading.Barrier(runs)

    def approve(user: str) -> None:
        start.wait()  # all 32 processes are started at the same moment
        proc = aicr("approve", name, "--reason", f"{user} says go", kubeconfig=plane.kubeconfig_for(user),
                    timeout=180)
        with lock:
            results.append((user, proc))

    threads = [threading.Thread(target=approve, args=(APPROVERS[i % len(APPROVERS)],)) for i in range(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    codes = Counter(proc.returncode for _, proc in results)
    detail = "\n".join(f"{user}: {proc.returncode} {proc.stderr.strip()}" for user, proc in results)
    compare(codes, expected=Counter({0: 1, 1: runs - 1}), suffix=detail)
    winner = next(user for user, proc in results if proc.returncode == 0)
    stored = json.loads(plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["spec"]["approval"]
    compare((stored["user"], stored["reason"]), expected=(winner, f"{winner} says go"))
    for user, proc in results:
        if proc.returncode:
            assert error_line(proc).startswith(f"error: [ALREADY_APPROVED] rollout {name} is already approved "
                                               f"by {winner} until "), f"{user}: {proc.stderr}"
            compare(proc.stdout, expected="")
    assert "INTERNAL" not in detail and "Traceback" not in detail


STOP_POLICY = """
import os, signal, time
from pathlib import Path

from aicr_core.plugin import hookimpl


@hookimpl
def aicr_pre_approve():
    # Runs after approve has read the rollout and before it writes: kill the API server right here.
    pid = int(os.environ["AICR_TEST_KILL_PID"])
    os.kill(pid, signal.SIGKILL)
    ends = time.monotonic() + 10
    while time.monotonic() < ends:  # until it is dead (a zombie until the test reaps it)
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                break
        except FileNotFoundError:
            break
        time.sleep(0.02)
    return None
"""


@pytest.fixture
def own_plane() -> Iterator[envtest.ControlPlane]:
    """A control plane of this test's own: it kills and restarts its API server."""
    plane = envtest.ControlPlane().start()
    try:
        yield plane
    finally:
        plane.stop()


def test_the_api_server_dies_between_the_read_and_the_write(aicr: Aicr, plane: envtest.ControlPlane,  # PATH
                                                            own_plane: envtest.ControlPlane, tmp_path: Path) -> None:
    name = envtest.Seeder(own_plane).rollout()
    policies = PluginPath(tmp_path / "policies").add(
        "aicr-test-kill-apiserver", "0.1", {"aicr.policies": {"kill-apiserver": "aicr_test_kill_apiserver"}},
        modules={"aicr_test_kill_apiserver": STOP_POLICY})
    log = tmp_path / "requests"
    proc = aicr.with_env(**policies.env())(
        "approve", name, "--reason", "window", kubeconfig=own_plane.kubeconfig_for("alice"),
        AICR_TEST_KILL_PID=str(own_plane.apiserver.pid), AICR_REQUEST_LOG=str(log), AICR_DEADLINE_SECONDS="10")
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    assert error_line(proc).split("]")[0] in ("error: [UNAVAILABLE", "error: [TIMEOUT"), proc.stderr
    compare((proc.stdout, len(proc.stderr.splitlines())), expected=("", 1), suffix=proc.stderr)
    compare([line.split()[0] for line in log.read_text().splitlines()],
            expected=["POST", "GET", "GET", "GET", "PATCH"])  # who, the rollout, where the file is, the file; the write
    compare(own_plane.apiserver.wait(timeout=10), expected=-9)  # it really was dead for the write

    own_plane.restart_apiserver()
    stored = json.loads(own_plane.kubectl("get", "runtimerollout", name, "-o", "json").stdout)["spec"]
    # The server was dead before the PATCH was sent, so nothing can have been stored; never a partial approval.
    compare(stored.get("approval"), expected=None)
    # After the restart the same approval goes through, once.
    proc = aicr("approve", name, "--reason", "window", kubeconfig=own_plane.kubeconfig_for("alice"))
    compare(proc.returncode, expected=0, suffix=proc.stderr)
