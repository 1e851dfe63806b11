"""`tools/testbed.py demo --clusters 3`, as a newcomer runs it: docs/fleet.md's examples, and rollouts that move.

The demo is the real program, started once for this module: three control planes, a hub, the operator
stand-in. The examples are docs/fleet.md's shell blocks marked for the demo, extracted from the page
and run as written with bash (the demo's `env` sourced, in its folder), in the page's order. Then the
stand-in is tried as a user sees it: approve as alice and `wait` returns within seconds; a revocation
and a passed deadline end a rollout; `reset` puts the rollouts back.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import envtest
import pytest
from testfixtures import compare

from support.harness import BIN, ROOT, aicr_env

DOCS = ROOT / "docs" / "fleet.md"
TESTBED = ROOT / "tools" / "testbed.py"
MARK = "<!-- runs against the demo"
CONTEXTS = ("gpu-lab-1", "gpu-eu-1", "gpu-eu-2")
START_TIMEOUT = 300


@dataclass
class Demo:
    folder: Path
    env: dict[str, str]   # a user's shell after `source $AICR_DEMO/env`
    log: Path
    startup_seconds: float

    def run(self, command: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=timeout,
                              env=self.env, cwd=self.folder, stdin=subprocess.DEVNULL)

    def aicr(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["kubectl", "aicr", *args], capture_output=True, text=True, timeout=timeout,
                              env=self.env, cwd=self.folder, stdin=subprocess.DEVNULL)

    def plane(self, context: str) -> envtest.ControlPlane:
        """The running plane of `context`, from the demo's state file (not started here)."""
        state = json.loads((self.folder / "demo.json").read_text())
        workdir = next(p["workdir"] for p in state["planes"] if p["context"] == context)
        return envtest.ControlPlane(Path(workdir))


def demo_rollout(context: str, role: str) -> str:
    """The name the demo gives a role's rollout in a context: the same after every reset."""
    return f"rollout-{envtest.digest_of(f'aicr-demo {context} {role}')[7:23]}-1"


def read_env(path: Path) -> dict[str, str]:
    proc = subprocess.run(["bash", "-c", f"source {path} && env -0"], capture_output=True, text=True, check=True)
    return dict(item.split("=", 1) for item in proc.stdout.split("\0") if "=" in item)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    try:
        apiserver, etcd = envtest.find_binaries()
    except envtest.TestbedError as err:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the real-cluster tests, but: {err}")
        pytest.skip(f"the demo needs the control plane binaries: {err}")
    tmp = tmp_path_factory.mktemp("demo")
    (tmp / "home").mkdir()
    # The binaries this run found, by path: the private HOME has no build cache (the demo would build one).
    env = aicr_env(tmp / "home", TEST_ASSET_KUBE_APISERVER=str(apiserver), TEST_ASSET_ETCD=str(etcd))
    log = tmp / "demo.log"
    began = time.monotonic()
    with open(log, "wb") as out:
        # Killed with the test run (PR_SET_PDEATHSIG), and its planes with it.
        proc = subprocess.Popen([sys.executable, str(TESTBED), "demo", "--clusters", "3"], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                preexec_fn=envtest._die_with_parent)
    folder: Path | None = None
    try:
        while "Running until interrupted" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() - began > START_TIMEOUT:
                pytest.fail(f"the demo did not start (exit {proc.poll()}):\n{log.read_text(errors='replace')}")
            time.sleep(0.5)
        startup = time.monotonic() - began
        found = re.search(r"^  source (\S+)/env ", log.read_text(), re.M)
        assert found, log.read_text()
        folder = Path(found.group(1))
        shell = {**read_env(folder / "env"), "PATH": f"{BIN}{os.pathsep}{env['PATH']}"}
        yield Demo(folder, {**env, **{k: shell[k] for k in ("AICR_DEMO", "KUBECONFIG", "PLAN", "PATH")}},
                   log, startup)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    compare(proc.returncode, expected=0, suffix=log.read_text(errors="replace")[-3000:])
    assert folder is None or not folder.exists(), "the demo left its folder behind"


