"""The fleet's pure parts: choosing contexts, the waves file, and the runner (with stand-in sessions)."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from testfixtures import compare

from aicr_core.errors import AicrError, Code, UsageError
from aicr_core.fleet import context_source, selection
from aicr_core.fleet import fan_out as fleet
from aicr_core.fleet import waves_file as waves
from aicr_core.framework import interruption
from aicr_core.session.connection_flags import Overrides

NAMES = ["gpu-lab-1", "gpu-eu-1", "gpu-eu-2", "gpu-us-1", "cpu-dev"]


# -- choosing contexts ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("entries", "expected"), [
    (["gpu-*"], ["gpu-lab-1", "gpu-eu-1", "gpu-eu-2", "gpu-us-1"]),
    (["gpu-*", "!gpu-lab-*"], ["gpu-eu-1", "gpu-eu-2", "gpu-us-1"]),
    (["cpu-dev", "gpu-eu-2"], ["gpu-eu-2", "cpu-dev"]),  # the kubeconfig's order, not the list's
    (["!gpu-*"], ["cpu-dev"]),  # only exclusions: every context but those
    (["*"], NAMES),
    (["gpu-eu-?"], ["gpu-eu-1", "gpu-eu-2"]),
])
def test_names_globs_and_exclusions_in_kubeconfig_order(entries: list[str], expected: list[str]) -> None:
    compare(selection.choose(NAMES, entries), expected=expected)


@pytest.mark.parametrize(("entries", "message"), [
    (["gpu-ap-*"], "--contexts: 'gpu-ap-*' matches no context of the kubeconfig"),
    (["gpu-*", "!gpu-ap-*"], "--contexts: 'gpu-ap-*' matches no context of the kubeconfig"),
    (["gpu-eu-1", "!gpu-eu-*"], "--contexts selects no context"),
])
def test_a_selection_that_cannot_be_what_was_meant_is_usage(entries: list[str], message: str) -> None:
    with pytest.raises(UsageError) as raised:
        selection.choose(NAMES, entries)
    compare(raised.value.message, expected=message)


@pytest.mark.parametrize("text", ["", " ", ",", "a,,b", "a,!"])
def test_an_empty_list_or_entry_is_usage(text: str) -> None:
    with pytest.raises(UsageError):
        selection.patterns(text)


def test_a_literal_name_with_glob_characters_matches_itself() -> None:
    compare(selection.choose(["ctx[1]", "ctx1"], ["ctx[1]"]), expected=["ctx[1]", "ctx1"])  # the name, and the glob


# -- the waves file -----------------------------------------------------------------------------------------

GOOD = """
apiVersion: aicr.run/v1alpha1
kind: Waves
waves:
  - name: canary
    contexts: [gpu-lab-1]
  - name: eu
    contexts: ["gpu-eu-*"]
  - name: rest
    contexts: ["*"]
