#!/usr/bin/env python3
"""`kubectl aicr list` across 50 clusters, beside `list` of one of them, on loopback stand-ins.

Real fleets are far away, so they are simulated: 50 stand-in API servers on loopback, each
its own TLS port and certificate authority, answering every request after 100 ms, each
serving 20 rollouts (with their assessment reports). One kubeconfig names the 50, each with
its own CA and credentials. Times, in interleaved rounds (medians):

    list --context c00                   one cluster (the reference)
    list --all-contexts --parallel 50    all 50 at once      (target: within 1.5x of one)
    list --all-contexts                  the default --parallel 16: about four rounds of 16
    the same two with exec credential plugins that take 300 ms each (target: within 1.5x of one)
    one hung cluster of 50 (accepts, never answers), --request-timeout 5s
                                         (target: returns within the deadline + 1 s, 49 listed)

It prints the requests each stand-in received for one fleet `list` (target: exactly 2 a
cluster), each command's peak RSS (target: the fleet's within 2x of one cluster's), the figures
and the ratios side by side, and whether each target is met.

Run from the repository with the virtualenv's bin/ first on PATH:
    PATH=$PWD/.venv/bin:$PATH python bench/fleet_scale.py [--clusters 50] [--runs 3]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tools"), str(ROOT / "tests")]

import testbed  # noqa: E402
from support.fake_apiserver import FakeApiServer, Silent  # noqa: E402

LATENCY = 0.1
ROLLOUTS = 20
ROLLOUTS_PATH = "/apis/operator.aicr.run/v1alpha1/runtimerollouts"
CONFIGMAPS_PATH = "/api/v1/namespaces/aicr-system/configmaps"


def documents(cluster: int) -> tuple[bytes, bytes]:
    """The rollouts and assessment ConfigMaps one stand-in serves (JSON, built once)."""
    rollouts, configmaps = [], []
    now = dt.datetime.now(dt.timezone.utc)
    for i in range(ROLLOUTS):
        report = json.dumps(dict(testbed.SAMPLE_REPORT, summary=f"cluster {cluster} report {i}"))
        digest = testbed.digest_of(report)
        to = testbed.random_digest()
        rollouts.append({
            "apiVersion": "operator.aicr.run/v1alpha1", "kind": "RuntimeRollout",
            "metadata": {"name": f"rollout-{to[7:23]}-1", "resourceVersion": str(100 + i),
                         "creationTimestamp": testbed.rfc3339(now - dt.timedelta(minutes=i))},
            "spec": {"runtime": {"name": "cluster", "uid": "6c1f0e9a-7d2b-4c1e-9a51-3f9a1c0d2b7e"},
                     "from": {"digest": testbed.random_digest()}, "to": {"digest": to},
                     "deadline": testbed.rfc3339(now + dt.timedelta(hours=8)), "approvalRequired": True,
                     "startingInventory": {"releases": 42, "digest": testbed.random_digest()},
                     "assessment": {"digest": digest}, "steps": testbed.SAMPLE_STEPS,
                     "records": testbed.SAMPLE_RECORDS},
            "status": {"phase": "AwaitingApproval", "message": "rollout awaiting approval"}})
        configmaps.append({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": f"aicr-assessment-{digest[7:23]}", "namespace": "aicr-system",
                                        "labels": {"operator.aicr.run/role": "assessment"}},
                           "data": {"report.json": report}})
    listing = {"metadata": {"resourceVersion": "1000"}}
    return (json.dumps({"kind": "RuntimeRolloutList", **listing, "items": rollouts}).encode(),
            json.dumps({"kind": "ConfigMapList", **listing, "items": configmaps}).encode())


class StandIn(FakeApiServer):
    """A stand-in API server: the two lists `list` asks for, after LATENCY; or, hung, nothing at all."""

    def __init__(self, workdir: Path, cluster: int, hung: bool = False) -> None:
        super().__init__(workdir, [Silent()])
        self.hung = hung
        self.rollouts, self.configmaps = documents(cluster)

    def _serve(self, raw: Any) -> None:
        try:
            conn = self.context.wrap_socket(raw, server_side=True)
            self._open.append(conn)
            reader = conn.makefile("rb")
            while not self._stop.is_set():
                request = self._read_request(reader)
                if request is None:
                    return
                self.requests.append(request)
                if self.hung:
                    self._stop.wait()
                    return
                path = request.path.split("?")[0]
                body = {ROLLOUTS_PATH: self.rollouts, CONFIGMAPS_PATH: self.configmaps}.get(path, b"{}")
                if self._stop.wait(LATENCY):
                    return
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        except (OSError, ssl.SSLError, ValueError):
            return


def kubeconfig(path: Path, servers: Sequence[StandIn], plugin: Path | None) -> Path:
    clusters, users, contexts = [], [], []
    for i, server in enumerate(servers):
        name = f"c{i:02d}"
        clusters.append({"name": name, "cluster": {"server": server.url,
                                                   "certificate-authority-data": testbed.b64(server.ca_pem)}})
        user: dict[str, Any] = {"token": f"token-{i}"}
        if plugin is not None:
            user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin),
                             "interactiveMode": "Never"}}
        users.append({"name": name, "user": user})
        contexts.append({"name": name, "context": {"cluster": name, "user": name}})
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users,
                                "contexts": contexts, "current-context": "c00"}))
    path.chmod(0o600)
    return path


CPU: dict[str, list[float]] = {}  # CPU seconds (user + system) of each command, by its words


def run(args: list[str], env: dict[str, str], allow_failure: bool = False) -> tuple[float, int, str]:
    """Wall time, peak RSS (KiB) and stdout of one command (kubectl execs the plugin: its process)."""
    out = Path(env["BENCH_OUT"])
    started = time.perf_counter()
    with open(out, "w") as stdout:
        proc = subprocess.Popen(args, env=env, stdout=stdout, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    CPU.setdefault(" ".join([env["KUBECONFIG"], *args]), []).append(usage.ru_utime + usage.ru_stime)
    if code != 0 and not allow_failure:
        stderr = proc.stderr.read().decode()[-800:] if proc.stderr else ""
        raise SystemExit(f"{' '.join(args)} failed ({code}): {stderr}")
    return elapsed, usage.ru_maxrss, out.read_text()


def rounds(runs: int, commands: dict[str, list[str]], env: dict[str, str]) -> dict[str, tuple[float, int]]:
    """Median seconds (as users run it: `kubectl aicr ...`) and the plugin's peak RSS of each command.

    The RSS is measured on `kubectl-aicr ...` run directly: through kubectl, the process's peak is
    kubectl's own (about 64 MiB) whenever that is higher than the plugin's it execs.
    """
    for args in commands.values():
        run(args, env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    peak: dict[str, int] = dict.fromkeys(commands, 0)
    for _ in range(runs):
        for name, args in commands.items():
            seconds, _, _ = run(args, env)
            times[name].append(seconds)
            _, rss, _ = run(["kubectl-aicr", *args[2:]], env)
            peak[name] = max(peak[name], rss)
    return {name: (statistics.median(times[name]), peak[name]) for name in commands}


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    if shutil.which("kubectl") is None or shutil.which("kubectl-aicr") is None:
        raise SystemExit("kubectl and kubectl-aicr must be on PATH: run with PATH=$PWD/.venv/bin:$PATH")
    n = options.clusters
    print(f"kubectl aicr across {n} clusters, {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M}Z, "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}; stand-ins answer after {LATENCY * 1000:.0f} ms, "
          f"{ROLLOUTS} rollouts each")
    work = Path(tempfile.mkdtemp(prefix="aicr-bench-fleet-"))
    servers: list[StandIn] = []
    try:
        for i in range(n):
            (work / f"s{i}").mkdir()
            servers.append(StandIn(work / f"s{i}", i).start())
        hung_dir = work / "hung"
        hung_dir.mkdir()
        hung = StandIn(hung_dir, n, hung=True).start()
        plugin = work / "exec-credential.sh"
        plugin.write_text('#!/bin/sh\nsleep 0.3\necho \'{"apiVersion": "client.authentication.k8s.io/v1", '
                          '"kind": "ExecCredential", "status": {"token": "exec-token"}}\'\n')
        plugin.chmod(0o755)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "AICR_"))}
        env = {**base, "KUBECONFIG": str(kubeconfig(work / "kc", servers, None)), "BENCH_OUT": str(work / "out")}
        exec_env = {**env, "KUBECONFIG": str(kubeconfig(work / "kc-exec", servers, plugin))}
        hung_env = {**env, "KUBECONFIG": str(kubeconfig(work / "kc-hung", [*servers[:-1], hung], None))}

        one = ["kubectl", "aicr", "list", "--context", "c00"]
        fleet50 = ["kubectl", "aicr", "list", "--all-contexts", "--parallel", str(n)]
        fleet16 = ["kubectl", "aicr", "list", "--all-contexts"]
        plain = rounds(options.runs, {"one": one, "fleet50": fleet50, "fleet16": fleet16}, env)
        with_exec = rounds(options.runs, {"one": one, "fleet50": fleet50}, exec_env)

        for server in servers:
            server.requests.clear()
        _, _, listed = run(fleet50, env)
        per_cluster = sorted({len(s.requests) for s in servers})
        rows = [line for line in listed.splitlines()[1:] if line.strip()]

        deadline = 5.0
        hung_seconds, _, hung_out = run([*fleet50, "--request-timeout", f"{deadline:g}s", "-o", "json"], hung_env,
                                        allow_failure=True)
        document = json.loads(hung_out)
        answered = {i["context"] for i in document["items"]}
        errors = [(e["context"], e["code"]) for e in document["errors"]]

        t1, rss1 = plain["one"]
        t50, rss50 = plain["fleet50"]
        t16, rss16 = plain["fleet16"]
        e1, _ = with_exec["one"]
        e50, erss50 = with_exec["fleet50"]
        def cpu(args: list[str], kubeconfig: str = env["KUBECONFIG"]) -> float:
            return statistics.median(CPU[" ".join([kubeconfig, "kubectl-aicr", *args[2:]])])

        print(f"\n  {'command':<56} {'median':>8} {'vs one':>7} {'CPU':>7} {'peak RSS':>9} {'vs one':>7}")
        exec_kc = exec_env["KUBECONFIG"]
        for label, cpu_s, seconds, rss, ref_t, ref_rss in [
                ("list --context c00 (one cluster)", cpu(one), t1, rss1, t1, rss1),
                (f"list --all-contexts --parallel {n}", cpu(fleet50), t50, rss50, t1, rss1),
                ("list --all-contexts (default --parallel 16)", cpu(fleet16), t16, rss16, t1, rss1),
                ("exec plugins 300 ms: list --context c00", cpu(one, exec_kc), e1, with_exec["one"][1], e1,
                 with_exec["one"][1]),
                (f"exec plugins 300 ms: list --all-contexts --parallel {n}", cpu(fleet50, exec_kc), e50, erss50, e1,
                 with_exec["one"][1])]:
            print(f"  {label:<56} {seconds * 1000:>6.0f}ms {seconds / ref_t:>6.2f}x {cpu_s * 1000:>5.0f}ms "
                  f"{rss / 1024:>6.0f} MiB {rss / ref_rss:>6.2f}x")
        print(f"  (CPU: user + system of the plugin's process, median; the machine's load average when done: "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
        rounds16 = -(-n // 16)
        print(f"\n  The default --parallel 16 works {n} clusters in {rounds16} rounds of at most 16: "
              f"{t16 * 1000:.0f} ms, {(t16 - t50) * 1000 / max(rounds16 - 1, 1):.0f} ms a round more than all at once.")
        print(f"  Requests a stand-in received for one fleet list: {per_cluster} (rows listed: {len(rows)}, "
              f"expected {n * ROLLOUTS})")
        print(f"  One hung cluster of {n}, --request-timeout {deadline:g}s: returned after {hung_seconds:.2f} s "
              f"(deadline + {hung_seconds - deadline:.2f} s, start-up included), {len(answered)} clusters listed, "
              f"errors {errors}")
        print("\nTargets:")
        print(f"  fleet list within 1.5x of one cluster's: {t50 / t1:.2f}x, {verdict(t50 / t1 <= 1.5)}")
        print(f"  exactly 2 requests a cluster: {per_cluster}, {verdict(per_cluster == [2])}")
        print(f"  peak RSS within 2x of one cluster's list: {rss50 / rss1:.2f}x, {verdict(rss50 / rss1 <= 2)}")
        print(f"  exec plugins of 300 ms, all {n} at --parallel {n}, within 1.5x of one: {e50 / e1:.2f}x, "
              f"{verdict(e50 / e1 <= 1.5)}")
        print(f"  a hung cluster: within the deadline + 1 s and {n - 1} listed: {hung_seconds:.2f} s, "
              f"{len(answered)} listed, {verdict(hung_seconds <= deadline + 1 and len(answered) == n - 1)}")
    finally:
        for server in servers:
            server.stop()
        if "hung" in locals():
            hung.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
