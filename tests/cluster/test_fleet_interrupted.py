"""A fleet write interrupted (Ctrl-C, SIGTERM), and a wave that proves nothing: three real control planes, the
real `kubectl aicr` run in the background and signalled as a terminal, `timeout` or a CI runner would.

A slow cluster is either a context whose credentials plugin sleeps (its turn is slow before anything is
sent) or one whose API server holds the plan's writes in an admission webhook (support/slow_writes.py:
a write sent and not yet answered). What each summary says is read back and checked against the clusters.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import envtest
import pytest
from testfixtures import compare

from support.fleet_planes import CONTEXTS, DOWN, Fleet, Operator, results, rollout_spec, set_ready, waves_file
from support.harness import Aicr, aicr_env
from support.slow_writes import SlowWrites

SLOW = "gpu-eu-1"
WAVES = [{"name": "canary", "contexts": ["gpu-lab-1"]}, {"name": "eu", "contexts": ["gpu-eu-*"]}]
SLEEPING_PLUGIN = """\
import json, os, pathlib, sys, time
pathlib.Path(sys.argv[1]).write_text(str(os.getpid()))
time.sleep(60)
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {
    "clientCertificateData": pathlib.Path(sys.argv[2]).read_text(),
    "clientKeyData": pathlib.Path(sys.argv[3]).read_text()}}))
"""


class Running:
    """`kubectl aicr ARGS` in the background; stdout and stderr read as they come, signals sent as a user would."""

    def __init__(self, aicr: Aicr, kubeconfig: Path, *args: str) -> None:
        self.proc = subprocess.Popen([aicr.kubectl, "aicr", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True, env=aicr_env(aicr.home, kubeconfig),
                                     cwd=aicr.cwd)
        self.out: list[str] = []
        self.err: list[str] = []
        self.signalled: float | None = None
        self._readers = [threading.Thread(target=self._read, args=(stream, lines), daemon=True)
                         for stream, lines in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: Any, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *_: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    @property
    def stderr(self) -> str:
        return "".join(self.err)

    def wait_for(self, text: str, timeout: float = 60) -> bool:
        """Until a line of stderr holds `text`."""
        ends = time.monotonic() + timeout
        while time.monotonic() < ends and self.proc.poll() is None:
            if any(text in line for line in list(self.err)):
                return True
            time.sleep(0.05)
        return any(text in line for line in list(self.err))

    def signal(self, signum: int) -> None:
        self.signalled = time.monotonic()  # the last signal's time
        self.proc.send_signal(signum)  # kubectl execs the plugin: this is its process

    def finish(self, timeout: float = 30) -> tuple[int, str, float]:
        """Its exit code, its stdout, and the seconds from the last signal to its exit."""
        code = self.proc.wait(timeout=timeout)
        took = time.monotonic() - (self.signalled or time.monotonic())
        for reader in self._readers:
            reader.join(5)
        return code, "".join(self.out), took


def rows(stdout: str) -> dict[str, list[str]]:
    """The text summary, one line a cluster: its context's columns (rollout, result, message...)."""
    return {line.split()[0]: line.split()[1:] for line in stdout.splitlines() if line.strip()}


