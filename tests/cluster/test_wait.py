"""`kubectl aicr wait` and `describe --watch` through the real kubectl, on the real control plane.

The operator's part (status changes) is played by the seeder; approvals and
acknowledgements are made with `kubectl aicr` by alice. Dropped connections
go through a TCP relay the test cuts; 410 Gone comes from the real API server.
"""
from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import envtest
import pytest
from testfixtures import compare

from support.harness import Aicr, aicr_env, error_line

APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "maintenance window"}
PROGRESS = re.compile(r"^\d\d:\d\d:\d\d (\w+) -> (\w+)$")


class Background:
    """`kubectl aicr ...` running while the test changes the rollout; its request log shows when it watches."""

    def __init__(self, aicr: Aicr, kubeconfig: Path, *args: str, stdout: int | None = None) -> None:
        self.log = aicr.cwd / f"requests-{time.monotonic_ns()}"
        env = aicr_env(aicr.home, kubeconfig, AICR_REQUEST_LOG=str(self.log))
        self.proc = subprocess.Popen([aicr.kubectl, "aicr", *args], env=env, cwd=aicr.cwd, text=True,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE if stdout is None else stdout,
                                     stderr=subprocess.PIPE)

    def requests(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []

    def watching(self, count: int = 1, timeout: float = 20) -> None:
        ends = time.monotonic() + timeout
        while sum("watch=1" in line for line in self.requests()) < count:
            assert self.proc.poll() is None, self.proc.communicate()
            assert time.monotonic() < ends, self.requests()
            time.sleep(0.05)
        time.sleep(0.3)  # the request is logged as it is sent; let the server open the stream

    def stderr_line(self, timeout: float = 15) -> str:
        assert self.proc.stderr is not None
        ready, _, _ = select.select([self.proc.stderr], [], [], timeout)
        assert ready, "no line on stderr in time"
        return self.proc.stderr.readline().rstrip("\n")

    def finish(self, timeout: float = 20) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out or "", err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def background(aicr: Aicr) -> Iterator[list[Background]]:
    started: list[Background] = []
    yield started
    for job in started:
        job.kill()


def start(background: list[Background], aicr: Aicr, kubeconfig: Path, *args: str, **kwargs: int) -> Background:
    job = Background(aicr, kubeconfig, *args, **kwargs)
    background.append(job)
    return job


# -- wait ------------------------------------------------------------------------------------------

def test_wait_for_an_approval_as_it_happens(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                            background: list[Background]) -> None:
    name = seed.rollout()
    version = json.loads(plane.kubectl("get", "aicrro", name, "-o", "json").stdout)["metadata"]["resourceVersion"]
    job = start(background, aicr, plane.kubeconfig_for("victor"), "wait", name, "--for", "approval")
    job.watching()
    approve = aicr("approve", name, "--reason", "go", kubeconfig=plane.kubeconfig_for("alice"))
    compare(approve.returncode, expected=0, suffix=approve.stderr)
    compare(job.finish(), expected=(0, f"rollout {name}: approval met (phase AwaitingApproval)\n", ""))
    compare(job.requests(), expected=[  # one read, then one watch from the version read
        f"GET /apis/operator.aicr.run/v1alpha1/runtimerollouts/{name}",
        f"GET /apis/operator.aicr.run/v1alpha1/runtimerollouts?fieldSelector=metadata.name%3D{name}"
        f"&resourceVersion={version}&allowWatchBookmarks=true&timeoutSeconds=300&watch=1"])


def test_phase_changes_on_stderr_as_they_happen(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                background: list[Background]) -> None:
    name = seed.rollout(approval=APPROVED)
    job = start(background, aicr, plane.kubeconfig_for("victor"), "wait", name, "--for", "ended", "-o", "json")
    job.watching()
    seed.set_rollout_status(name, {"phase": "Progressing"})
    line = job.stderr_line()
    assert PROGRESS.match(line) and line.endswith(" AwaitingApproval -> Progressing"), line
    assert job.proc.poll() is None  # still waiting: the line came as it happened
    seed.set_rollout_status(name, {"phase": "Ended", "outcome": "Succeeded"})
    code, out, err = job.finish()
    compare((code, err.strip().endswith(" Progressing -> Ended")), expected=(0, True), suffix=err)
    compare(json.loads(out), expected={"kind": "ConditionMet", "rollout": name, "condition": "ended",
                                       "phase": "Ended", "outcome": "Succeeded"})


def test_a_condition_that_already_holds_returns_at_once(aicr: Aicr, plane: envtest.ControlPlane,
                                                        seed: envtest.Seeder, tmp_path: Path) -> None:
    name = seed.rollout(phase="Progressing", approval=APPROVED)
    log = tmp_path / "requests"
    for condition in ("approval", "approved", "phase=Progressing"):
        proc = aicr("wait", name, "--for", condition, kubeconfig=plane.kubeconfig_for("victor"),
                    AICR_REQUEST_LOG=str(log))
        compare((proc.returncode, proc.stdout, proc.stderr),
                expected=(0, f"rollout {name}: {condition} met (phase Progressing)\n", ""))
    compare(len(log.read_text().splitlines()), expected=3)  # one GET each, no watch
    proc = aicr("wait", name, "--for", "approval", "-o", "name", kubeconfig=plane.kubeconfig_for("victor"))
    compare(proc.stdout, expected=f"runtimerollout.operator.aicr.run/{name}\n")


def test_ended_without_meeting_it(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                  background: list[Background]) -> None:
    name = seed.rollout()
    job = start(background, aicr, plane.kubeconfig_for("victor"), "wait", name, "--for", "approval")
    job.watching()
    seed.set_rollout_status(name, {"phase": "Ended", "outcome": "Expired"})
    code, out, err = job.finish()
    compare((code, out), expected=(1, ""))
    compare(err.splitlines()[-1],
            expected=f"error: [ENDED] rollout {name} ended (Expired) without meeting approval")
    assert PROGRESS.match(err.splitlines()[0]), err
    ended = seed.rollout(phase="Ended", outcome="Failed")
    proc = aicr("wait", ended, "--for", "phase=Progressing", kubeconfig=plane.kubeconfig_for("victor"))
    compare(error_line(proc), expected=f"error: [ENDED] rollout {ended} ended (Failed) without meeting "
                                       "phase=Progressing")
    compare(aicr("wait", ended, "--for", "ended", kubeconfig=plane.kubeconfig_for("victor")).returncode, expected=0)


def test_timeout_and_never_polling(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                   tmp_path: Path) -> None:
    name = seed.rollout()
    log = tmp_path / "requests"
    started = time.monotonic()
    proc = aicr("wait", name, "--for", "approval", "--timeout", "3s", kubeconfig=plane.kubeconfig_for("victor"),
                AICR_REQUEST_LOG=str(log))
    elapsed = time.monotonic() - started
    compare((proc.returncode, error_line(proc)),
            expected=(1, f"error: [TIMEOUT] rollout {name}: approval not met within 3s (phase AwaitingApproval)"))
    assert 2.9 < elapsed < 8, elapsed
    requests = log.read_text().splitlines()
    compare(len(requests), expected=2, suffix=str(requests))  # one GET, one watch: three seconds without a poll
    proc = aicr("wait", name, "--for", "approval", "--timeout", "0", kubeconfig=plane.kubeconfig_for("victor"))
    compare(error_line(proc), expected=f"error: [TIMEOUT] rollout {name}: approval not met within 0s "
                                       "(phase AwaitingApproval)")


@pytest.mark.parametrize("seeded,condition,reason", [
    ({"approval_required": False, "phase": "Progressing"}, "approval", "needs no approval"),
    ({"approval": APPROVED, "revocation": {"user": "alice", "time": "2026-11-29T21:00:00Z", "reason": "r"},
      "phase": "Progressing"}, "approved", "was revoked by alice at 2026-11-29T21:00:00Z"),
    ({"approval": {**APPROVED, "expires": "2021-01-01T00:00:00Z"}, "phase": "Progressing"}, "approved",
     "was approved by bob until 2021-01-01T00:00:00Z, which has passed"),
])
def test_a_condition_that_can_never_hold_fails_at_once(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                                       seeded: dict, condition: str, reason: str) -> None:  # type: ignore[type-arg]
    name = seed.rollout(**seeded)
    proc = aicr("wait", name, "--for", condition, kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, error_line(proc)),
            expected=(1, f"error: [UNREACHABLE] rollout {name} {reason}: {condition} can never hold"))