def marked_blocks(text: str) -> list[list[str]]:
    """The shell blocks right after a marker line, each as its commands (a trailing backslash joins lines)."""
    blocks, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith(MARK):
            continue
        assert lines[i + 1] == "```shell", f"docs/fleet.md line {i + 2}: a marker must precede a shell block"
        end = lines.index("```", i + 2)
        commands, current = [], ""
        for body in lines[i + 2:end]:
            current += body.rstrip("\\").rstrip() + " " if body.endswith("\\") else body
            if not body.endswith("\\"):
                commands.append(current.strip())
                current = ""
        blocks.append([c for c in commands if c])
    return blocks


def check(command: str, proc: subprocess.CompletedProcess[str], plan: str) -> None:
    """What each example must show, beyond exit 0."""
    out = proc.stdout
    plan_rollout = f"rollout-{plan[7:23]}-1"
    if command.startswith("kubectl aicr list --all-contexts --pending"):
        assert out.startswith("CONTEXT "), out
        compare(sorted({line.split()[0] for line in out.splitlines()[1:]}), expected=sorted(CONTEXTS))
    elif "list --contexts 'gpu-eu-*' -o name" in command:
        compare(sorted({line.split("/")[0] for line in out.splitlines()}), expected=["gpu-eu-1", "gpu-eu-2"])
    elif command.startswith("kubectl aicr version --all-contexts"):
        for context in CONTEXTS:
            assert f"== {context} ==" in out, out
    elif command.startswith("kubectl aicr policy check --plan"):
        for context in CONTEXTS:
            assert f"== {context} ==" in out, out
    elif "--waves" in command:
        summary = [line.split() for line in out.splitlines() if line.strip()]
        compare([row[3] for row in summary], expected=["succeeded"] * len(CONTEXTS), suffix=out + proc.stderr)
    elif command.startswith("kubectl aicr list --cluster-profiles"):
        for member in ("gpu-lab/lab-1", "gpu-fleet/eu-1", "gpu-fleet/eu-2"):
            assert member in out, out
    elif command.startswith("kubectl aicr whoami --context gpu-eu-2"):
        assert "alice" in out, out
    elif command.startswith("kubectl aicr list --context gpu-eu-2"):
        assert plan_rollout in out, out


def test_the_fleet_page_runs_as_written_against_the_demo(demo: Demo) -> None:
    blocks = marked_blocks(DOCS.read_text())
    commands = [command for block in blocks for command in block]
    assert len(blocks) >= 4 and len(commands) >= 9, blocks
    for command in commands:
        proc = demo.run(command, timeout=240)
        compare(proc.returncode, expected=0, prefix=command, suffix=proc.stdout + proc.stderr)
        assert "Traceback" not in proc.stderr, proc.stderr
        check(command, proc, demo.env["PLAN"])


def status_until(demo: Demo, context: str, name: str, holds: Callable[[dict[str, Any]], bool],
                 timeout: float = 30) -> dict[str, Any]:
    """The rollout's status once `holds` is true of it, polled every 0.2 s. The stand-in keeps a phase such
    as Progressing for one pace (2 s): a `wait --for phase=...` started after it (a loaded machine takes
    seconds to start a program) would wait for a phase that never comes back."""
    ends = time.monotonic() + timeout
    status: dict[str, Any] = {}
    while time.monotonic() < ends:
        got = demo.plane(context).kubectl("get", "runtimerollout", name, "-o", "jsonpath={.status}").stdout
        status = json.loads(got or "{}")
        if holds(status):
            return status
        time.sleep(0.2)
    raise AssertionError(f"{name} on {context}: not as expected within {timeout:.0f}s; its status: {status}")


def awaiting(release: str) -> Callable[[dict[str, Any]], bool]:
    return lambda status: (status.get("phase"), status.get("awaitingRelease")) == ("AwaitingAcknowledgement", release)


