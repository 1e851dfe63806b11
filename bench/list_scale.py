#!/usr/bin/env python3
"""`kubectl aicr list` at scale, beside `kubectl get runtimerollouts` against the same server.

Starts the local control plane (tools/testbed.py), seeds N rollouts (default
5,000), each with its own assessment report, through the API as the operator
would (a report ConfigMap, the rollout, its status: three requests), printing
how seeding time grows per thousand. Then, as victor (a viewer), times in
interleaved rounds:

    kubectl get runtimerollouts        (kubectl's table, server-side printing, 500 a page)
    kubectl aicr list --all            (the same rollouts, every report verified)
    kubectl aicr list                  (not-ended ones only)

and prints medians, the ratio to kubectl (target: within 1.5x), each
command's peak resident memory (of the process: kubectl execs the plugin,
so it is the plugin's, or kubectl's if that was higher), the fixed start-up
cost for comparison, and the API requests `list` made.

Run from the repository with the virtualenv's bin/ first on PATH:
    PATH=$PWD/.venv/bin:$PATH python bench/list_scale.py [--rollouts 5000] [--runs 5]
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
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import envtest  # noqa: E402

APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "maintenance window"}
# A realistic mix: most rollouts wait or progress, some have ended.
SHAPES: list[dict[str, object]] = [
    {},
    {"phase": "Progressing", "approval": APPROVED},
    {"phase": "AwaitingAcknowledgement", "approval": APPROVED, "awaiting_release": "nvsentinel"},
    {"phase": "Validating", "approval": APPROVED},
    {"phase": "Ended", "outcome": "Succeeded", "approval": APPROVED},
]


def seed(plane: envtest.ControlPlane, count: int, threads: int) -> None:
    """Seed `count` rollouts with reports, printing the time of each thousand as it goes."""
    local = threading.local()

    def one(i: int) -> None:
        if not hasattr(local, "seeder"):
            local.seeder = envtest.Seeder(plane)
        report = dict(envtest.SAMPLE_REPORT, summary=f"report {i}: 1 manual, 1 safe")
        local.seeder.rollout(report=json.dumps(report), **SHAPES[i % len(SHAPES)])  # type: ignore[arg-type]

    print(f"\nSeeding {count} rollouts and {count} reports through the API ({threads} threads, 3 requests each):")
    print(f"  {'objects':<14} {'seconds':>8} {'rollouts/s':>11}")
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        for batch_start in range(0, count, 1000):
            batch = range(batch_start, min(batch_start + 1000, count))
            began = time.perf_counter()
            list(pool.map(one, batch))
            took = time.perf_counter() - began
            print(f"  {batch.start + 1:>5}-{batch.stop:<8} {took:>8.1f} {len(batch) / took:>11.0f}", flush=True)
    print(f"  total {time.perf_counter() - started:.0f} s")


def run(args: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall time and peak resident memory (KiB) of one command; kubectl execs the plugin in its own process."""
    started = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.read().decode()[-500:] if proc.stderr else ''}")
    return elapsed, usage.ru_maxrss


def compare(runs: int, commands: list[tuple[str, Callable[[], list[str]]]], env: dict[str, str]) -> None:
    for _, make in commands:
        run(make(), env)  # warm-up: page cache, stevedore's entry-point cache, the server's watch cache
    times: dict[str, list[float]] = {name: [] for name, _ in commands}
    memory: dict[str, int] = {name: 0 for name, _ in commands}
    for _ in range(runs):
        for name, make in commands:
            seconds, rss = run(make(), env)
            times[name].append(seconds)
            memory[name] = max(memory[name], rss)
    base = statistics.median(times[commands[0][0]])
    print(f"\n  {'command':<38} {'median':>9} {'min':>8} {'vs kubectl':>11} {'peak RSS':>10}")
    for name, _ in commands:
        median = statistics.median(times[name])
        print(f"  {name:<38} {median * 1000:>7.0f}ms {min(times[name]) * 1000:>6.0f}ms {median / base:>10.2f}x "
              f"{memory[name] / 1024:>7.0f} MiB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=4)
    options = parser.parse_args()
    for tool in ("kubectl", "kubectl-aicr"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not on PATH: run with PATH=$PWD/.venv/bin:$PATH")
    print(f"kubectl aicr list at scale, {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M}Z, "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    plane = envtest.ControlPlane(Path(tempfile.mkdtemp(prefix="aicr-bench-list-")))
    try:
        started = time.perf_counter()
        plane.start()
        print(f"control plane ready in {time.perf_counter() - started:.0f} s")
        seed(plane, options.rollouts, options.threads)
        kubeconfig = str(plane.kubeconfig_for("victor"))
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "AICR_"))},
               "KUBECONFIG": kubeconfig}
        print(f"\nAs victor (a viewer), {options.runs} interleaved rounds:")
        compare(options.runs, [
            ("kubectl get runtimerollouts", lambda: ["kubectl", "get", "runtimerollouts"]),
            ("kubectl aicr list --all", lambda: ["kubectl", "aicr", "list", "--all"]),
            ("kubectl aicr list", lambda: ["kubectl", "aicr", "list"]),
            ("kubectl aicr version --client (start-up)", lambda: ["kubectl", "aicr", "version", "--client"]),
        ], env)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import aicr_core.session.kube"], check=True)
        print(f"  importing the Kubernetes client (aicr_core.session.kube), cold process: "
              f"{(time.perf_counter() - started) * 1000:.0f}ms, of which Python's own start ~20ms")
        log = Path(plane.workdir) / "requests"
        subprocess.run(["kubectl", "aicr", "list", "--all"], env={**env, "AICR_REQUEST_LOG": str(log)},
                       stdout=subprocess.DEVNULL, check=True)
        requests = log.read_text().splitlines()
        paths = sorted({r.split("?")[0] for r in requests})
        print(f"\nAPI requests of one `kubectl aicr list --all`: {len(requests)} "
              f"(pages of 500 of {len(paths)} collections: {', '.join(paths)})")
        print("Target: kubectl aicr list within 1.5x of kubectl get runtimerollouts.")
    finally:
        plane.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