def test_wait_for_an_acknowledgement(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                     background: list[Background]) -> None:
    name = seed.rollout(phase="AwaitingAcknowledgement", approval=APPROVED, awaiting_release="nvsentinel")
    job = start(background, aicr, plane.kubeconfig_for("victor"), "wait", name, "--for", "acknowledgement")
    job.watching()
    compare(aicr("acknowledge", name, kubeconfig=plane.kubeconfig_for("alice")).returncode, expected=0)
    compare(job.finish(), expected=(0, f"rollout {name}: acknowledgement met (phase AwaitingAcknowledgement)\n", ""))
    # Acknowledged, the operator moves on: the condition no longer holds for the next release.
    seed.set_rollout_status(name, {"phase": "Progressing"})
    proc = aicr("wait", name, "--for", "acknowledgement", "--timeout", "1s", kubeconfig=plane.kubeconfig_for("victor"))
    assert error_line(proc).startswith("error: [TIMEOUT] "), proc.stderr


def test_usage_and_not_found(aicr: Aicr, plane: envtest.ControlPlane) -> None:
    victor = plane.kubeconfig_for("victor")
    for args, message in [
        (["wait", "rollout-0000000000000000-1"], "wait needs --for CONDITION"),
        (["wait", "rollout-0000000000000000-1", "--for", "soon"], "invalid condition 'soon'"),
        (["wait", "rollout-0000000000000000-1", "--for", "phase=Done"], "invalid condition 'phase=Done'"),
        (["wait", "rollout-0000000000000000-1", "--for", "ended", "--timeout", "-1m"], "must not be negative"),
    ]:
        proc = aicr(*args, kubeconfig=victor)
        compare(proc.returncode, expected=2, suffix=proc.stderr)
        assert message in error_line(proc), proc.stderr
    proc = aicr("wait", "rollout-0000000000000000-1", "--for", "ended", kubeconfig=victor)
    compare(error_line(proc), expected="error: [NOT_FOUND] rollout rollout-0000000000000000-1 not found")


