#!/usr/bin/env python3
"""The testbed's command line: `python tools/testbed.py demo|webhook|reset` (docs/testbed.md).

`demo` starts a real control plane (tools/envtest.py) with a sample (`--clusters N`: N of them, one
fleet; tools/demo_fleet.py) and an operator stand-in (tools/demo_operator.py), and keeps it running
until interrupted; `webhook` adds the admission webhook; `reset` puts the demo's rollouts back.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from envtest import USER_ROLES, ControlPlane, TestbedError, find_binaries  # beside this file

VERBS = {
    "demo": "start etcd and kube-apiserver (building them first if missing), seed sample rollouts, "
            "print each user's kubeconfig, describe one rollout, and run until interrupted; with --clusters N, "
            "N control planes as one fleet (contexts gpu-lab-1, gpu-eu-1, ...; the first a hub with "
            "ClusterProfiles). An operator stand-in runs with it: it moves approved rollouts on (Progressing, "
            "steps InFlight then Ready, AwaitingAcknowledgement for a release with after-apply steps, Ended), "
            "ends revoked ones and those not approved by their deadline",
    "webhook": "the demo, with the admission webhook aicr-admission running locally: its serving "
               "certificate made, the process started and registered with the API server by URL",
    "reset": "put the running demo's rollouts back as it started them (--demo DIR, else $AICR_DEMO)",
}


def print_users(plane: ControlPlane) -> None:
    """Every kubeconfig the testbed wrote, with what its user may do."""
    print("\nKubeconfigs, one per user (export KUBECONFIG=PATH, or pass --kubeconfig PATH):")
    for user in [*USER_ROLES]:
        print(f"  {user:14} {plane.kubeconfig_for(user)}\n  {'':14} {USER_ROLES[user]}")
    print(f"All of them as contexts (current: alice; --context NAME): {plane.kubeconfig}")
    print(f"\nAs an approver:\n  export KUBECONFIG={plane.kubeconfig_for('alice')}")


def demo(webhook: bool = False, clusters: int = 1) -> int:
    import demo_fleet  # beside this file
    import demo_operator

    # SIGTERM stops the demo like Ctrl-C, from the first moment on: also where SIGINT is ignored (a
    # background job of a non-interactive shell), so a `kill` of the demo always cleans up.
    signal.signal(signal.SIGTERM, _interrupt)
    folder = Path(tempfile.mkdtemp(prefix="aicr-demo-"))
    threads: list[Any] = []
    hook: Any = None
    operator: Any = None
    try:
        try:
            print("starting etcd and kube-apiserver (building them first if missing)...", flush=True)
            find_binaries(build=True)
            started = time.monotonic()
            members, threads = demo_fleet.start_planes(folder, clusters)
            names = demo_fleet.seed(members)
            demo_fleet.set_up_hub(members, folder)
            kubeconfig = folder / "kubeconfig"
            planes = [(m.context, m.plane) for m in members]
            demo_fleet.write_private(kubeconfig, json.dumps(demo_fleet.kubeconfig_doc(planes), indent=2))
            demo_fleet.write_files(members, folder, kubeconfig)
            operator = demo_operator.OperatorStandIn(planes).start()
            plane = members[0].plane
            if webhook:
                hook = start_webhook(plane)
            startup = time.monotonic() - started
        except TestbedError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        print(f"\n{len(members)} control plane{'s' if len(members) > 1 else ''} started in {startup:.1f}s")
        for m in members:
            print(f"\n{m.context} at {m.plane.url}; rollouts:")
            for role, name in names[m.context].items():
                print(f"  {role:16} {name}")
        print_users(plane)
        contexts = ", ".join(m.context for m in members)
        print(f"\nThe fleet: {len(members)} context{'s' if len(members) > 1 else ''} ({contexts}), as alice; the first "
              f"is the hub, with a ClusterProfile for each (docs/fleet.md, \"Try it\"):\n"
              f"  source {folder / demo_fleet.ENV}   # AICR_DEMO, KUBECONFIG, PLAN (the plan every cluster shares)\n"
              f'  cd "$AICR_DEMO"                      # providers.json, waves.yaml, profile-waves.yaml')
        print("\nAn operator stand-in moves the rollouts on: approve one and watch it "
              "(kubectl aicr describe ROLLOUT -w). Put every rollout back: python tools/testbed.py reset")
        if hook is not None:
            print(f"\nAdmission webhook aicr-admission at {hook.url}/validate, registered with the API server "
                  f"(ValidatingWebhookConfiguration aicr-admission); its log (one JSON line per decision): "
                  f"{hook.log_path}")
            print(f"Its metrics (Prometheus text): http://127.0.0.1:{hook.metrics_port}/metrics")
        waiting = names[members[0].context]["waiting"]
        print(f"\n$ kubectl aicr describe {waiting}\n", flush=True)
        subprocess.run(["kubectl", "aicr", "describe", waiting, f"--kubeconfig={plane.kubeconfig_for('alice')}"])
        print(f"\nTry: kubectl aicr approve {waiting} --expires 2h --reason 'Maintenance window'")
        print("Or the page of what waits across the fleet (docs/dashboard.md; pip install 'kubectl-aicr[dashboard]'):\n"
              "  kubectl aicr dashboard --all-contexts --open")
        print("Running until interrupted (Ctrl-C).", flush=True)
        while all(p.poll() is None for m in members for p in m.plane.procs) and \
                (hook is None or hook.proc.poll() is None):
            time.sleep(1)
        print("error: the control plane exited" if hook is None or hook.proc.poll() is None
              else f"error: aicr-admission exited\n{hook.log_tail()}", file=sys.stderr)
        return 1
    except TestbedError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        if operator is not None:
            operator.stop()
        if hook is not None:
            hook.stop()
        demo_fleet.stop_planes(threads)
        shutil.rmtree(folder, ignore_errors=True)


def reset(folder: str | None) -> int:
    """The running demo's rollouts put back as it started them (its folder: --demo, else $AICR_DEMO)."""
    import demo_fleet

    where = folder or os.environ.get("AICR_DEMO")
    if not where or not (Path(where) / demo_fleet.STATE).is_file():
        print("error: no running demo found: pass --demo DIR (the folder the demo prints), "
              "or source the demo's env file (it sets AICR_DEMO)", file=sys.stderr)
        return 2
    try:
        names = demo_fleet.reset(Path(where))
    except Exception as err:  # noqa: BLE001 - the demo stopped, say: one line, no traceback
        print(f"error: cannot reset the demo in {where}: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    for context, roles in names.items():
        print(f"{context}: " + ", ".join(f"{role} {name}" for role, name in roles.items()))
    return 0


def start_webhook(plane: ControlPlane) -> Any:
    """aicr-admission against `plane`: certificate, RBAC from manifests/admission, process, registration."""
    import admission_testbed  # beside this file; needs PyYAML (the project's virtualenv)

    print("starting the admission webhook aicr-admission...", flush=True)
    hook = admission_testbed.Webhook(plane)
    hook.apply_rbac()
    hook.start()
    hook.register()
    return hook


def parse_args(argv: list[str]) -> Any:
    import argparse
    import textwrap

    parser = argparse.ArgumentParser(
        prog="python tools/testbed.py", allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A real control plane on loopback (etcd and kube-apiserver) for the tests and the demo.",
        epilog="verbs:\n" + "\n".join(textwrap.fill(text, 100, initial_indent=f"  {verb:9} ",
                                                     subsequent_indent=" " * 12) for verb, text in VERBS.items())
               + "\n\nSee docs/testbed.md.")
    parser.add_argument("verb", choices=list(VERBS), metavar="VERB", help="demo, webhook or reset (below)")
    parser.add_argument("--clusters", type=cluster_count, default=1, metavar="N",
                        help=f"demo, webhook: how many control planes (1 to {MAX_CLUSTERS}; default 1)")
    parser.add_argument("--demo", metavar="DIR", help="reset: the demo's folder (default: $AICR_DEMO)")
    args = parser.parse_args(argv)
    if args.verb == "reset" and args.clusters != 1:
        parser.error("--clusters goes with demo or webhook, not reset")
    return args


MAX_CLUSTERS = 8  # each plane is an etcd and a kube-apiserver of its own: more than a laptop wants


def cluster_count(text: str) -> int:
    import argparse

    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_CLUSTERS:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_CLUSTERS}")
    return int(text)


def _interrupt(signum: int, frame: Any) -> None:
    """SIGTERM as Ctrl-C; a second signal must not cut the clean-up short."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.verb == "reset":
        return reset(args.demo)
    return demo(webhook=args.verb == "webhook", clusters=args.clusters)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
