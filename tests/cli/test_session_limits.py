"""The session's limits through the real `kubectl aicr`: a deadline on every thread, answers that are not
the object asked for, bodies too large or too deep (docs/sessions.md)."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from testfixtures import compare

from support.fake_apiserver import ByPath, Flood, Raw, Respond, Silent, Trickle, fake_apiserver
from support.harness import Aicr, aicr_env, error_line
from support.samples import ROLLOUT

R = ROLLOUT["metadata"]["name"]
ROLLOUTS = "/apis/operator.aicr.run/v1alpha1/runtimerollouts"
ME = {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
      "status": {"userInfo": {"username": "alice", "groups": ["aicr:approvers"]}}}
REPORTS = "/api/v1/namespaces/aicr-system/configmaps?"
ROLLOUT_LIST = {"kind": "RuntimeRolloutList", "apiVersion": "operator.aicr.run/v1alpha1",
                "metadata": {"resourceVersion": "1"}, "items": [ROLLOUT]}
CONFIGMAP_LIST = {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []}


# -- item 3: the deadline holds on the worker that reads the reports -----------------------------------

@pytest.mark.parametrize("trickled", ["the reports", "both lists"])
def test_list_ends_at_its_deadline_when_a_worker_trickles(aicr: Aicr, tmp_path: Path, trickled: str) -> None:
    """A byte every half second keeps each socket read alive; the worker's LIST still ends at the deadline."""
    trickle = Trickle(interval=0.5)
    rollouts = trickle if trickled == "both lists" else Respond(200, ROLLOUT_LIST)
    with fake_apiserver(tmp_path, [ByPath(((REPORTS, trickle), (ROLLOUTS, rollouts)))]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr("list", kubeconfig=kc, AICR_DEADLINE_SECONDS="3", timeout=30)
        ended = time.monotonic()
        compare((proc.returncode, error_line(proc)),
                expected=(1, "error: [TIMEOUT] the API calls of this command did not finish within 3s"),
                suffix=proc.stderr)
        assert ended - server.accepted[0] < 3.5, ended - server.accepted[0]
        assert any(r.path.startswith(REPORTS) for r in server.requests), server.requests


def test_request_timeout_bounds_the_worker_too(aicr: Aicr, tmp_path: Path) -> None:
    script = [ByPath(((REPORTS, Trickle(interval=0.5)),), Respond(200, ROLLOUT_LIST))]
    with fake_apiserver(tmp_path, script) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr("list", "--request-timeout", "2s", kubeconfig=kc, timeout=30)
        ended = time.monotonic()
        compare(error_line(proc), expected="error: [TIMEOUT] the API calls of this command did not finish "
                                           "within 2s", suffix=proc.stderr)
        assert ended - server.accepted[0] < 2.5, ended - server.accepted[0]


@pytest.mark.parametrize("signum, code, line", [
    (signal.SIGTERM, 143, ""), (signal.SIGINT, 130, "error: [INTERRUPTED] interrupted")])
def test_a_signal_ends_list_at_once_whatever_its_worker_does(kubectl: str, tmp_path: Path, signum: int,
                                                             code: int, line: str) -> None:
    """No deadline at all (--request-timeout 0), the worker blocked on a silent server: the signal ends it."""
    script = [ByPath(((REPORTS, Silent()),), Respond(200, ROLLOUT_LIST, delay=60))]
    with fake_apiserver(tmp_path, script) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = subprocess.Popen([kubectl, "aicr", "list", "--request-timeout", "0"], env=aicr_env(tmp_path, kc),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        waited = time.monotonic() + 20
        while len(server.requests) < 2 and time.monotonic() < waited:  # both lists sent, both waiting
            time.sleep(0.02)
        assert len(server.requests) == 2, server.requests
        time.sleep(0.2)
        proc.send_signal(signum)  # kubectl execs the plugin: this is the plugin's process
        sent = time.monotonic()
        _, stderr = proc.communicate(timeout=20)
        took = time.monotonic() - sent
    compare((proc.returncode, stderr.strip()), expected=(code, line))
    assert took < 1.0, took


# -- item 4: an answer that is not the object asked for -------------------------------------------------

COMMANDS = {
    "list": (["list"], "GET " + ROLLOUTS),
    "describe": (["describe", R], f"GET /apis/operator.aicr.run/v1alpha1/runtimerollouts/{R}"),
    "approve": (["approve", R, "--reason", "x"], "POST /apis/authentication.k8s.io/v1/selfsubjectreviews"),
    "version": (["version"], "GET /version"),
    "wait": (["wait", R, "--for", "approval"],
             f"GET /apis/operator.aicr.run/v1alpha1/runtimerollouts/{R}"),
}


@pytest.mark.parametrize("body, kind", [(b"[]", "a JSON array"), (b'"hello"', "a JSON string"),
                                        (b"12", "a JSON number")])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_answer_that_is_not_an_object_is_invalid(aicr: Aicr, tmp_path: Path, command: str, body: bytes,
                                                    kind: str) -> None:
    words, request = COMMANDS[command]
    with fake_apiserver(tmp_path, [Respond(200, body)]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr(*words, kubeconfig=kc)
    line = error_line(proc)
    compare((proc.returncode, line.split(": the ")[0], "Traceback" in proc.stderr),
            expected=(1, "error: [INVALID_OBJECT] " + request.split("?")[0], False), suffix=proc.stderr)
    assert line.endswith(f"answered {kind}, not the object asked for"), line


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_redirect_is_unavailable(aicr: Aicr, tmp_path: Path, command: str) -> None:
    words, request = COMMANDS[command]
    redirect = Raw(b"HTTP/1.1 302 Found\r\nLocation: https://login.example.com/\r\nContent-Length: 0\r\n\r\n")
    with fake_apiserver(tmp_path, [redirect]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr(*words, kubeconfig=kc)
    compare((proc.returncode, error_line(proc)),
            expected=(1, f"error: [UNAVAILABLE] {request}: the server answered HTTP 302 (a redirect to "
                         "https://login.example.com/), which no API server sends; is the server address right?"),
            suffix=proc.stderr)


@pytest.mark.parametrize("command", ["list", "describe", "version"])
def test_an_empty_answer_is_invalid(aicr: Aicr, tmp_path: Path, command: str) -> None:
    words, request = COMMANDS[command]
    with fake_apiserver(tmp_path, [Respond(200, b"")]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr(*words, kubeconfig=kc)
    compare((proc.returncode, error_line(proc).split(": the ")[0]),
            expected=(1, "error: [INVALID_OBJECT] " + request), suffix=proc.stderr)
    assert error_line(proc).endswith("answer is empty, not the object asked for")


def test_a_list_without_items_is_invalid(aicr: Aicr, tmp_path: Path) -> None:
    with fake_apiserver(tmp_path, [Respond(200, {"kind": "RuntimeRolloutList", "metadata": {}})]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr("list", kubeconfig=kc)
    compare((proc.returncode, error_line(proc)),
            expected=(1, f"error: [INVALID_OBJECT] GET {ROLLOUTS}: the API server's answer is not a list "
                         "(its items are JSON null, not an array)"), suffix=proc.stderr)


# -- item 5: bounded nesting, bounded size, bounded memory ---------------------------------------------

@pytest.mark.parametrize("command", ["list", "describe", "version", "approve"])
def test_deep_nesting_is_invalid(aicr: Aicr, tmp_path: Path, command: str) -> None:
    words, request = COMMANDS[command]
    with fake_apiserver(tmp_path, [Respond(200, b"[" * 200_000)]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr(*words, kubeconfig=kc)
    compare((proc.returncode, error_line(proc)),
            expected=(1, f"error: [INVALID_OBJECT] {request}: the API server's answer is refused: it nests "
                         "deeper than 100 levels"), suffix=proc.stderr)


def test_nesting_at_the_limit_is_read(aicr: Aicr, tmp_path: Path) -> None:
    """99 levels inside the object (100 with it) parse; the object is then a version answer like any."""
    deep = b'{"gitVersion": "v1.37.0", "x": ' + b"[" * 99 + b"]" * 99 + b"}"
    with fake_apiserver(tmp_path, [Respond(200, deep)]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr("version", "-o", "json", kubeconfig=kc)
    assert "INVALID_OBJECT" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


GIB4 = 4 * 1024 ** 3
FLOOD_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
PEAK_RSS = ("import resource, subprocess, sys\n"
            "proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "sys.stderr.write(proc.stderr)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.exit(proc.returncode)\n")


def flood(declared: bool) -> Flood:
    """A 4 GiB answer, sent as fast as it is read (with its length declared, or up to the close)."""
    head = FLOOD_HEAD + (f"Content-Length: {GIB4}\r\n".encode() if declared else b"Connection: close\r\n")
    return Flood(head + b"\r\n" + b'{"items": ["', b"x" * 65536, GIB4)


@pytest.mark.parametrize("declared", [True, False], ids=["Content-Length", "no length"])
def test_a_huge_answer_is_refused_in_bounded_memory(kubectl: str, tmp_path: Path, declared: bool,
                                                    record_property: Any) -> None:
    """4 GiB offered: refused at the 64 MiB limit (at once when declared), the process's peak RSS printed."""
    with fake_apiserver(tmp_path, [flood(declared)]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = subprocess.run([sys.executable, "-c", PEAK_RSS, kubectl, "aicr", "describe", R],
                              env=aicr_env(tmp_path, kc), capture_output=True, text=True, timeout=60)
    peak_mib = int(proc.stdout) / 1024
    record_property("peak_rss_mib", round(peak_mib))  # in the JUnit report; docs/sessions.md quotes it
    compare((proc.returncode, proc.stderr.strip()),
            expected=(1, f"error: [INVALID_OBJECT] GET /apis/operator.aicr.run/v1alpha1/"
                         f"runtimerollouts/{R}: the API server's answer is larger than 64 MiB, the limit for one "
                         "answer; nothing more was read"))
    assert peak_mib < 320, peak_mib


def test_a_huge_failure_is_still_the_failure(aicr: Aicr, tmp_path: Path) -> None:
    """A 500 whose body is 4 GiB: read up to 1 MiB, then reported by its status, as any 500."""
    head = b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
    with fake_apiserver(tmp_path, [Flood(head + b'{"message": "', b"x" * 65536, GIB4)]) as server:
        proc = aicr("describe", R, kubeconfig=server.kubeconfig(tmp_path / "kc", {"token": "t"}), timeout=60)
    compare((proc.returncode, error_line(proc)), expected=(1, "error: [UNAVAILABLE] HTTP 500 Internal Server Error"),
            suffix=proc.stderr)


@pytest.mark.parametrize("command", ["describe", "approve"])
def test_an_object_that_is_not_the_rollout_asked_for_is_invalid(aicr: Aicr, tmp_path: Path, command: str) -> None:
    """`{}` parses as an object, but it is no rollout R: describe printed a rollout of dashes, exit 0."""
    words = COMMANDS[command][0]
    script = [Respond(200, b"{}")] if command == "describe" else [Respond(201, ME), Respond(200, b"{}")]
    with fake_apiserver(tmp_path, script) as server:
        proc = aicr(*words, kubeconfig=server.kubeconfig(tmp_path / "kc", {"token": "t"}))
    compare((proc.returncode, error_line(proc), proc.stdout), expected=(
        1, f"error: [INVALID_OBJECT] GET /apis/operator.aicr.run/v1alpha1/runtimerollouts/{R}: the API server "
           f"answered an object named 'nothing', not the rollout {R}", ""), suffix=proc.stderr)
