#!/usr/bin/env python3
"""`kubectl aicr list` across 50 and 500 clusters, beside one cluster and beside kubectl, on stand-ins.

Real fleets are far away, so they are simulated: stand-in API servers on loopback
(bench/fleet_standins.py: all on one event loop, each its own TLS port and certificate
authority, answering every request after 100 ms). One kubeconfig names them, each context with
its own CA and credentials. Times are medians of interleaved rounds; CPU is the plugin
process's user + system time (its exec plugins included); peak RSS is measured on
`kubectl-aicr` run directly (through kubectl, a process's peak is kubectl's own when higher).

    50 clusters, 20 rollouts (with their reports) each:
      list --context c00                   one cluster (the reference)
      list --all-contexts --parallel 50    all at once                 (target: within 1.5x of one)
      list --all-contexts                  the default --parallel 16
      the same two with exec plugins that take 300 ms                 (target: within 1.5x of one)
      one hung cluster of 50, --request-timeout 5s                    (target: the deadline + 1 s, 49 listed)
    500 clusters, 2 rollouts each (a real cluster holds few):
      list --context c000 / the first 50 / all 500 at --parallel 64
          CPU per extra cluster, (CPU of the fleet - CPU of one) / (N - 1): at most 4 ms at 50 and
          at 500, the 500 figure within 1.5x of the 50 one; the 500 within 6x of one, peak RSS
          within 2x of one
      the 500 through --cluster-profiles (500 ClusterProfiles on one hub stand-in) beside the
          500 through contexts whose users run the same exec plugin (target: within 1.2x)
      what a user does today: `kubectl get --raw .../runtimerollouts --context CTX`, one process
          per cluster, 16 at a time (xargs -P 16), for the 50 and the 500 (target: ours faster)

The machine's load average is printed with the figures: on a shared machine they are noisy.

Run from the repository with the virtualenv's bin/ first on PATH:
    PATH=$PWD/.venv/bin:$PATH python bench/fleet_scale.py [--clusters 50] [--large 500] [--runs 3]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleet_standins as standins  # noqa: E402

LATENCY = 0.1
ROLLOUTS = 20
FEW_ROLLOUTS = 2
LARGE_PARALLEL = 64
KUBECTL_PARALLEL = 16
PROVIDER = "bench-exec"
GNU_TIME = "/usr/bin/time"
EXEC = ('#!/bin/sh\n{wait}echo \'{{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", '
        '"status": {{"token": "exec-token"}}}}\'\n')


class Runner:
    """Runs commands, keeping each one's wall time, CPU and peak RSS by a label."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.wall: dict[str, list[float]] = {}
        self.cpu: dict[str, list[float]] = {}
        self.rss: dict[str, int] = {}

    def run(self, args: list[str], env: dict[str, str], allow_failure: bool = False
            ) -> tuple[float, float, int, str]:
        """Wall seconds, CPU seconds, peak RSS (KiB) and stdout of one command.

        The peak RSS is GNU time's (%M) of its child: a process started from this one would count
        this process's own memory (the stand-ins' answers) in its peak, since Linux keeps the
        high-water mark of the memory a process had before exec.
        """
        rss_file = self.out.with_suffix(".rss")
        started = time.perf_counter()
        with open(self.out, "w") as stdout:
            proc = subprocess.Popen([GNU_TIME, "-f", "%M", "-o", str(rss_file), *args], env=env, stdout=stdout,
                                    stderr=subprocess.PIPE)
            _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        stderr = proc.stderr.read().decode() if proc.stderr else ""
        if code != 0 and not allow_failure:
            raise SystemExit(f"{' '.join(args)} failed ({code}): {stderr[-800:]}")
        rss = int(rss_file.read_text().split()[-1])
        return elapsed, usage.ru_utime + usage.ru_stime, rss, self.out.read_text()

    def rounds(self, runs: int, commands: dict[str, tuple[list[str], dict[str, str]]]) -> None:
        """Each command once to warm up, then `runs` interleaved rounds: timed as users run it
        (`kubectl aicr ...`), and run as `kubectl-aicr ...` for its CPU and peak RSS."""
        for args, env in commands.values():
            self.run(args, env)
        for _ in range(runs):
            for label, (args, env) in commands.items():
                seconds, _, _, _ = self.run(args, env)
                self.wall.setdefault(label, []).append(seconds)
                _, cpu, rss, _ = self.run(["kubectl-aicr", *args[2:]], env)
                self.cpu.setdefault(label, []).append(cpu)
                self.rss[label] = max(self.rss.get(label, 0), rss)

    def median(self, label: str) -> float:
        return statistics.median(self.wall[label])

    def median_cpu(self, label: str) -> float:
        return statistics.median(self.cpu[label])


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (5 min: {five:.1f}) on {os.cpu_count()} CPUs"


