"""A deadline per session, on worker threads, as the fleet runs one session per cluster (aicr_core.session.deadline).

In-process sessions (`kube.connect`) against fake API servers: one session hangs (a trickling server,
a hung credentials plugin), the other answers; the hung one ends in TIMEOUT at its own deadline, naming
what hung, and the other's result is there at once.
"""
from __future__ import annotations

import os
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from testfixtures import ShouldRaise, compare

from aicr_core.errors import AicrError, Code
from aicr_core.session import kube
from aicr_core.session.deadline import WORKER_GRACE_SECONDS, Deadline, in_background

from support.fake_apiserver import Respond, Trickle, fake_apiserver

VERSION = {"major": "1", "minor": "37", "gitVersion": "v1.37.0"}
# How late a woken thread may run on two cores beside CI's Go builds and three pytest workers (measured
# in docs/contributing.md); what these bounds catch is a wait for the whole deadline, or for ever.
WAKE_UP_SLACK = 1.0


def version(kubeconfig: Path, deadline: Deadline) -> tuple[dict[str, Any], float, str]:
    """Connect and GET /version on this thread; what came back, when, and on which thread."""
    cluster = kube.connect(str(kubeconfig), None, deadline)
    answer = cluster.get("/version")
    return answer, time.monotonic(), threading.current_thread().name


def hung_plugin(tmp_path: Path, marker: str) -> dict[str, Any]:
    plugin = tmp_path / "hang.sh"
    plugin.write_text(f"#!/bin/sh\n{marker}\n")  # sh waits for a child that would outlive it
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin),
                     "interactiveMode": "Never"}}


@pytest.mark.parametrize("hang", ["trickling server", "trickling TLS handshake", "hung credentials plugin"])
def test_each_session_keeps_its_own_deadline_on_its_own_thread(tmp_path: Path, hang: str) -> None:
    marker = f"sleep {os.getpid() % 1000 + 986000}"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    hung_script = [Trickle(interval=0.5)] if hang == "trickling server" else [Respond(200, VERSION)]
    raw = 0.5 if hang == "trickling TLS handshake" else None
    with fake_apiserver(tmp_path / "a", hung_script, raw_trickle=raw) as hung, \
            fake_apiserver(tmp_path / "b", [Respond(200, VERSION, delay=0.2)]) as healthy:
        user = hung_plugin(tmp_path, marker) if hang == "hung credentials plugin" else {"token": "t"}
        hung_kc = hung.kubeconfig(tmp_path / "kc-a", user)
        healthy_kc = healthy.kubeconfig(tmp_path / "kc-b", {"token": "t"})
        started = time.monotonic()
        slow = in_background(version, hung_kc, Deadline(2.0, name="context a"))
        fast = in_background(version, healthy_kc, Deadline(2.0, name="context b"))
        answer, answered_at, thread = fast.result()
        compare((answer, thread != threading.main_thread().name), expected=(VERSION, True))
        assert answered_at - started < 1.5, answered_at - started  # the hung session delays it in nothing
        what = f'the credentials plugin "{tmp_path / "hang.sh"}"' if hang == "hung credentials plugin" else \
            "the API calls of this command"
        with ShouldRaise(AicrError(Code.TIMEOUT, f"context a: {what} did not finish within 2s")):
            slow.result()
        ended = time.monotonic()
        assert 1.9 < ended - started < 2.5, ended - started
        assert hang == "hung credentials plugin" or hung.accepted, "the hung server was never asked"
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    compare(left, expected="", suffix="the plugin's children were left running")


def test_a_connection_pool_serves_sessions_with_different_deadlines(tmp_path: Path) -> None:
    """As the webhook does (`with_deadline`): one pool, a deadline per read. A deadline that passes after its
    read is done shuts down nothing the next read uses."""
    with fake_apiserver(tmp_path, [Respond(200, VERSION)]) as server:
        base = kube.connect(str(server.kubeconfig(tmp_path / "kc", {"token": "t"})), None, Deadline(30.0))
        first = Deadline(0.3)
        compare(base.with_deadline(first).get("/version"), expected=VERSION)
        time.sleep(0.5)  # `first` has passed, while its connection sits in the pool
        assert first.fired
        compare(base.with_deadline(Deadline(5.0)).get("/version"), expected=VERSION)
        compare(len(server.accepted), expected=1, suffix="the pooled connection was shut down")


def test_expire_ends_a_session_blocked_on_another_thread(tmp_path: Path) -> None:
    """`Deadline.expire()` (what SIGTERM does at exit, what a fleet may do to give up on a cluster)."""
    with fake_apiserver(tmp_path, [Trickle(interval=0.5)]) as server:
        deadline = Deadline(60.0, name="context a")
        call = in_background(version, server.kubeconfig(tmp_path / "kc", {"token": "t"}), deadline)
        waited = time.monotonic() + 10
        while not server.requests and time.monotonic() < waited:
            time.sleep(0.02)
        expired_at = time.monotonic()
        deadline.expire()
        with ShouldRaise(AicrError(Code.TIMEOUT, "context a: the API calls of this command did not finish "
                                                 "within 60s")):
            call.result()
        assert time.monotonic() - expired_at < WAKE_UP_SLACK  # not the 60 s deadline


def test_a_worker_that_never_returns_is_not_waited_for_past_the_deadline() -> None:
    deadline = Deadline(0.5)
    never = in_background(threading.Event().wait)
    started = time.monotonic()
    raised: list[BaseException] = []

    def ask() -> None:
        try:
            never.result(deadline)
        except BaseException as err:  # noqa: BLE001 - compared below
            raised.append(err)

    # Asked on a daemon thread of the test's own, so that a wait for ever fails the test instead of hanging it.
    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    asking.join(10)
    assert raised, "result() was still waiting 10 s after a deadline of 0.5 s"
    compare(raised[0], expected=AicrError(Code.TIMEOUT, "the API calls of this command did not finish within 0.5s"))
    assert time.monotonic() - started < 0.5 + WORKER_GRACE_SECONDS + WAKE_UP_SLACK