# -- surviving dropped connections and 410 Gone -----------------------------------------------------

class Relay:
    """A TCP relay to the API server; `cut()` closes every connection through it, as a flaky network would."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        with self.lock:
            doomed, self.sockets = self.sockets, []
        for s in doomed:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self.server.close()
        self.cut()


@pytest.fixture
def relay(plane: envtest.ControlPlane) -> Iterator[Relay]:
    relay = Relay(int(plane.url.rsplit(":", 1)[1]))
    yield relay
    relay.close()


def through(relay: Relay, plane: envtest.ControlPlane, user: str, tmp_path: Path) -> Path:
    config = json.loads(plane.kubeconfig_for(user).read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{relay.port}"
    path = tmp_path / f"kubeconfig-{user}-relay"
    path.write_text(json.dumps(config))
    return path


def test_wait_survives_a_dropped_connection(aicr: Aicr, plane: envtest.ControlPlane, seed: envtest.Seeder,
                                            relay: Relay, tmp_path: Path, background: list[Background]) -> None:
    name = seed.rollout(approval=APPROVED)
    job = start(background, aicr, through(relay, plane, "victor", tmp_path), "wait", name,
                "--for", "phase=Validating", "--timeout", "60s")
    job.watching()
    relay.cut()
    seed.set_rollout_status(name, {"phase": "Validating"})  # while the connection is down
    code, out, err = job.finish(timeout=40)
    compare((code, out), expected=(0, f"rollout {name}: phase=Validating met (phase Validating)\n"), suffix=err)
    kinds = ["watch" if "watch=1" in r else "read" for r in job.requests()]
    compare(kinds[:3], expected=["read", "watch", "read"])  # the stream broke: read again, no poll


def test_the_watch_survives_410_gone(plane: envtest.ControlPlane, seed: envtest.Seeder) -> None:
    """In process against the real server: the first read reports a version compacted long ago."""
    from aicr_core.domain import operator_api as api
    from aicr_core.session import kube
    from aicr_core.session.deadline import Deadline
    from aicr_core.session.watch import follow

    class StaleFirstRead:
        def __init__(self, cluster: kube.KubeSession) -> None:
            self.cluster, self.deadline = cluster, cluster.deadline
            self.reads: list[str] = []
            self.watched_from: list[str] = []

        def get(self, path: str, params: dict | None = None) -> dict:  # type: ignore[type-arg]
            obj = self.cluster.get(path, params)
            if not self.reads:
                obj["metadata"]["resourceVersion"] = "1"
            self.reads.append(obj["metadata"]["resourceVersion"])
            return obj

        def watch(self, path: str, params: dict) -> Iterator[dict]:  # type: ignore[type-arg]
            self.watched_from.append(params["resourceVersion"])
            return self.cluster.watch(path, params)

    name = seed.rollout()
    session = StaleFirstRead(kube.connect(str(plane.kubeconfig_for("victor")), None, Deadline(30)))
    seen = follow(session, api.rollouts_path(), name)  # type: ignore[arg-type]
    compare(next(seen)["status"]["phase"], expected="AwaitingApproval")
    seed.set_rollout_status(name, {"phase": "Progressing"})
    compare(next(seen)["status"]["phase"], expected="Progressing")
    # 410 Gone for version 1 (after at most one quiet stream), then it read again ...
    compare((set(session.watched_from), len(session.reads)), expected=({"1"}, 2))
    seed.set_rollout_status(name, {"phase": "Validating"})
    compare(next(seen)["status"]["phase"], expected="Validating")
    compare(session.watched_from[-1], expected=session.reads[1])  # ... and watched from what it read


# -- describe --watch --------------------------------------------------------------------------------

def test_describe_watch_prints_each_change_until_the_end(aicr: Aicr, plane: envtest.ControlPlane,
                                                         seed: envtest.Seeder, background: list[Background]) -> None:
    name = seed.rollout(approval=APPROVED)
    job = start(background, aicr, plane.kubeconfig_for("victor"), "describe", name, "--watch")
    job.watching()
    seed.set_rollout_status(name, {"phase": "Progressing", "message": "step 1/2 gpu-operator (Upgrade)"})
    time.sleep(0.5)
    seed.set_rollout_status(name, {"phase": "Ended", "outcome": "Succeeded", "message": "rollout succeeded"})
    code, out, err = job.finish()
    compare((code, err), expected=(0, ""))
    descriptions = out.split("---\n")
    compare([re.search(r"Phase: +(\w+)", d).group(1) for d in descriptions],  # type: ignore[union-attr]
            expected=["AwaitingApproval", "Progressing", "Ended"])
    assert all(d.startswith(f"Rollout:      {name}\n") for d in descriptions)


def test_describe_watch_redraws_in_place_on_a_terminal(aicr: Aicr, plane: envtest.ControlPlane,
                                                       seed: envtest.Seeder, background: list[Background]) -> None:
    name = seed.rollout(approval=APPROVED)
    controller, terminal = pty.openpty()
    job = start(background, aicr, plane.kubeconfig_for("victor"), "describe", name, "-w", "--color=never",
                stdout=terminal)  # a terminal colours by default (test_output_options checks that)
    os.close(terminal)
    job.watching()
    seed.set_rollout_status(name, {"phase": "Ended", "outcome": "Failed"})
    code, _, err = job.finish()
    compare((code, err), expected=(0, ""))
    screen = b""
    while select.select([controller], [], [], 1)[0]:
        try:
            chunk = os.read(controller, 65536)
        except OSError:
            break
        if not chunk:
            break
        screen += chunk
    os.close(controller)
    text = screen.decode()
    first, _, second = text.partition("\x1b[H\x1b[2J")
    assert "Phase:        AwaitingApproval" in first and "Phase:        Ended" in second, text
    assert "---" not in text


def test_describe_watch_stops_on_ctrl_c_with_exit_130(aicr: Aicr, plane: envtest.ControlPlane,
                                                      seed: envtest.Seeder, background: list[Background]) -> None:
    name = seed.rollout()
    job = start(background, aicr, plane.kubeconfig_for("victor"), "describe", name, "-w")
    job.watching()
    job.proc.send_signal(signal.SIGINT)  # kubectl execs the plugin: this is the plugin's process
    code, out, err = job.finish()
    compare((code, err), expected=(130, "error: [INTERRUPTED] interrupted\n"))
    assert out.startswith(f"Rollout:      {name}\n")


def test_describe_watch_of_an_ended_rollout_prints_once(aicr: Aicr, plane: envtest.ControlPlane,
                                                        seed: envtest.Seeder) -> None:
    name = seed.rollout(phase="Ended", outcome="Revoked", approval=APPROVED)
    proc = aicr("describe", name, "--watch", kubeconfig=plane.kubeconfig_for("victor"))
    compare((proc.returncode, proc.stdout.count("Rollout:"), "---" in proc.stdout), expected=(0, 1, False))