def write_plugin(path: Path, wait: float) -> Path:
    path.write_text(EXEC.format(wait=f"sleep {wait:g}\n" if wait else ""))
    path.chmod(0o755)
    return path


def hub_files(work: Path, hub: standins.StandIn, plugin: Path) -> tuple[Path, Path]:
    """The hub's kubeconfig (one context, a token) and the provider file naming the plugin."""
    kubeconfig = standins.kubeconfig(work / "kc-hub", [hub], None)
    providers = work / "providers.json"
    providers.write_text(json.dumps({"providers": [{"name": PROVIDER, "execConfig": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin), "interactiveMode": "Never",
        "provideClusterInfo": False}}]}))
    return kubeconfig, providers


def profiles_supported(env: dict[str, str]) -> bool:
    helped = subprocess.run(["kubectl-aicr", "list", "--help"], env=env, capture_output=True, text=True)
    return "--cluster-profiles" in helped.stdout


def kubectl_reads(contexts: list[str], env: dict[str, str], out: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one `kubectl get --raw` per context, KUBECTL_PARALLEL at a time (xargs -P)."""
    listed = out.with_suffix(".contexts")
    listed.write_text("\n".join(contexts) + "\n")
    started = time.perf_counter()
    with open(listed) as names, open(out, "w") as stdout:
        proc = subprocess.Popen(["xargs", "-P", str(KUBECTL_PARALLEL), "-I", "{}", "kubectl", "get", "--raw",
                                 standins.ROLLOUTS_PATH, "--context", "{}"], env=env, stdin=names, stdout=stdout,
                                stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"kubectl get --raw failed: {(proc.stderr.read() if proc.stderr else b'').decode()[-800:]}")
    return elapsed, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--large", type=int, default=500, help="the large fleet's size (2 rollouts each)")
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    if shutil.which("kubectl") is None or shutil.which("kubectl-aicr") is None:
        raise SystemExit("kubectl and kubectl-aicr must be on PATH: run with PATH=$PWD/.venv/bin:$PATH")
    if not os.access(GNU_TIME, os.X_OK):
        raise SystemExit(f"{GNU_TIME} (GNU time, for each command's peak RSS) is needed: apt-get install time")
    n, large, began = options.clusters, options.large, time.monotonic()
    print(f"kubectl aicr across {n} and {large} clusters, {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M}Z, "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}; stand-ins answer after "
          f"{LATENCY * 1000:.0f} ms; {load()} at the start")
    work = Path(tempfile.mkdtemp(prefix="aicr-bench-fleet-"))
    loop = standins.StandIns(LATENCY)
    runner = Runner(work / "out")
    try:
        members = standins.fleet(loop, n, ROLLOUTS)
        hung = loop.add({}, hung=True)
        few = standins.fleet(loop, large, FEW_ROLLOUTS)
        slow_plugin = write_plugin(work / "exec-300ms.sh", 0.3)
        plugin = write_plugin(work / "exec.sh", 0)
        hub = loop.add({standins.PROFILES_PATH: standins.profiles(few, PROVIDER)})
        print(f"  ({len(loop.servers)} stand-ins up after {time.monotonic() - began:.0f} s)")

        base = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "AICR_"))}

        def env_of(path: Path) -> dict[str, str]:
            return {**base, "KUBECONFIG": str(path)}

        env = env_of(standins.kubeconfig(work / "kc", members, None))
        exec_env = env_of(standins.kubeconfig(work / "kc-exec", members, slow_plugin))
        hung_env = env_of(standins.kubeconfig(work / "kc-hung", [*members[:-1], hung], None))
        few_env = env_of(standins.kubeconfig(work / "kc-few", few, None))
        few_small_env = env_of(standins.kubeconfig(work / "kc-few-small", few[:n], None))
        few_exec_env = env_of(standins.kubeconfig(work / "kc-few-exec", few, plugin))
        hub_kubeconfig, providers = hub_files(work, hub, plugin)
        hub_env = env_of(hub_kubeconfig)
        first = standins.context_name(0, large)

        one = ["kubectl", "aicr", "list", "--context", "c00"]
        fleet_all = ["kubectl", "aicr", "list", "--all-contexts", "--parallel", str(n)]
        fleet16 = ["kubectl", "aicr", "list", "--all-contexts"]
        one_few = ["kubectl", "aicr", "list", "--context", first]
        large_fleet = ["kubectl", "aicr", "list", "--all-contexts", "--parallel", str(LARGE_PARALLEL)]
        from_profiles = ["kubectl", "aicr", "list", "--cluster-profiles", "--cluster-profile-providers",
                         str(providers), "--parallel", str(LARGE_PARALLEL)]

        runner.rounds(options.runs, {"one": (one, env), "fleet": (fleet_all, env), "fleet16": (fleet16, env),
                                     "exec one": (one, exec_env), "exec fleet": (fleet_all, exec_env)})
        print(f"  (the {n} clusters measured after {time.monotonic() - began:.0f} s; {load()})")
        runner.rounds(options.runs, {"few one small": (one, few_small_env), "few fleet": (fleet_all, few_small_env),
                                     "few one": (one_few, few_env), "few large": (large_fleet, few_env)})
        print(f"  (the {large} clusters measured after {time.monotonic() - began:.0f} s; {load()})")
        with_profiles = profiles_supported(hub_env)
        if with_profiles:
            runner.rounds(options.runs, {"exec large": (large_fleet, few_exec_env),
                                         "profiles large": (from_profiles, hub_env)})
            print(f"  (--cluster-profiles measured after {time.monotonic() - began:.0f} s; {load()})")

        loop.clear()
        _, _, _, listed = runner.run(fleet_all, env)
        per_cluster = sorted({len(s.requests) for s in members})
        connections = sorted({s.connections for s in members})
        rows = [line for line in listed.splitlines()[1:] if line.strip()]
        leaked = [s.index for s in members if any(r.authorization != f"Bearer token-{s.index}" for r in s.requests)]

        deadline = 5.0
        hung_seconds, _, _, hung_out = runner.run([*fleet_all, "--request-timeout", f"{deadline:g}s", "-o", "json"],
                                                  hung_env, allow_failure=True)
        document = json.loads(hung_out)
        answered = {i["context"] for i in document["items"]}
        errors = [(e["context"], e["code"]) for e in document["errors"]]

        kubectl_small = kubectl_reads([standins.context_name(i, n) for i in range(n)], few_small_env, work / "k1")
        kubectl_large = kubectl_reads([standins.context_name(i, large) for i in range(large)], few_env, work / "k2")
        print(f"  (kubectl measured after {time.monotonic() - began:.0f} s; {load()})")

        report(runner, n, large, per_cluster, connections, rows, leaked, deadline, hung_seconds, answered, errors,
               kubectl_small, kubectl_large, with_profiles)
        print(f"\n(finished in {time.monotonic() - began:.0f} s; {load()})")
    finally:
        loop.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def report(r: Runner, n: int, large: int, per_cluster: list[int], connections: list[int], rows: list[str],
           leaked: list[int], deadline: float, hung_seconds: float, answered: set[str],
           errors: list[tuple[str, str]], kubectl_small: tuple[float, float], kubectl_large: tuple[float, float],
           with_profiles: bool) -> None:
    def row(label: str, key: str, reference: str) -> None:
        seconds, ref = r.median(key), r.median(reference)
        print(f"  {label:<62} {seconds * 1000:>7.0f}ms {seconds / ref:>6.2f}x {r.median_cpu(key) * 1000:>6.0f}ms "
              f"{r.rss[key] / 1024:>5.0f} MiB {r.rss[key] / r.rss[reference]:>5.2f}x")

    def per_extra(fleet: str, one: str, size: int) -> float:
        return (r.median_cpu(fleet) - r.median_cpu(one)) / (size - 1)

    print(f"\n  {'command':<62} {'median':>9} {'vs one':>7} {'CPU':>8} {'peak RSS':>9} {'vs one':>6}")
    print(f"  -- {n} clusters, {ROLLOUTS} rollouts each")
    row("list --context c00 (one cluster)", "one", "one")
    row(f"list --all-contexts --parallel {n}", "fleet", "one")
    row("list --all-contexts (default --parallel 16)", "fleet16", "one")
    row("exec plugins of 300 ms: list --context c00", "exec one", "exec one")
    row(f"exec plugins of 300 ms: list --all-contexts --parallel {n}", "exec fleet", "exec one")
    print(f"  -- {large} clusters, {FEW_ROLLOUTS} rollouts each")
    row(f"list --context c00 (one cluster, a kubeconfig of {n})", "few one small", "few one small")
    row(f"list --all-contexts --parallel {n} (the first {n})", "few fleet", "few one small")
    row(f"list --context {standins.context_name(0, large)} (one cluster, a kubeconfig of {large})", "few one",
        "few one")
    row(f"list --all-contexts --parallel {LARGE_PARALLEL} (all {large})", "few large", "few one")
    if with_profiles:
        row(f"exec plugin users: list --all-contexts --parallel {LARGE_PARALLEL}", "exec large", "few one")
        row(f"list --cluster-profiles (hub + {large}) --parallel {LARGE_PARALLEL}", "profiles large", "few one")
    for label, (seconds, cpu) in ((f"kubectl get --raw x {n}, xargs -P {KUBECTL_PARALLEL}", kubectl_small),
                                  (f"kubectl get --raw x {large}, xargs -P {KUBECTL_PARALLEL}", kubectl_large)):
        print(f"  {label:<62} {seconds * 1000:>7.0f}ms {'':>7} {cpu * 1000:>6.0f}ms")
    print(f"  (CPU: user + system of the plugin's process, exec plugins included, median; {load()})")
    small_cpu, large_cpu = per_extra("few fleet", "few one small", n), per_extra("few large", "few one", large)
    print(f"\n  CPU per extra cluster ({FEW_ROLLOUTS} rollouts): {small_cpu * 1000:.2f} ms at {n}, "
          f"{large_cpu * 1000:.2f} ms at {large}; with {ROLLOUTS} rollouts at {n}: "
          f"{per_extra('fleet', 'one', n) * 1000:.2f} ms")
    print(f"  Requests a stand-in received for one fleet list: {per_cluster}, on connections: {connections} "
          f"(rows listed: {len(rows)}, expected {n * ROLLOUTS}); stand-ins that saw a token not theirs: {leaked}")
    print(f"  One hung cluster of {n}, --request-timeout {deadline:g}s: returned after {hung_seconds:.2f} s "
          f"(deadline + {hung_seconds - deadline:.2f} s, start-up included), {len(answered)} clusters listed, "
          f"errors {errors}")

    t1, t50 = r.median("one"), r.median("fleet")
    e1, e50 = r.median("exec one"), r.median("exec fleet")
    f1, f50, f500 = r.median("few one"), r.median("few fleet"), r.median("few large")
    print("\nTargets:")
    print(f"  list --all-contexts --parallel {n} within 1.5x of one cluster: {t50 / t1:.2f}x, "
          f"{verdict(t50 / t1 <= 1.5)}")
    print(f"  exactly 2 requests a cluster: {per_cluster}, {verdict(per_cluster == [2])}")
    print(f"  peak RSS of the {n} within 2x of one cluster's: {r.rss['fleet'] / r.rss['one']:.2f}x, "
          f"{verdict(r.rss['fleet'] / r.rss['one'] <= 2)}")
    print(f"  exec plugins of 300 ms, all {n} at --parallel {n}, within 1.5x of one: {e50 / e1:.2f}x, "
          f"{verdict(e50 / e1 <= 1.5)}")
    print(f"  a hung cluster: within the deadline + 1 s and {n - 1} listed: {hung_seconds:.2f} s, "
          f"{len(answered)} listed, {verdict(hung_seconds <= deadline + 1 and len(answered) == n - 1)}")
    print(f"  CPU per extra cluster at most 4 ms at {n}: {small_cpu * 1000:.2f} ms, {verdict(small_cpu <= 0.004)}")
    print(f"  CPU per extra cluster at most 4 ms at {large}: {large_cpu * 1000:.2f} ms, {verdict(large_cpu <= 0.004)}")
    growth = large_cpu / small_cpu if small_cpu > 0 else float("inf")
    print(f"  CPU per extra cluster at {large} within 1.5x of the figure at {n}: {growth:.2f}x, "
          f"{verdict(growth <= 1.5)}")
    print(f"  {large} clusters ({FEW_ROLLOUTS} rollouts each) at --parallel {LARGE_PARALLEL} within 6x of one: "
          f"{f500 / f1:.2f}x, {verdict(f500 / f1 <= 6)}")
    print(f"  peak RSS of the {large} within 2x of one cluster's: {r.rss['few large'] / r.rss['few one']:.2f}x, "
          f"{verdict(r.rss['few large'] / r.rss['few one'] <= 2)}")
    if with_profiles:
        p500, x500 = r.median("profiles large"), r.median("exec large")
        print(f"  --cluster-profiles ({large}) within 1.2x of the same through exec-plugin contexts: "
              f"{p500 / x500:.2f}x, {verdict(p500 / x500 <= 1.2)}")
    else:
        print(f"  --cluster-profiles ({large}) within 1.2x of the same through exec-plugin contexts: "
              "not measured (this kubectl-aicr has no --cluster-profiles), NOT met")
    print(f"  faster than kubectl get --raw per context at {n}: {f50:.2f} s against {kubectl_small[0]:.2f} s, "
          f"{verdict(f50 < kubectl_small[0])}")
    print(f"  faster than kubectl get --raw per context at {large}: {f500:.2f} s against {kubectl_large[0]:.2f} s, "
          f"{verdict(f500 < kubectl_large[0])}")


if __name__ == "__main__":
    sys.exit(main())
