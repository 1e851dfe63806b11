#!/usr/bin/env python3
"""The admission webhook under load: 200 approvals of 200 rollouts from 8 threads, each decided once.

On a local control plane (tools/testbed.py) with `aicr-admission` running as
a local process and registered by URL (tools/admission_testbed.py), and a
policy file that activates change-window (open all day), max-approval and
reason-format, so that every decision runs policies:

1. 200 approvals (raw PATCHes of spec.approval, as alice and bob) from 8
   threads, with the webhook registered: each must be decided exactly once
   and allowed. Prints the webhook's own latency per decision (from accepting
   the connection to the answer, TLS handshake included; target: p99 under
   50 ms) and the PATCH latency the client sees.
2. The same 200 PATCHes on 200 fresh rollouts without the webhook, side by
   side: what the webhook adds to a write.

Run from the repository, with the virtualenv's bin/ first on PATH:
    PATH=$PWD/.venv/bin:$PATH python bench/admission_bench.py [--rollouts 200] [--threads 8]
"""
from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

from admission_testbed import Webhook  # noqa: E402

import testbed  # noqa: E402

TARGET_P99_MS = 50.0
POLICY = {"apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicy", "policies": {
    "change-window": {"timeZone": "UTC", "windows": [{"days": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"],
                                                      "from": "00:00", "to": "24:00"}]},
    "max-approval": {"max": "8h"},
    "reason-format": {"pattern": "^CHG-[0-9]+", "message": "cite a change ticket"}}}


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def approve_all(plane: testbed.ControlPlane, names: list[str], threads: int) -> tuple[list[float], list[str]]:
    """PATCH an approval into each rollout, `threads` at a time; (latencies in ms, failures)."""
    from aicr_core import kube
    from aicr_core import operator_api as api
    from aicr_core.deadline import Deadline

    work = collections.deque(enumerate(names))
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def worker(user: str) -> None:
        cluster = kube.connect(str(plane.kubeconfig_for(user)), None, Deadline(600))
        expires = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=4)).strftime("%Y-%m-%dT%H:%M:%SZ")
        while True:
            with lock:
                if not work:
                    return
                _, name = work.popleft()
            patch = {"spec": {"approval": {"user": user, "expires": expires, "reason": f"CHG-{len(work)} bench"}}}
            started = time.perf_counter()
            try:
                cluster.patch(api.rollout_path(name), patch)
                with lock:
                    latencies.append((time.perf_counter() - started) * 1000)
            except Exception as err:  # noqa: BLE001 - counted and printed
                with lock:
                    failures.append(f"{name}: {err}")

    pool = [threading.Thread(target=worker, args=("alice" if i % 2 else "bob",)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return latencies, failures


def seed(plane: testbed.ControlPlane, count: int) -> list[str]:
    seeder = testbed.Seeder(plane)
    return [seeder.rollout(steps=[], records=[]) for _ in range(count)]


def row(label: str, values: list[float]) -> str:
    return (f"  {label:<44} p50 {statistics.median(values):6.1f} ms   p99 {percentile(values, 99):6.1f} ms   "
            f"max {max(values):6.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=200)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()

    plane = testbed.ControlPlane()
    print("starting etcd and kube-apiserver, then aicr-admission ...", flush=True)
    plane.start()
    hook = Webhook(plane)
    try:
        hook.apply_rbac()
        plane.kubectl("create", "configmap", "-n", "aicr-system", "aicr-approval-policy",
                      f"--from-literal=policy.yaml={json.dumps(POLICY)}")
        hook.start()
        hook.register()
        while "active policies: change-window, max-approval, reason-format" not in hook.get("/readyz")[1]:
            time.sleep(0.1)

        names = seed(plane, args.rollouts)
        before = len(hook.decisions())
        started = time.perf_counter()
        with_hook, failures = approve_all(plane, names, args.threads)
        wall = time.perf_counter() - started
        decisions = hook.decisions()[before:]
        per_rollout = collections.Counter(d["rollout"] for d in decisions)
        verdicts = collections.Counter(d["verdict"] for d in decisions)
        stored = sum(1 for n in names if json.loads(plane.kubectl("get", "runtimerollout", n, "-o", "json").stdout)
                     ["spec"].get("approval"))
        once = sum(1 for n in names if per_rollout[n] == 1)
        server = [float(d["durationMs"]) for d in decisions]
        deciding = [float(d["decideMs"]) for d in decisions]

        hook.unregister()
        time.sleep(2)  # the API server drops the webhook from its configuration
        names_plain = seed(plane, args.rollouts)
        before_plain = len(hook.decisions())
        without_hook, failures_plain = approve_all(plane, names_plain, args.threads)
        leaked = len(hook.decisions()) - before_plain
    finally:
        hook.stop()
        plane.stop()

    print(f"\n{args.rollouts} approvals of {args.rollouts} rollouts from {args.threads} threads "
          f"(policies: change-window, max-approval, reason-format)")
    print(f"  decided exactly once: {once}/{args.rollouts}   verdicts: {dict(verdicts)}   "
          f"approvals stored: {stored}/{args.rollouts}   failed writes: {len(failures)}   wall: {wall:.1f} s")
    for failure in failures[:5]:
        print(f"    {failure}")
    print(row("webhook, accept to answer (its own log)", server))
    print(f"  {'':<44} p99 vs the {TARGET_P99_MS:.0f} ms target: {percentile(server, 99) / TARGET_P99_MS:.2f}x")
    print(row("  of which deciding (request read to answer)", deciding))
    print(row("PATCH as the client sees it, with the webhook", with_hook))
    print(row("PATCH as the client sees it, without it", without_hook))
    print(f"  {'':<44} with / without: p50 {statistics.median(with_hook) / statistics.median(without_hook):.2f}x   "
          f"p99 {percentile(with_hook, 99) / percentile(without_hook, 99):.2f}x")
    print(f"  without the webhook: failed writes {len(failures_plain)}, decisions it saw {leaked}")
    ok = once == args.rollouts and stored == args.rollouts and not failures and verdicts == {"allow": args.rollouts}
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