soak: 1h30m
maxFailures: 1
"""


def test_a_waves_file_assigns_each_context_to_the_first_wave_that_names_it() -> None:
    parsed = waves.parse(GOOD)
    compare((parsed.soak_seconds, parsed.soak_text, parsed.max_failures), expected=(5400.0, "1h30m", 1))
    compare([(w.name, members) for w, members in waves.assign(parsed, NAMES)], expected=[
        ("canary", ["gpu-lab-1"]), ("eu", ["gpu-eu-1", "gpu-eu-2"]), ("rest", ["gpu-us-1", "cpu-dev"])])


def test_defaults_soak_0_and_max_failures_0() -> None:
    parsed = waves.parse("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{name: all, contexts: ['*']}]\n")
    compare((parsed.soak_seconds, parsed.max_failures), expected=(0.0, 0))


@pytest.mark.parametrize(("change", "words"), [
    (GOOD.replace("soak: 1h30m", "soak: 1d"), "soak: "),
    (GOOD.replace("soak: 1h30m", "soak: -5m"), "soak: must not be negative"),
    (GOOD + "parallel: 3\n", "unknown key parallel"),
    (GOOD.replace("    contexts: [gpu-lab-1]", "    contexts: [gpu-lab-1]\n    soak: 5m"), "unknown key waves[0].soak"),
    (GOOD.replace("maxFailures: 1", "maxFailures: -1"), "maxFailures"),
    (GOOD.replace("maxFailures: 1", "maxFailures: yes"), "maxFailures"),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: []\n", "at least one wave"),
    ("apiVersion: aicr.run/v1alpha1\nkind: Waves\n", "at least one wave"),
    (GOOD.replace("kind: Waves", "kind: Wave"), "kind must be Waves"),
    (GOOD.replace("name: eu", "name: canary"), "wave 'canary': two waves have that name"),
    (GOOD.replace('contexts: ["gpu-eu-*"]', "contexts: gpu-eu-1"), "wave 'eu': contexts must be a list"),
    ("- just\n- a list\n", "not a Waves document"),
    ("waves: [", "not YAML"),
])
def test_a_malformed_file_is_usage_naming_the_key_or_wave(change: str, words: str) -> None:
    with pytest.raises(UsageError) as raised:
        waves.parse(change, "w.yaml")
    assert raised.value.message.startswith("--waves w.yaml: ") and words in raised.value.message, raised.value.message


@pytest.mark.parametrize(("file", "message"), [
    ("waves: [{name: a, contexts: ['gpu-ap-*']}]",
     "--waves: wave 'a': 'gpu-ap-*' matches no context of the kubeconfig"),
    ("waves: [{name: a, contexts: ['gpu-*']}, {name: b, contexts: ['gpu-eu-1']}]",
     "--waves: wave 'b' selects only contexts claimed by earlier waves"),
])
def test_a_wave_that_selects_nothing_of_its_own_is_usage(file: str, message: str) -> None:
    parsed = waves.parse(f"apiVersion: aicr.run/v1alpha1\nkind: Waves\n{file}\n")
    with pytest.raises(UsageError) as raised:
        waves.assign(parsed, NAMES)
    compare(raised.value.message, expected=message)


def test_a_file_that_is_not_a_regular_file_is_refused(tmp_path: Any) -> None:
    with pytest.raises(UsageError) as raised:
        waves.load(str(tmp_path))
    assert "not a regular file" in raised.value.message or "cannot read" in raised.value.message


# -- the runner -----------------------------------------------------------------------------------------------

class StandIn(fleet.Fleet):
    """A fleet whose sessions are stand-ins: the runner's own behaviour, without a cluster."""

    def session(self, context: str, deadline: Any) -> Any:
        return deadline  # the work gets its cluster's deadline as its `cluster`


def stand_in(parallel: int, contexts: list[str] | None = None) -> StandIn:
    return StandIn(context_source, None, Overrides(), contexts or NAMES, parallel)


def test_at_most_parallel_clusters_at_once_and_outcomes_in_kubeconfig_order() -> None:
    running, most = [0], [0]
    lock = threading.Lock()

    def work(turn: fleet.Turn) -> str:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return turn.context.upper()

    outcomes = stand_in(2).run(work)
    compare([(o.context, o.value) for o in outcomes], expected=[(n, n.upper()) for n in NAMES])
    compare(most[0], expected=2)


def test_one_clusters_error_is_its_own_and_a_bug_is_internal() -> None:
    def work(turn: fleet.Turn) -> str:
        if turn.context == "gpu-eu-1":
            raise AicrError(Code.FORBIDDEN, "no")
        if turn.context == "gpu-eu-2":
            raise KeyError("oops")
        return "ok"

    outcomes = {o.context: o for o in stand_in(16).run(work)}
    compare(outcomes["gpu-lab-1"].value, expected="ok")
    compare(outcomes["gpu-eu-1"].error.code if outcomes["gpu-eu-1"].error else None, expected=Code.FORBIDDEN)
    error = outcomes["gpu-eu-2"].error
    assert error is not None and error.code == Code.INTERNAL and "KeyError" in error.message


def test_a_cluster_that_outlives_its_deadline_is_timeout_and_delays_no_other() -> None:
    release = threading.Event()

    def work(turn: fleet.Turn) -> str:
        if turn.context == "gpu-eu-1":
            release.wait(30)  # hangs where no socket timeout reaches
        return "ok"

    started = time.monotonic()
    events = list(stand_in(2).events(work, seconds=lambda context: 0.5))
    took = time.monotonic() - started
    release.set()
    outcomes = {e.context: e for e in events if isinstance(e, fleet.Outcome)}
    compare(sorted(outcomes), expected=sorted(NAMES))
    error = outcomes["gpu-eu-1"].error
    assert error is not None and error.code == Code.TIMEOUT and "of this command" in error.message, error
    assert all(outcomes[n].value == "ok" for n in NAMES if n != "gpu-eu-1")
    assert took < 0.5 + fleet.GRACE_SECONDS + 0.5, took
    # The stuck worker was replaced: the other four still ran two at a time, not one.
    compare(events[-1].context if isinstance(events[-1], fleet.Outcome) else None, expected="gpu-eu-1")


def test_notes_arrive_as_they_happen() -> None:
    def work(turn: fleet.Turn) -> int:
        turn.note("halfway")
        return 1

    events = list(stand_in(1, ["a", "b"]).events(work))
    compare([(type(e).__name__, e.context) for e in events],
            expected=[("Note", "a"), ("Outcome", "a"), ("Note", "b"), ("Outcome", "b")])