def test_an_approved_rollout_moves_on_to_its_end(demo: Demo) -> None:
    """approve as alice: taken up within seconds, each release's acknowledgement awaited, then Succeeded."""
    name = demo_rollout("gpu-lab-1", "waiting")
    proc = demo.aicr("approve", name, "--context", "gpu-lab-1", "--reason", "CHG-1 the demo", "--expires", "2h")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    began = time.monotonic()
    status_until(demo, "gpu-lab-1", name, lambda status: status.get("phase") != "AwaitingApproval")
    assert time.monotonic() - began < 10, "the stand-in took more than a few seconds"
    for release in ("gpu-operator", "nvsentinel"):  # both have after-apply steps in the demo's records
        status_until(demo, "gpu-lab-1", name, awaiting(release))
        proc = demo.aicr("wait", name, "--context", "gpu-lab-1", "--for", "phase=AwaitingAcknowledgement",
                         "--timeout", "30s")
        compare(proc.returncode, expected=0, suffix=proc.stderr)
        described = json.loads(demo.aicr("describe", name, "--context", "gpu-lab-1", "-o", "json").stdout)
        waiting = [step["release"] for step in described["steps"] if step["state"] == "AwaitingAcknowledgement"]
        compare(waiting, expected=[release])
        compare(demo.aicr("acknowledge", name, "--context", "gpu-lab-1").returncode, expected=0)
    proc = demo.aicr("wait", name, "--context", "gpu-lab-1", "--for", "ended", "--timeout", "60s", "-o", "json")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    compare(json.loads(proc.stdout)["outcome"], expected="Succeeded")
    labels = demo.plane("gpu-lab-1").kubectl("get", "runtimerollout", name, "-o", "jsonpath={.metadata.labels}").stdout
    compare(json.loads(labels).get(envtest.OUTCOME_LABEL), expected="Succeeded")


def test_a_revocation_is_honoured(demo: Demo) -> None:
    name = demo_rollout("gpu-eu-1", "waiting")
    compare(demo.aicr("approve", name, "--context", "gpu-eu-1", "--reason", "CHG-2").returncode, expected=0)
    status_until(demo, "gpu-eu-1", name, awaiting("gpu-operator"))  # under way: its first release applied
    proc = demo.aicr("revoke", name, "--context", "gpu-eu-1", "--reason", "CHG-2 called off")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    proc = demo.aicr("wait", name, "--context", "gpu-eu-1", "--for", "ended", "--timeout", "30s", "-o", "json")
    compare((proc.returncode, json.loads(proc.stdout or "{}").get("outcome")), expected=(0, "Revoked"),
            suffix=proc.stderr)


def test_a_rollout_not_approved_by_its_deadline_expires(demo: Demo) -> None:
    seed = envtest.Seeder(demo.plane("gpu-eu-2"))
    name = seed.rollout(deadline=dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=3))
    proc = demo.aicr("wait", name, "--context", "gpu-eu-2", "--for", "ended", "--timeout", "30s", "-o", "json")
    compare((proc.returncode, json.loads(proc.stdout or "{}").get("outcome")), expected=(0, "Expired"),
            suffix=proc.stderr)


def test_reset_puts_the_rollouts_back(demo: Demo) -> None:
    """Run last: what the tests above used up (an approval, a revocation) is back; what they added is gone."""
    proc = demo.run(f"{sys.executable} {TESTBED} reset")  # AICR_DEMO says which demo
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    for context in ("gpu-lab-1", "gpu-eu-1"):
        name = demo_rollout(context, "waiting")
        described = json.loads(demo.aicr("describe", name, "--context", context, "-o", "json").stdout)
        compare((described["phase"], described["approval"]["user"], described["approval"]["revocation"]),
                expected=("AwaitingApproval", None, None))
    listed = json.loads(demo.aicr("list", "--all-contexts", "--all", "-o", "json").stdout)
    compare(len(listed["items"]), expected=5 * len(CONTEXTS))  # the demo's five rollouts in each, no more
