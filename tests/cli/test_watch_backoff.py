"""A watch that the server answers with 410 Gone every time, through the real `kubectl aicr` (issue 23, item 3).

`list -w` against such a server made 17,614 LISTs in 12 s: after each re-list the watch failed at once
and was tried again at once. The follower (aicr_core/session/watch.py, behind `list -w`, `wait` and the
waves' follow step) now backs off after a re-list whose watch fails again at once, says so on stderr, and
sends at most 30 requests in any 10 s; a `wait` still ends at its deadline.
"""
from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from testfixtures import compare

from support.fake_apiserver import ByPath, FakeApiServer, Respond, fake_apiserver
from support.harness import Aicr, aicr_env, error_line
from support.samples import ROLLOUT

R = ROLLOUT["metadata"]["name"]
ROLLOUTS = "/apis/operator.aicr.run/v1alpha1/runtimerollouts"
REPORTS = "/api/v1/namespaces/aicr-system/configmaps?"
ROLLOUT_LIST = {"kind": "RuntimeRolloutList", "apiVersion": "operator.aicr.run/v1alpha1",
                "metadata": {"resourceVersion": "7"}, "items": [ROLLOUT]}
CONFIGMAP_LIST = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}, "items": []}
GONE = Respond(200, b'{"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure", '
                    b'"message": "too old resource version: 7 (9)", "reason": "Expired", "code": 410}}\n')
WINDOW, MOST = 10.0, 30  # at most 3 requests a second, averaged over any 10 s


def busiest_window(server: FakeApiServer, prefix: str) -> int:
    """The most requests under `prefix` that arrived within any WINDOW seconds."""
    times = sorted(r.at for r in server.requests if r.path.startswith(prefix))
    return max((sum(1 for t in times[i:] if t < start + WINDOW) for i, start in enumerate(times)), default=0)


def test_list_watch_backs_off_when_every_watch_is_gone(kubectl: str, tmp_path: Path, record_property: Any) -> None:
    script = [ByPath(((REPORTS, Respond(200, CONFIGMAP_LIST)), (f"{ROLLOUTS}?limit=", Respond(200, ROLLOUT_LIST)),
                      (f"{ROLLOUTS}?", GONE)))]
    with fake_apiserver(tmp_path, script) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = subprocess.Popen([kubectl, "aicr", "list", "-w"], env=aicr_env(tmp_path, kc), text=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        waited = time.monotonic() + 30
        while not any(r.path.startswith(f"{ROLLOUTS}?") for r in server.requests) and time.monotonic() < waited:
            time.sleep(0.05)
        first = time.monotonic()
        time.sleep(12)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)
        requests = [r for r in server.requests if r.path.startswith(ROLLOUTS) and r.at >= first]
        busiest = busiest_window(server, ROLLOUTS)
    record_property("busiest_10s", busiest)  # the JUnit report; docs/sessions.md quotes it
    assert R in stdout, stdout  # the list was printed before the watch began to fail
    assert busiest <= MOST, f"{busiest} requests within {WINDOW:g} s ({len(requests)} in 12 s)"
    assert len(requests) >= 6, requests  # it did keep trying, re-listing after each 410
    warning = [line for line in stderr.splitlines() if line.startswith("warning: ")]
    assert warning and warning[0].startswith("warning: the watch of rollouts keeps failing (3 times in a row: "
                                             "410 Gone: too old resource version: 7 (9)); reading it again in "), \
        stderr
    compare(proc.returncode, expected=130, suffix=stderr)


def test_wait_backs_off_and_still_ends_at_its_timeout(aicr: Aicr, tmp_path: Path, record_property: Any) -> None:
    script = [ByPath(((f"{ROLLOUTS}/{R}", Respond(200, ROLLOUT)), (f"{ROLLOUTS}?", GONE)))]
    with fake_apiserver(tmp_path, script) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr("wait", R, "--for", "ended", "--timeout", "12s", kubeconfig=kc, timeout=60)
        ended = time.monotonic()
        started = server.requests[0].at
        busiest = busiest_window(server, ROLLOUTS)
        count = len(server.requests)
    record_property("busiest_10s", busiest)
    compare((proc.returncode, error_line(proc)),
            expected=(1, f"error: [TIMEOUT] rollout {R}: ended not met within 12s (phase AwaitingApproval)"),
            suffix=proc.stderr)
    assert ended - started < 13.5, ended - started  # by its deadline (plus the exit)
    assert busiest <= MOST, f"{busiest} requests within {WINDOW:g} s ({count} in 12 s)"
    assert "warning: the watch of rollout " + R + " keeps failing" in proc.stderr, proc.stderr