LATE_WRITER = """
import atexit, sys, threading, time
atexit.register(time.sleep, 0.6)  # registered first, so run last: after every clean-up, a late writer's chance
from aicr_core.session import kubeconfig
from aicr_core.session.connection_flags import Overrides
from aicr_core.session.deadline import Deadline
from kubernetes.config import kube_config
kubeconfig.load_settings(sys.argv[1], Overrides(), Deadline(10))

def late() -> None:  # a fleet worker left behind, loading its cluster's key data while the process exits
    time.sleep(0.3)
    try:
        kube_config._create_temp_file_with_content(b"late key data", force_recreate=True)
    except OSError:
        pass

threading.Thread(target=late, daemon=True).start()
"""


def test_a_key_file_written_after_the_exits_clean_up_is_removed_too(tmp_path: Path) -> None:
    import base64
    import subprocess
    import sys

    kc = tmp_path / "kubeconfig"
    data = base64.b64encode(b"not a real key").decode()
    kc.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "certificate-authority-data": data}}],
        "users": [{"name": "u", "user": {"client-certificate-data": data, "client-key-data": data}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.run([sys.executable, "-c", LATE_WRITER, str(kc)], env={**os.environ, "TMPDIR": str(tmp)},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*")) == [], proc.stderr


# -- interrupted (SIGINT, SIGTERM) ------------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def handlers_back() -> Any:
    """A signal leaves the fleet's handler in place (the command is printing); the test's process gets its own back."""
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)


class Session:
    """A stand-in session: what the fan-out reads of one (writes_sent) and sets (hold_writes)."""

    def __init__(self) -> None:
        self.writes_sent = 0
        self.hold_writes: Any = None


class SessionStandIn(fleet.Fleet):
    def session(self, context: str, deadline: Any) -> Any:
        return Session()


def signals_after(event: threading.Event, *signums: int) -> threading.Thread:
    """Once `event` is set, these signals to this very process, 0.3 s apart (the handler runs on the main thread)."""
    def send() -> None:
        event.wait(10)
        for signum in signums:
            time.sleep(0.3)
            os.kill(os.getpid(), signum)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def held_turn(sends_a_write: bool) -> tuple[Any, threading.Event, threading.Event, list[Session]]:
    """Work whose first cluster's turn blocks (after sending a write, if asked) until released; the others return."""
    started, release = threading.Event(), threading.Event()
    sessions: list[Session] = []

    def work(turn: fleet.Turn) -> str:
        if turn.context != "a":
            return "ran"
        sessions.append(turn.session)
        if sends_a_write:
            turn.session.writes_sent = 1
        started.set()
        release.wait(10)
        return "written" if sends_a_write else "read"

    return work, started, release, sessions


def test_a_signal_leaves_every_turn_that_sent_no_write_at_once() -> None:
    work, started, release, _ = held_turn(sends_a_write=False)
    begun = time.monotonic()
    with interruption.deferred() as stop:
        signals_after(started, signal.SIGTERM)
        outcomes = SessionStandIn(context_source, None, Overrides(), ["a", "b", "c"], 1).run(work, interruption=stop)
    took = time.monotonic() - begun
    release.set()
    compare([(o.context, o.value, o.error.code if o.error else None, o.write_unanswered) for o in outcomes],
            expected=[("a", None, Code.INTERRUPTED, False), ("b", None, Code.INTERRUPTED, False),
                      ("c", None, Code.INTERRUPTED, False)])
    assert outcomes[0].error is not None and "(SIGTERM) during its turn, before it sent any write" in \
        outcomes[0].error.message
    assert outcomes[1].error is not None and "(SIGTERM) before its turn" in outcomes[1].error.message
    compare((stop.exit_code, stop.name), expected=(143, "SIGTERM"))
    assert took < 0.3 + 1.5, took


def test_a_turn_whose_write_was_sent_finishes_and_its_session_sends_no_other() -> None:
    work, started, release, sessions = held_turn(sends_a_write=True)
    with interruption.deferred() as stop:
        signals_after(started, signal.SIGINT)
        threading.Timer(1.0, release.set).start()  # the write's answer comes after the signal
        events = list(SessionStandIn(context_source, None, Overrides(), ["a", "b", "c"], 1).events(
            work, interruption=stop))
    outcomes = {e.context: e for e in events if isinstance(e, fleet.Outcome)}
    compare(outcomes["a"].value, expected="written")
    for context in ("b", "c"):
        error = outcomes[context].error
        assert error is not None and error.code == Code.INTERRUPTED and "(Ctrl-C) before its turn" in error.message
    compare(sessions[0].hold_writes(), expected=True)  # the session's gate: no new write after the signal


def test_a_second_signal_leaves_a_write_unanswered_saying_it_may_be_stored() -> None:
    work, started, release, _ = held_turn(sends_a_write=True)
    begun = time.monotonic()
    with interruption.deferred() as stop:
        signals_after(started, signal.SIGINT, signal.SIGTERM)
        outcomes = {o.context: o for o in SessionStandIn(context_source, None, Overrides(), ["a", "b"], 1).run(
            work, interruption=stop)}
    took = time.monotonic() - begun
    release.set()
    error = outcomes["a"].error
    assert error is not None and error.code == Code.INTERRUPTED, outcomes
    assert outcomes["a"].write_unanswered and "twice (Ctrl-C, then SIGTERM)" in error.message, error.message
    assert "may be stored" in error.message
    compare((outcomes["b"].write_unanswered, stop.exit_code), expected=(False, 130))  # the first signal's
    assert took < 0.6 + 1.5, took


def test_a_held_session_sends_no_write(tmp_path: Path) -> None:
    from aicr_core.session import kube
    from aicr_core.session.deadline import Deadline

    from support.fake_apiserver import Respond, fake_apiserver

    with fake_apiserver(tmp_path, [Respond(200, {"metadata": {}})]) as server:
        cluster = kube.connect(str(server.kubeconfig(tmp_path / "kc", {"token": "t"})), None, Deadline(10))
        cluster.hold_writes = lambda: True
        with pytest.raises(AicrError) as raised:
            cluster.patch("/apis/g/v1/things/x", {"spec": {}})
        compare((raised.value.code, cluster.writes_sent, len(server.requests)), expected=(Code.INTERRUPTED, 0, 0))
        cluster.hold_writes = lambda: False
        cluster.patch("/apis/g/v1/things/x", {"spec": {}})
        compare((cluster.writes_sent, [r.method for r in server.requests]), expected=(1, ["PATCH"]))


def test_a_signal_at_a_prompt_ends_the_read_and_the_handlers_come_back() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with interruption.deferred() as stop:
        with pytest.raises(interruption.Interrupted), stop.prompting():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # a blocking read of the terminal
        compare((stop.requested, stop.hurried), expected=(True, False))
        os.kill(os.getpid(), signal.SIGTERM)  # the second: the handlers found on entry are back for a third
        time.sleep(0.05)
        compare((stop.hurried, (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))),
                expected=(True, before))
    with interruption.deferred() as quiet:
        pass
    compare((quiet.requested, (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))),
            expected=(False, before))


