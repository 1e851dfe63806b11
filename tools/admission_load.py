"""Writers at steady load through a real kube-apiserver: raw approval PATCHes, as many threads as asked.

Shared by the webhook's end-to-end tests (SIGTERM under load) and
bench/admission_bench.py: each writer has its own session (its own pool of
connections to the API server, as separate clients would), takes the next
rollout from a common queue and PATCHes an approval into it, until the queue
is empty or `until()` says to stop.
"""
from __future__ import annotations

import collections
import datetime as dt
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import envtest


@dataclass
class Load:
    latencies: list[float] = field(default_factory=list)  # ms, of each PATCH that succeeded
    failures: list[str] = field(default_factory=list)  # "<rollout>: <error>"
    written: list[str] = field(default_factory=list)  # rollouts whose approval PATCH succeeded
    finished: list[float] = field(default_factory=list)  # time.monotonic() of each success


def approve(plane: envtest.ControlPlane, names: list[str], writers: int,
            until: Callable[[], bool] = lambda: False, pace: float = 0.0) -> Load:
    """PATCH an approval into each of `names`, `writers` at a time (as alice and bob in turn).

    `pace`: seconds each writer waits after each write, for a steady rate that lasts (a SIGTERM mid-run).
    """
    from aicr_core.domain import operator_api as api
    from aicr_core.session import kube
    from aicr_core.session.deadline import Deadline

    work = collections.deque(names)
    load = Load()
    lock = threading.Lock()

    def writer(user: str) -> None:
        cluster = kube.connect(str(plane.kubeconfig_for(user)), None, Deadline(3600))
        expires = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=4)).strftime("%Y-%m-%dT%H:%M:%SZ")
        while not until():
            with lock:
                if not work:
                    return
                name = work.popleft()
            patch = {"spec": {"approval": {"user": user, "expires": expires, "reason": f"CHG-{len(work)} load"}}}
            started = time.perf_counter()
            try:
                cluster.patch(api.rollout_path(name), patch)
            except Exception as err:  # noqa: BLE001 - counted and reported
                with lock:
                    load.failures.append(f"{name}: {err}")
                continue
            with lock:
                load.latencies.append((time.perf_counter() - started) * 1000)
                load.written.append(name)
                load.finished.append(time.monotonic())
            if pace:
                time.sleep(pace)

    pool = [threading.Thread(target=writer, args=("alice" if i % 2 else "bob",)) for i in range(writers)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return load
