#!/usr/bin/env python3
"""Print timings of kubectl-aicr against kubectl, as medians and ratios.

1. Start-up: `kubectl-aicr help` and `kubectl-aicr --help` beside `python -c pass`
   and `kubectl version --client` (target: help within 3x of kubectl).
2. On the local control plane (tools/testbed.py): `kubectl aicr describe` and
   `kubectl aicr approve` (each approve on a fresh rollout) beside
   `kubectl get runtimerollout NAME -o yaml` (target: describe within 2x), with
   the number of API requests each command makes.
3. `kubectl aicr approve` without a policy file beside approve with every
   built-in policy active (no target: what the policy engine costs).

Measure a regular install (`pip install .`): an editable install adds ~20 ms
of import-finder time to every start. Run from the repository with the
virtualenv's bin/ first on PATH:
    PATH=$PWD/.venv/bin:$PATH python bench/bench.py [--runs N] [--no-cluster]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))


def timed(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.decode()[-500:]}")
    return elapsed


def medians(runs: int, commands: list[tuple[str, Callable[[int], list[str]]]],
            env: dict[str, str]) -> list[tuple[str, float]]:
    """Median wall time of each command; rounds interleave the commands so drift hits all alike."""
    for _, make_args in commands:
        timed(make_args(-1), env)  # one warm-up run: page cache and stevedore's entry-point cache
    samples: dict[str, list[float]] = {name: [] for name, _ in commands}
    for i in range(runs):
        for name, make_args in commands:
            samples[name].append(timed(make_args(i), env))
    return [(name, statistics.median(samples[name])) for name, _ in commands]


def report(title: str, rows: list[tuple[str, float]], baseline: str) -> None:
    base = dict(rows)[baseline]
    print(f"\n{title}")
    print(f"  {'command':<48} {'median':>9} {'vs ' + baseline.split()[0]:>12}")
    for name, seconds in rows:
        print(f"  {name:<48} {seconds * 1000:>7.1f}ms {seconds / base:>11.2f}x")


def startup(runs: int, env: dict[str, str]) -> None:
    aicr, kubectl = shutil.which("kubectl-aicr", path=env["PATH"]), shutil.which("kubectl", path=env["PATH"])
    if not aicr or not kubectl:
        raise SystemExit("kubectl-aicr and kubectl must be on PATH (the virtualenv's bin/)")
    rows = medians(runs, [
        ("kubectl version --client", lambda _: [kubectl, "version", "--client"]),
        ("python -c pass", lambda _: [sys.executable, "-c", "pass"]),
        ("kubectl-aicr help", lambda _: [aicr, "help"]),
        ("kubectl-aicr --help", lambda _: [aicr, "--help"]),
    ], env)
    report(f"Start-up, median of {runs} runs", rows, "kubectl version --client")


def cluster(runs: int, env: dict[str, str]) -> None:
    import testbed

    plane = testbed.ControlPlane().start()
    try:
        seed = testbed.Seeder(plane)
        env = dict(env, KUBECONFIG=str(plane.kubeconfig_for("alice")))
        name = seed.rollout(report=json.dumps(testbed.SAMPLE_REPORT))
        fresh = [seed.rollout() for _ in range(runs + 1)]
        rows = medians(runs, [
            ("kubectl get runtimerollout NAME -o yaml", lambda _: ["kubectl", "get", "runtimerollout", name, "-o", "yaml"]),
            ("kubectl aicr describe NAME", lambda _: ["kubectl", "aicr", "describe", name]),
            ("kubectl aicr approve NAME (fresh rollout)",
             lambda i: ["kubectl", "aicr", "approve", fresh[i], "--reason", "bench"]),
        ], env)
        report(f"Commands on the local control plane, median of {runs} runs", rows,
               "kubectl get runtimerollout NAME -o yaml")
        print(f"  where describe spends its time (median of {runs} runs, in-process phases):")
        print("   " + breakdown(runs, plane.kubeconfig_for("alice"), name, env))
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "requests"
            for label, args in (("describe", ["describe", name]),
                                ("approve", ["approve", seed.rollout(), "--reason", "bench"])):
                log.unlink(missing_ok=True)
                subprocess.run(["kubectl", "aicr", *args], env=dict(env, AICR_REQUEST_LOG=str(log)),
                               check=True, stdout=subprocess.DEVNULL)
                lines = log.read_text().splitlines()
                print(f"  API requests by {label}: {len(lines)} ({', '.join(line.split()[0] for line in lines)})")
        policies(runs, plane, seed, env)
    finally:
        plane.stop()


def policies(runs: int, plane: Any, seed: Any, env: dict[str, str]) -> None:
    """approve without a policy file beside approve with every built-in policy active (examples/approval-policy.yaml)."""
    import testbed
    import yaml

    doc = yaml.safe_load((ROOT / "examples" / "approval-policy.yaml").read_text())
    del doc["required"], doc["policies"]["change-ticket"]  # the site example is not installed here
    doc["policies"]["change-window"].update(  # a window around the clock, so that every approval passes
        windows=[{"days": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"], "from": "00:00", "to": "24:00"}],
        blackouts=[], expiryWithinWindow=False)
    doc["policies"]["crd-changes"]["groups"] = ["aicr:approvers"]
    configmap = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "data": {"policy.yaml": yaml.safe_dump(doc)},
                            "metadata": {"name": "aicr-approval-policy", "namespace": "aicr-system"}})
    sample_report = json.dumps(testbed.SAMPLE_REPORT)
    samples: dict[str, list[float]] = {"without": [], "with": []}
    for i in range(runs + 1):  # the first round warms up
        for label in ("without", "with"):
            plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
            if label == "with":
                plane.kubectl("create", "-f", "-", input=configmap)
            seconds = timed(["kubectl", "aicr", "approve", seed.rollout(report=sample_report), "--reason",
                             "CHG-1 bench"], env)
            if i:
                samples[label].append(seconds)
    plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy")
    report(f"Approval policies (fresh rollouts with a verified report), median of {runs} runs", [
        ("kubectl aicr approve, no policy file", statistics.median(samples["without"])),
        ("kubectl aicr approve, 7 built-in policies active", statistics.median(samples["with"]))],
        "kubectl aicr approve, no policy file")


BREAKDOWN = """
import json, sys, time
t0 = time.perf_counter()
import aicr_core.app, aicr_commands.describe
t1 = time.perf_counter()
from aicr_core import kube
t2 = time.perf_counter()
cluster = kube.connect(sys.argv[1], None)
t3 = time.perf_counter()
from aicr_commands import _rollouts, describe
rollout = _rollouts.read_rollout(cluster, sys.argv[2])
t4 = time.perf_counter()
describe.read_assessment(cluster, "aicr-system", rollout.assessment_digest)
t5 = time.perf_counter()
print(json.dumps([t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4]))
"""
PHASES = ("our code + cliff + stevedore", "import of the kubernetes client", "kubeconfig load",
          "1st GET incl. TLS handshake", "2nd GET")


def breakdown(runs: int, kubeconfig: Path, name: str, env: dict[str, str]) -> str:
    samples = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", BREAKDOWN, str(kubeconfig), name], env=env,
                             capture_output=True, text=True, check=True).stdout
        samples.append(json.loads(out))
    return ", ".join(f"{label} {statistics.median(s[i] for s in samples) * 1000:.0f}ms"
                     for i, label in enumerate(PHASES))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-cluster", action="store_true", help="only the start-up figures")
    args = parser.parse_args()
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    startup(args.runs, env)
    if not args.no_cluster:
        cluster(args.runs, env)


if __name__ == "__main__":
    main()
