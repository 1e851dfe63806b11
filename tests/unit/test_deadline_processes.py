"""A deadline's processes: one started while the deadline expires (at the program's exit, on SIGINT) is killed.

The fleet starts credential plugins on worker threads; at a signal the main thread expires every
deadline and ends the process. A plugin whose start was under way then was left running for good
(seen once under CI's load: `sleep` outlived the command). The start happens under the deadline's
lock, so an expiry waits for it and kills what it started.
"""
from __future__ import annotations

import subprocess
import threading
import time

import pytest
from testfixtures import compare

from aicr_core.errors import AicrError, Code
from aicr_core.session.deadline import Deadline


def test_an_expiry_during_a_start_waits_for_it_and_kills_what_it_started() -> None:
    deadline = Deadline(60.0, name="context c")
    starting, go_on = threading.Event(), threading.Event()
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        starting.set()
        go_on.wait(5)
        process = subprocess.Popen(["sleep", "60"], start_new_session=True)
        started.append(process)
        return process

    def worker() -> None:
        with deadline.watching_process(start) as process:
            process.wait(30)

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    assert starting.wait(5)
    expiring = threading.Thread(target=deadline.expire)
    expiring.start()
    time.sleep(0.2)
    assert expiring.is_alive(), "the expiry did not wait for the start in progress"
    go_on.set()
    expiring.join(5)
    thread.join(5)
    compare((expiring.is_alive(), thread.is_alive(), started[0].poll()), expected=(False, False, -9))


def test_an_expired_deadline_starts_nothing() -> None:
    deadline = Deadline(60.0, name="context c")
    deadline.expire()
    calls: list[int] = []

    def start() -> subprocess.Popen[bytes]:
        calls.append(1)
        raise AssertionError("started")

    with pytest.raises(AicrError) as caught:
        with deadline.watching_process(start, "the credentials plugin \"p\""):
            pass
    compare((caught.value.code, calls), expected=(Code.TIMEOUT, []))
    assert 'the credentials plugin "p" did not finish within 60s' in caught.value.message


def test_after_the_exits_expiry_no_deadline_starts_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cluster's turn that begins as the command ends makes a new deadline: it starts nothing either."""
    from aicr_core.session import deadline as deadlines

    monkeypatch.setattr(deadlines, "_EXITING", threading.Event())  # this test's exit, not the process's
    monkeypatch.setattr(deadlines, "_LIVE", type(deadlines._LIVE)())
    running = Deadline(60.0, name="context a")
    first = subprocess.Popen(["sleep", "60"], start_new_session=True)
    with running.watching_process(lambda: first):
        deadlines.expire_all()
        compare(first.wait(5), expected=-9)
    later = Deadline(60.0, name="context b")  # made after the expiry: a turn that began too late
    with pytest.raises(AicrError) as caught:
        with later.watching_process(lambda: subprocess.Popen(["sleep", "60"])):
            pass
    compare(caught.value.code, expected=Code.TIMEOUT)