def sleeping_plugin_kubeconfig(fleet: Fleet, tmp_path: Path, context: str) -> tuple[Path, Path]:
    """The fleet's kubeconfig, with `context` reached through a credentials plugin that sleeps a minute
    (it writes its pid first); the other contexts as they were. (kubeconfig, pid file)."""
    config = json.loads(fleet.kubeconfig.read_text())
    alice = fleet.member(context).plane.users["alice"]
    (tmp_path / "cert.pem").write_bytes(alice.cert_pem)
    (tmp_path / "key.pem").write_bytes(alice.key_pem)
    (tmp_path / "plugin.py").write_text(SLEEPING_PLUGIN)
    pid_file = tmp_path / "plugin.pid"
    config["users"].append({"name": "sleepy", "user": {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "interactiveMode": "Never",
        "args": [str(tmp_path / "plugin.py"), str(pid_file), str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")]}}})
    for entry in config["contexts"]:
        if entry["name"] == context:
            entry["context"]["user"] = "sleepy"
    path = tmp_path / "kubeconfig-sleepy"
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path, pid_file


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def approver(fleet: Fleet, context: str, name: str) -> str | None:
    approval = rollout_spec(fleet.member(context), name).get("approval")
    return approval["user"] if approval else None


# -- approve --plan, interrupted -----------------------------------------------------------------------------

@pytest.mark.parametrize(("signum", "output"), [(signal.SIGTERM, "text"), (signal.SIGINT, "json")])
def test_a_signal_while_a_clusters_plugin_sleeps_prints_every_cluster_and_writes_nothing(
        aicr: Aicr, fleet: Fleet, tmp_path: Path, signum: int, output: str) -> None:
    digest, names = fleet.seed_plan()
    kubeconfig, pid_file = sleeping_plugin_kubeconfig(fleet, tmp_path, SLOW)
    with Running(aicr, kubeconfig, "approve", "--all-contexts", "--plan", digest, "--reason", "CHG-20 driver",
                 "--yes", "-o", output) as run:
        ends = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < ends:
            time.sleep(0.05)
        assert pid_file.exists(), run.stderr
        time.sleep(1)  # the other clusters (no plugin) have read their rollouts meanwhile
        run.signal(signum)
        code, stdout, took = run.finish()
    compare(code, expected=128 + signum, suffix=run.stderr)
    assert took < 5, took  # the sleeping plugin's turn was left at once: it had sent no write
    if output == "json":
        document = json.loads(stdout)
        found = {i["context"]: (i["result"], i["code"]) for i in document["items"]}
        assert found.pop(DOWN) in (("failed", "UNAVAILABLE"), ("interrupted", None)), document
        compare(found, expected={c: ("interrupted", None) for c in CONTEXTS})
    else:
        table = rows(stdout)
        assert table.pop(DOWN)[1] in ("failed", "interrupted"), stdout
        compare({c: r[1] for c, r in table.items()}, expected={c: "interrupted" for c in CONTEXTS})
    assert "interrupted" in run.stderr, run.stderr
    assert not alive(int(pid_file.read_text())), "the credentials plugin outlived the command"
    for context in CONTEXTS:
        compare(approver(fleet, context, names[context]), expected=None)


@pytest.mark.parametrize("verb", ["revoke", "acknowledge"])
def test_revoke_and_acknowledge_across_clusters_are_interrupted_alike(aicr: Aicr, fleet: Fleet, tmp_path: Path,
                                                                      verb: str) -> None:
    approved = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "CHG-26"}
    digest, names = fleet.seed_plan(phase="AwaitingAcknowledgement", approval=approved,
                                    awaiting_release="nvsentinel", message="waiting for acknowledgement")
    kubeconfig, pid_file = sleeping_plugin_kubeconfig(fleet, tmp_path, SLOW)
    reason = ("--reason", "CHG-26 stop") if verb == "revoke" else ()
    with Running(aicr, kubeconfig, verb, "--all-contexts", "--plan", digest, *reason, "--yes", "-o", "json") as run:
        ends = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < ends:
            time.sleep(0.05)
        time.sleep(1)
        run.signal(signal.SIGTERM)
        code, stdout, took = run.finish()
    compare(code, expected=143, suffix=run.stderr)
    assert took < 5, took
    found = results(json.loads(stdout))
    assert found.pop(DOWN) in ("failed", "interrupted"), stdout
    compare(found, expected={c: "interrupted" for c in CONTEXTS})
    for m in fleet.members:
        spec = rollout_spec(m, names[m.context])
        compare((spec.get("revocation"), spec.get("acknowledgements")), expected=(None, None))


@pytest.mark.parametrize(("signum", "output"), [(signal.SIGINT, "json"), (signal.SIGTERM, "text")])
def test_a_write_already_sent_finishes_and_no_new_one_is_sent(aicr: Aicr, fleet: Fleet, tmp_path: Path,
                                                              signum: int, output: str) -> None:
    digest, names = fleet.seed_plan()
    args = ("approve", "--all-contexts", "--parallel", "1", "--plan", digest, "--reason", "CHG-21 driver", "--yes",
            "-o", output)
    with SlowWrites(fleet.member(SLOW).plane, digest, tmp_path / "hook") as hook, \
            Running(aicr, fleet.kubeconfig, *args) as run:
        assert hook.sent.wait(60), run.stderr  # one cluster at a time: gpu-lab-1 is written, gpu-eu-1's write is held
        compare(approver(fleet, "gpu-lab-1", names["gpu-lab-1"]), expected="alice")
        run.signal(signum)
        time.sleep(1.5)
        assert run.proc.poll() is None, run.stderr  # it waits for the write it sent
        hook.release.set()
        code, stdout, _ = run.finish()
    compare(code, expected=128 + signum, suffix=run.stderr)
    expected = {"gpu-lab-1": "approved", SLOW: "approved", "gpu-eu-2": "interrupted", DOWN: "failed"}
    if output == "json":
        document = json.loads(stdout)
        compare(results(document), expected=expected)
        item = next(i for i in document["items"] if i["context"] == "gpu-eu-2")
        compare((item["rollout"], item["code"]), expected=(names["gpu-eu-2"], None))
        assert "not written" in item["message"], item
        compare([(e["context"], e["code"]) for e in document["errors"]], expected=[(DOWN, "UNAVAILABLE")])
    else:
        table = rows(stdout)
        compare({c: r[1] for c, r in table.items()}, expected=expected)
        compare(table["gpu-eu-2"][0], expected=names["gpu-eu-2"])
    for context, user in (("gpu-lab-1", "alice"), (SLOW, "alice"), ("gpu-eu-2", None)):
        compare(approver(fleet, context, names[context]), expected=user)


def test_a_second_signal_ends_at_once_printing_what_is_known(aicr: Aicr, fleet: Fleet, tmp_path: Path) -> None:
    digest, names = fleet.seed_plan()
    args = ("approve", "--all-contexts", "--parallel", "1", "--plan", digest, "--reason", "CHG-22 driver", "--yes",
            "-o", "json")
    with SlowWrites(fleet.member(SLOW).plane, digest, tmp_path / "hook") as hook, \
            Running(aicr, fleet.kubeconfig, *args) as run:
        assert hook.sent.wait(60), run.stderr
        run.signal(signal.SIGINT)
        time.sleep(1)
        assert run.proc.poll() is None, run.stderr
        run.signal(signal.SIGTERM)  # the second: the held write is not waited for
        code, stdout, took = run.finish(timeout=10)
        assert not hook.release.is_set()
    compare(code, expected=130, suffix=run.stderr)  # the first signal's
    assert took < 3, took
    document = json.loads(stdout)
    compare(results(document), expected={"gpu-lab-1": "approved", SLOW: "failed", "gpu-eu-2": "interrupted",
                                         DOWN: "failed"})
    held = next(i for i in document["items"] if i["context"] == SLOW)
    compare((held["rollout"], held["code"]), expected=(names[SLOW], "INTERRUPTED"))
    assert "may be stored" in held["message"], held
    compare([(e["context"], e["code"]) for e in document["errors"]],
            expected=[(SLOW, "INTERRUPTED"), (DOWN, "UNAVAILABLE")])
    assert f"error: [INTERRUPTED] context {SLOW}: " in run.stderr, run.stderr
    compare(approver(fleet, "gpu-lab-1", names["gpu-lab-1"]), expected="alice")
    compare(approver(fleet, "gpu-eu-2", names["gpu-eu-2"]), expected=None)


# -- waves, interrupted while following ----------------------------------------------------------------------------

def test_sigterm_while_waves_follow_prints_the_summary(aicr: Aicr, fleet: Fleet, tmp_path: Path) -> None:
    digest, names = fleet.seed_plan()
    for m in fleet.members:
        set_ready(m, "True")
    with Running(aicr, fleet.kubeconfig, "approve", "--plan", digest, "--waves", str(waves_file(tmp_path, WAVES)),
                 "--reason", "CHG-23", "--yes") as run:
        assert run.wait_for(f"gpu-lab-1: approved {names['gpu-lab-1']}"), run.stderr
        time.sleep(0.5)  # following the canary now
        run.signal(signal.SIGTERM)
        code, stdout, took = run.finish()
    compare(code, expected=143, suffix=run.stderr)
    assert took < 5, took
    table = rows(stdout)
    compare({c: r[:3] for c, r in table.items()}, expected={
        "gpu-lab-1": ["canary", names["gpu-lab-1"], "interrupted"], "gpu-eu-1": ["eu", "-", "not-started"],
        "gpu-eu-2": ["eu", "-", "not-started"]})
    assert "interrupted (SIGTERM)" in run.stderr, run.stderr
    compare(approver(fleet, "gpu-lab-1", names["gpu-lab-1"]), expected="alice")  # approvals written stay
    for context in ("gpu-eu-1", "gpu-eu-2"):
        compare(approver(fleet, context, names[context]), expected=None)


# -- a wave that proves nothing ---------------------------------------------------------------------------------------

def test_a_rerun_past_a_canary_with_no_rollout_stops_unless_the_wave_is_optional(aicr: Aicr, fleet: Fleet,
                                                                                  tmp_path: Path) -> None:
    digest, names = fleet.seed_plan()
    for m in fleet.members:
        set_ready(m, "True")
    canary = fleet.member("gpu-lab-1")
    path = waves_file(tmp_path, WAVES)
    args = ("approve", "--plan", digest, "--waves", str(path), "--reason", "CHG-24", "--yes", "-o", "json")
    with Running(aicr, fleet.kubeconfig, *args) as run:  # the canary's rollout is deleted while it is followed
        assert run.wait_for(f"gpu-lab-1: approved {names['gpu-lab-1']}"), run.stderr
        canary.plane.kubectl("delete", "runtimerollout", names["gpu-lab-1"])
        code, stdout, _ = run.finish(timeout=60)
    compare(code, expected=1, suffix=run.stderr)
    compare(results(json.loads(stdout)),
            expected={"gpu-lab-1": "failed", "gpu-eu-1": "not-started", "gpu-eu-2": "not-started"})

    # Run again: the canary has no rollout to the plan now, so it is skipped; a wave of nothing but skipped
    # clusters proved nothing, and the fleet stops before the next wave.
    again = aicr(*args, kubeconfig=fleet.kubeconfig, timeout=60)
    compare(again.returncode, expected=1, suffix=again.stderr)
    document = json.loads(again.stdout)
    compare(results(document), expected={"gpu-lab-1": "skipped", "gpu-eu-1": "not-started", "gpu-eu-2": "not-started"})
    for item in document["items"]:
        assert "proved nothing" in item["message"], item  # the summary says why, for every cluster
    assert "wave canary: every cluster was skipped" in again.stderr, again.stderr
    assert "wave eu: started" not in again.stderr, again.stderr
    for context in ("gpu-eu-1", "gpu-eu-2"):
        compare(approver(fleet, context, names[context]), expected=None)
    text = aicr(*args[:-2], kubeconfig=fleet.kubeconfig, timeout=60)
    compare(text.returncode, expected=1, suffix=text.stderr)
    compare({c: r[2] for c, r in rows(text.stdout).items()},
            expected={"gpu-lab-1": "skipped", "gpu-eu-1": "not-started", "gpu-eu-2": "not-started"})
    assert "proved nothing" in text.stdout, text.stdout

    # Marked optional, a canary with nothing to do lets the next wave go.
    optional = waves_file(tmp_path, [{**WAVES[0], "optional": True}, WAVES[1]])
    with Operator(fleet, names, {"gpu-eu-1": "Succeeded", "gpu-eu-2": "Succeeded"}):
        proc = aicr("approve", "--plan", digest, "--waves", str(optional), "--reason", "CHG-24", "--yes", "-o", "json",
                    kubeconfig=fleet.kubeconfig, timeout=120)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    compare(results(json.loads(proc.stdout)),
            expected={"gpu-lab-1": "skipped", "gpu-eu-1": "succeeded", "gpu-eu-2": "succeeded"})
    for context in ("gpu-eu-1", "gpu-eu-2"):
        compare(approver(fleet, context, names[context]), expected="alice")


def test_the_last_wave_all_skipped_fails_too(aicr: Aicr, fleet: Fleet, tmp_path: Path) -> None:
    digest = envtest.random_digest()  # no cluster has a rollout to it
    path = waves_file(tmp_path, [{"name": "only", "contexts": ["gpu-eu-*"]}])
    proc = aicr("approve", "--plan", digest, "--waves", str(path), "--reason", "CHG-25", "--yes", "-o", "json",
                kubeconfig=fleet.kubeconfig, timeout=60)
    compare(proc.returncode, expected=1, suffix=proc.stderr)
    compare(results(json.loads(proc.stdout)), expected={"gpu-eu-1": "skipped", "gpu-eu-2": "skipped"})
    assert "wave only: every cluster was skipped" in proc.stderr, proc.stderr


# -- a fleet read, interrupted ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("signum", "output"), [(signal.SIGTERM, "text"), (signal.SIGINT, "text"),
                                                (signal.SIGTERM, "json")])
def test_a_fleet_read_stopped_by_a_signal_says_so(aicr: Aicr, fleet: Fleet, tmp_path: Path, signum: int,
                                                   output: str) -> None:
    """SIGTERM ends a fleet read as Ctrl-C does: `error: [INTERRUPTED]` on stderr (not a silent exit), 128 + the
    signal, no traceback, and the cluster's credentials plugin is not left running."""
    kubeconfig, pid_file = sleeping_plugin_kubeconfig(fleet, tmp_path, SLOW)
    with Running(aicr, kubeconfig, "list", "--all-contexts", "--pending", "-o", output) as run:
        ends = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < ends:
            time.sleep(0.05)
        assert pid_file.exists(), run.stderr
        time.sleep(0.5)
        run.signal(signum)
        code, stdout, took = run.finish()
    compare(code, expected=128 + signum, suffix=run.stderr)
    assert took < 5, took
    interrupted = [line for line in run.err if line.startswith("error: [INTERRUPTED] interrupted")]
    compare(len(interrupted), expected=1, suffix=run.stderr)
    assert "Traceback" not in run.stderr, run.stderr
    compare(stdout, expected="")
    assert not alive(int(pid_file.read_text())), "the credentials plugin outlived the command"