def test_optional_waves() -> None:
    parsed = waves.parse(GOOD.replace("    contexts: [gpu-lab-1]", "    contexts: [gpu-lab-1]\n    optional: true"))
    compare([w.optional for w in parsed.waves], expected=[True, False, False])
    with pytest.raises(UsageError) as raised:
        waves.parse(GOOD.replace("    contexts: [gpu-lab-1]", "    contexts: [gpu-lab-1]\n    optional: 'yes'"), "w")
    compare(raised.value.message, expected="--waves w: wave 'canary': optional must be true or false (got str)")


def test_two_fan_outs_at_once_each_see_only_their_own_interruption() -> None:
    """No interruption is a module's: the one requested stops its own fan-out, on its own thread, alone."""
    began = {"stopped": threading.Event(), "going on": threading.Event()}
    outcomes: dict[str, list[Any]] = {}

    def run(who: str, stop: interruption.Interruption) -> None:
        def work(turn: fleet.Turn) -> str:
            if turn.context == "a":
                began[who].set()
                time.sleep(0.5)  # the other fan-out's first turn runs meanwhile
            return "ran"

        outcomes[who] = SessionStandIn(context_source, None, Overrides(), ["a", "b", "c"], 1).run(
            work, interruption=stop)

    stopped, going_on = interruption.Interruption(), interruption.Interruption()
    threads = [threading.Thread(target=run, args=("stopped", stopped)),
               threading.Thread(target=run, args=("going on", going_on))]
    for thread in threads:
        thread.start()
    assert all(event.wait(10) for event in began.values())  # both are under way
    stopped.request(signal.SIGTERM)
    for thread in threads:
        thread.join(10)
    compare([(o.context, o.error.code if o.error else o.value) for o in outcomes["stopped"]],
            expected=[("a", Code.INTERRUPTED), ("b", Code.INTERRUPTED), ("c", Code.INTERRUPTED)])
    compare([(o.context, o.value) for o in outcomes["going on"]], expected=[("a", "ran"), ("b", "ran"), ("c", "ran")])
    compare((stopped.exit_code, going_on.requested), expected=(143, False))
