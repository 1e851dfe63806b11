#!/usr/bin/env python3
"""Where a fleet `list`'s CPU goes: py-spy over `kubectl-aicr list --all-contexts` on stand-ins.

Starts N stand-in API servers (bench/fleet_standins.py: one event loop, each its own TLS port
and CA, answering after 100 ms), writes one kubeconfig naming them, and samples the plugin's
every thread with py-spy (`pip install py-spy`; it needs ptrace, as root or with
CAP_SYS_PTRACE) while it lists them all at once. Prints the functions by their own samples and
by the samples under them (inclusive), grouped into the stages of a cluster's turn.

    PATH=$PWD/.venv/bin:$PATH python bench/fleet_profile.py [--clusters 150] [--rollouts 20] [--exec]
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

STAGES = (  # (label, a frame whose presence in a stack puts the sample in that stage), first match wins
    ("start-up (imports)", "_find_and_load"),
    ("loading credentials (kubeconfig, exec plugin)", "load_settings"),
    ("session set-up (client, pool)", "Cluster.__init__"),
    ("TLS handshake and context", "ssl_wrap_socket"),
    ("connecting (socket, pool)", "_new_conn"),
    ("reading answers (urllib3, http.client)", "read_body"),
    ("sending requests and reading heads", "Cluster._send"),
    ("decoding JSON", "bounded_json.py"),
    ("parsing rollouts and reports", "operator_api.py"),
    ("the table and output", "AicrApp.run_command"),
    ("the command's own set-up", "AicrApp.run"),
    ("waiting (threads)", "Condition.wait"),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=150)
    parser.add_argument("--rollouts", type=int, default=20)
    parser.add_argument("--exec", action="store_true", help="users run an exec plugin (echo, no wait)")
    parser.add_argument("--rate", type=int, default=500, help="py-spy samples a second")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--keep", metavar="FILE", help="also write the raw (collapsed) stacks here")
    options = parser.parse_args()
    if shutil.which("py-spy") is None or shutil.which("kubectl-aicr") is None:
        raise SystemExit("py-spy and kubectl-aicr must be on PATH (pip install py-spy; PATH=$PWD/.venv/bin:$PATH)")
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
        raw = work / "stacks.txt"
        command = ["kubectl-aicr", "list", "--all-contexts", "--parallel", str(options.clusters)]
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)  # warm the caches
        subprocess.run(["py-spy", "record", "--threads", "--subprocesses", "--rate", str(options.rate), "--format",
                        "raw", "--output", str(raw), "--", *command], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        if options.keep:
            shutil.copy(raw, options.keep)
        report(raw.read_text().splitlines(), options.top, options.clusters)
    finally:
        loop.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def report(lines: list[str], top: int, clusters: int) -> None:
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    stages: collections.Counter[str] = collections.Counter()
    total = 0
    for line in lines:
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [f for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        if not frames:
            continue
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
        stage = next((label for label, marker in STAGES if any(marker in f for f in frames)), "other")
        stages[stage] += count
    print(f"{total} samples of the plugin's threads on CPU ({clusters} clusters)\n\nBy stage (first match):")
    for label, count in stages.most_common():
        print(f"  {count * 100 / total:5.1f}%  {label}")
    print("\nOwn samples:")
    for frame, count in own.most_common(top):
        print(f"  {count * 100 / total:5.1f}%  {frame}")
    print("\nInclusive (aicr and the libraries it calls):")
    for frame, count in inclusive.most_common(top * 2)[:top]:
        print(f"  {count * 100 / total:5.1f}%  {frame}")


if __name__ == "__main__":
    sys.exit(main())
