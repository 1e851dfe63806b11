"""Hostile AdmissionReviews and connections against the real `aicr-admission` process (issue 23, item 6).

The webhook runs as tools/admission_testbed.py starts it, on its own: its kubeconfig names a stand-in API
server (support/fake_apiserver.py) that answers the policy file's read with an empty ApprovalPolicy. The
requests are sent straight to it, as the API server (or anyone who reaches its port) would send them:

- a review whose `request.object` is missing, null or not an object was allowed (read as an empty rollout
  that adds nothing): it is denied (fail closed), counted as an error;
- a body of 100,000 `[` got 500 (a RecursionError): it is a bad AdmissionReview, 400, counted;
- connections that each sent one `GET /healthz` and then idled, as many as `--max-connections`, held
  the kubelet's next probe out until `--idle-timeout`: at the cap the longest-idle connection is closed
  to admit the new one.
"""
from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from collections.abc import Iterator
from typing import Any

import pytest
from admission_testbed import Webhook
from testfixtures import compare

from support.fake_apiserver import ByPath, Respond, fake_apiserver, status

POLICY = {"kind": "ConfigMap", "apiVersion": "v1",
          "metadata": {"name": "aicr-approval-policy", "namespace": "aicr-system", "resourceVersion": "1"},
          "data": {"policy.yaml": "apiVersion: aicr.run/v1alpha1\nkind: ApprovalPolicy\npolicies: {}\n"}}
ROLLOUT = {"apiVersion": "operator.aicr.run/v1alpha1", "kind": "RuntimeRollout",
           "metadata": {"name": "rollout-1", "uid": "uid-1", "resourceVersion": "5"},
           "spec": {"runtime": "gpu", "plan": "aicr-plan-0123456789abcdef"}, "status": {"phase": "AwaitingApproval"}}
ERRORS = ("aicr_admission_reviews_total", (("action", "other"), ("verdict", "error")))


@pytest.fixture(scope="module")
def webhook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhook]:
    workdir = tmp_path_factory.mktemp("hostile-webhook")
    script = [ByPath((("/api/v1/namespaces/aicr-system/configmaps/aicr-approval-policy", Respond(200, POLICY)),),
                     status(404, "not found", "NotFound"))]
    with fake_apiserver(workdir, script) as server:
        hook = Webhook(None, workdir / "webhook", server.kubeconfig(workdir / "kubeconfig", {"token": "t"}))
        hook.start("--idle-timeout=10m")
        try:
            yield hook
        finally:
            hook.stop()


def review(request: dict[str, Any]) -> bytes:
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "review-1", "operation": "UPDATE", "name": "rollout-1",
        "userInfo": {"username": "mallory", "groups": ["system:authenticated"]}, **request}}).encode()


def post(hook: Webhook, body: bytes) -> tuple[int, bytes]:
    context = ssl.create_default_context(cafile=str(hook.ca_file))
    conn = http.client.HTTPSConnection("127.0.0.1", hook.port, context=context, timeout=10)
    try:
        conn.request("POST", "/validate", body, {"Content-Type": "application/json"})
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def errors_counted(hook: Webhook) -> float:
    return hook.metrics().get(ERRORS, 0.0)


APPROVED = {**ROLLOUT, "metadata": {**ROLLOUT["metadata"], "resourceVersion": "6"},
            "spec": {**ROLLOUT["spec"], "approval": {"user": "mallory", "expires": "2099-01-01T00:00:00Z",
                                                     "reason": "r"}}}


@pytest.mark.parametrize(("objects", "why"), [
    ({"oldObject": ROLLOUT}, "request.object is missing"),
    ({"oldObject": ROLLOUT, "object": None}, "request.object is JSON null, not an object"),
    ({"oldObject": ROLLOUT, "object": [APPROVED]}, "request.object is a JSON array, not an object"),
    ({"oldObject": ROLLOUT, "object": "approved"}, "request.object is a JSON string, not an object"),
    ({"object": APPROVED}, "request.oldObject is missing"),
    ({"oldObject": None, "object": APPROVED}, "request.oldObject is JSON null, not an object"),
], ids=["object missing", "object null", "object an array", "object a string", "oldObject missing",
        "oldObject null"])
def test_a_review_without_its_objects_is_denied_and_counted_as_an_error(webhook: Webhook, objects: dict[str, Any],
                                                                       why: str) -> None:
    before = errors_counted(webhook)
    code, body = post(webhook, review(objects))
    compare(code, expected=200, suffix=body[:300])
    answer = json.loads(body)["response"]
    compare((answer["allowed"], answer["status"]["message"]), expected=(
        False, f"[INVALID_OBJECT] the AdmissionReview's {why}: there is nothing to decide; refusing (fail closed)"))
    compare(errors_counted(webhook) - before, expected=1.0)


def test_an_honest_review_that_adds_nothing_is_still_allowed(webhook: Webhook) -> None:
    code, body = post(webhook, review({"oldObject": ROLLOUT, "object": ROLLOUT}))
    compare((code, json.loads(body)["response"]["allowed"]), expected=(200, True))


def test_a_body_nested_100000_deep_is_a_bad_review_not_a_500(webhook: Webhook) -> None:
    before = errors_counted(webhook)
    code, body = post(webhook, b"[" * 100_000)
    compare((code, body), expected=(400, b"bad AdmissionReview: it nests deeper than 100 levels\n"))
    compare(errors_counted(webhook) - before, expected=1.0)
    assert not [line for line in webhook.log_lines() if line.get("msg") == "request failed"], webhook.log_tail()


def healthz_kept(hook: Webhook, context: ssl.SSLContext) -> ssl.SSLSocket:
    """A connection that asked GET /healthz once, read its answer, and stays open (keep-alive)."""
    sock = context.wrap_socket(socket.create_connection(("127.0.0.1", hook.port), timeout=10),
                               server_hostname="127.0.0.1")
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: aicr-admission\r\n\r\n")
    answer = b""
    while b"\r\n\r\nok\n" not in answer:
        chunk = sock.recv(4096)
        assert chunk, answer
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer
    return sock


@pytest.mark.parametrize("max_connections", [None, 8], ids=["the default cap", "--max-connections=8"])
def test_idle_connections_at_the_cap_never_keep_a_probe_out(webhook: Webhook, max_connections: int | None,
                                                            record_property: Any) -> None:
    cap = max_connections or 256
    if max_connections is not None:
        webhook.restart("--idle-timeout=10m", f"--max-connections={max_connections}")
    context = ssl.create_default_context(cafile=str(webhook.ca_file))
    idle = [healthz_kept(webhook, context) for _ in range(cap)]  # the cap, full of idle connections
    try:
        started = time.monotonic()
        status_code, text = webhook.get("/readyz")  # the kubelet's probe: a new connection
        took = time.monotonic() - started
        record_property("probe_seconds", round(took, 3))
        compare(status_code, expected=200, suffix=text)
        assert took < 2.0, took
        # the connection closed for it was the longest idle: the first one
        idle[0].settimeout(5)
        compare(idle[0].recv(1), expected=b"")
        evicted = [line for line in webhook.log_lines() if line.get("msg") == "idle connection closed to admit a "
                   "new one"]
        assert evicted and evicted[-1]["maxConnections"] == cap, webhook.log_tail()
    finally:
        for sock in idle:
            sock.close()
        if max_connections is not None:
            webhook.restart("--idle-timeout=10m")
