#!/usr/bin/env python3
"""Where a fleet `list`'s CPU goes, cluster by cluster: the stages of a turn, or py-spy's samples.

Starts N stand-in API servers (bench/fleet_standins.py: one event loop, each its own TLS port
and CA, answering after 100 ms), writes one kubeconfig naming them, and lists them all:

- by default, `list --all-contexts --parallel 1` in a process whose stages are wrapped to add
  up the CPU time of the thread that runs them (time.thread_time): each turn runs alone, so
  what a stage costs is its own, not its share of the interpreter lock's hand-overs. Printed:
  each stage's CPU per cluster (stages nest: a line includes the lines under it that it calls).
- with --py-spy, py-spy samples the plugin's every thread (`pip install py-spy`; it needs
  ptrace, as root or with CAP_SYS_PTRACE) while it lists them at --parallel N, and the
  functions are printed by their own samples and by the samples under them.

    PATH=$PWD/.venv/bin:$PATH python bench/fleet_profile.py [--clusters 200] [--rollouts 2] [--exec] [--py-spy]
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleet_standins as standins  # noqa: E402

# (module, attribute path, label): the stages of a cluster's turn, wrapped in the profiled process.
STAGES = (
    ("aicr_core.fleet.fan_out", "Fleet._one", "a cluster's turn (all of it)"),
    ("aicr_core.fleet.fan_out", "Fleet.session", "  its session: credentials loaded, client made"),
    ("aicr_core.session.client_adapter", "_Loader.load_and_set", "    the Kubernetes client's loader (exec plugin)"),
    ("aicr_core.session.kubeconfig", "_configuration", "    the client's Configuration"),
    ("aicr_core.session.kube", "_client", "    the client and its pool manager"),
    ("aicr_core.fleet.flags", "run_single", "  the command on its session (list)"),
    ("aicr_core.session.kube", "KubeSession._send", "    sending a request, reading its answer's head"),
    ("aicr_core.session.kube", "KubeSession._direct_get", "    a GET on a kept connection, its answer read"),
    ("aicr_core.session.tls_contexts", "share", "      the TLS context (made once per CA and cert)"),
    ("urllib3.connection", "HTTPSConnection.connect", "      connecting: socket, TLS handshake"),
    ("ssl", "SSLSocket.do_handshake", "        the TLS handshake"),
    ("http.client", "HTTPResponse.begin", "      parsing the answer's head (http.client)"),
    ("aicr_core.session.direct_get", "_answer", "      reading the answer: head and body (direct_get)"),
    ("aicr_core.session.kube", "read_body", "    reading the answers' bodies"),
    ("aicr_core.session.bounded_json", "loads", "    decoding JSON"),
    ("aicr_core.domain.rollout_listing", "parse_all", "    parsing the rollouts"),
    ("aicr_core.domain.assessments", "Assessments.of", "    verifying the reports"),
)

RUNNER = """
import atexit, collections, functools, importlib, json, os, sys, threading, time
spent, calls, local = collections.Counter(), collections.Counter(), threading.local()
def wrap(module, path, label):
    *parents, name = path.split(".")
    try:  # a stage that an older version lacks is left out
        owner = importlib.import_module(module)
        for parent in parents:
            owner = getattr(owner, parent)
        function = getattr(owner, name)
    except (ImportError, AttributeError):
        return
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        depth = getattr(local, label, 0)
        setattr(local, label, depth + 1)
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            setattr(local, label, depth)
            if depth == 0:
                spent[label] += time.thread_time() - started
                calls[label] += 1
    setattr(owner, name, wrapper)
for stage in json.loads(os.environ["STAGES"]):
    wrap(*stage)
def report():
    times = os.times()
    with open(os.environ["REPORT"], "w") as out:
        json.dump({"spent": spent, "calls": calls, "cpu": times.user + times.system}, out)
atexit.register(report)
from aicr_core.framework import app
sys.exit(app.console_main())
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--rollouts", type=int, default=2)
    parser.add_argument("--exec", action="store_true", help="users run an exec plugin (echo, no wait)")
    parser.add_argument("--py-spy", action="store_true", help="sample with py-spy at --parallel N instead")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples a second")
    parser.add_argument("--top", type=int, default=25)
    options = parser.parse_args()
    if shutil.which("kubectl-aicr") is None or (options.py_spy and shutil.which("py-spy") is None):
        raise SystemExit("kubectl-aicr (and py-spy with --py-spy) must be on PATH: PATH=$PWD/.venv/bin:$PATH")
    work = Path(tempfile.mkdtemp(prefix="aicr-fleet-profile-"))
    loop = standins.StandIns(0.1)
    try:
        servers = standins.fleet(loop, options.clusters, options.rollouts)
        plugin = None
        if options.exec:
            plugin = work / "exec-credential.sh"
            plugin.write_text('#!/bin/sh\necho \'{"apiVersion": "client.authentication.k8s.io/v1", '
                              '"kind": "ExecCredential", "status": {"token": "exec-token"}}\'\n')
            plugin.chmod(0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "AICR_"))}
        env["KUBECONFIG"] = str(standins.kubeconfig(work / "kc", servers, plugin))
        print(f"{options.clusters} clusters, {options.rollouts} rollouts each; load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        if options.py_spy:
            sampled(work, env, options)
        else:
            stages(work, env, options.clusters)
    finally:
        loop.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def stages(work: Path, env: dict[str, str], clusters: int) -> None:
    import json

    report = work / "stages.json"
    runner = work / "runner.py"
    runner.write_text(RUNNER)
    env = {**env, "STAGES": json.dumps(STAGES), "REPORT": str(report)}
    command = [sys.executable, str(runner), "list", "--all-contexts", "--parallel", "1"]
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)  # warm the caches
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)
    measured = json.loads(report.read_text())
    turns = measured["calls"].get(STAGES[0][2]) or 1
    print(f"CPU of the thread running each stage, per cluster (ms; {turns} turns; the process: "
          f"{measured['cpu']:.2f} s):")
    for _, _, label in STAGES:
        figure = f"{measured['spent'][label] * 1000 / turns:7.2f}" if label in measured["spent"] else "      -"
        print(f"  {figure}  {label}")


def sampled(work: Path, env: dict[str, str], options: argparse.Namespace) -> None:
    raw = work / "stacks.txt"
    command = ["kubectl-aicr", "list", "--all-contexts", "--parallel", str(options.clusters)]
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)  # warm the caches
    subprocess.run(["py-spy", "record", "--threads", "--nonblocking", "--rate", str(options.rate), "--format", "raw",
                    "--output", str(raw), "--", *command], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        if not count_text.isdigit() or not frames:
            continue
        total += int(count_text)
        own[frames[-1]] += int(count_text)
        for frame in set(frames):
            inclusive[frame] += int(count_text)
    print(f"{total} samples of the plugin's threads on CPU\n\nOwn samples:")
    for frame, count in own.most_common(options.top):
        print(f"  {count * 100 / total:5.1f}%  {frame}")
    print("\nInclusive:")
    for frame, count in inclusive.most_common(options.top):
        print(f"  {count * 100 / total:5.1f}%  {frame}")


if __name__ == "__main__":
    sys.exit(main())
