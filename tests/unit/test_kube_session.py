"""The session's primitives, in-process: pagination, watch events, dry run, access reviews, the request log.

Against the scripted fake server where exact requests matter, and against
the real API server for a real watch.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from testfixtures import ShouldRaise, compare

from aicr_core.errors import AicrError, Code
from aicr_core.session import kube
from aicr_core.session.deadline import Deadline

from support.fake_apiserver import Respond, fake_apiserver


def session(server_kubeconfig: Path, seconds: float = 10) -> kube.KubeSession:
    return kube.connect(str(server_kubeconfig), None, Deadline(seconds))


def test_list_follows_continue_tokens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "requests"
    monkeypatch.setenv("AICR_REQUEST_LOG", str(log))
    pages = [Respond(200, {"metadata": {"resourceVersion": "7", "continue": "abc"}, "items": [{"n": 1}, {"n": 2}]}),
             Respond(200, {"metadata": {"resourceVersion": "7", "continue": "def"}, "items": [{"n": 3}]}),
             Respond(200, {"metadata": {"resourceVersion": "7"}, "items": [{"n": 4}]})]
    with fake_apiserver(tmp_path, pages) as server:
        items, version = session(server.kubeconfig(tmp_path / "kc", {"token": "t"})).list(
            "/apis/g/v1/things", {"labelSelector": "a=b"}, limit=2)
        paths = [r.path for r in server.requests]
    compare((items, version), expected=([{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}], "7"))
    compare(paths, expected=["/apis/g/v1/things?labelSelector=a%3Db&limit=2",
                             "/apis/g/v1/things?labelSelector=a%3Db&limit=2&continue=abc",
                             "/apis/g/v1/things?labelSelector=a%3Db&limit=2&continue=def"])
    compare(log.read_text().splitlines(), expected=[f"GET {p}" for p in paths])


def test_a_deadline_too_far_for_the_timers_is_no_deadline() -> None:
    deadline = Deadline(1e300)  # AICR_DEADLINE_SECONDS=1e300: the interval timer overflowed (INTERNAL)
    with deadline.enforced():
        compare((deadline.bounded, deadline.timeout()), expected=(False, None))


def watch_body(*events: dict[str, object]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def test_watch_yields_events_until_the_stream_ends(tmp_path: Path) -> None:
    events = [{"type": "MODIFIED", "object": {"metadata": {"resourceVersion": "8"}}},
              {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}]
    with fake_apiserver(tmp_path, [Respond(200, watch_body(*events))]) as server:
        cluster = session(server.kubeconfig(tmp_path / "kc", {"token": "t"}))
        got = list(cluster.watch("/apis/g/v1/things", {"fieldSelector": "metadata.name=x", "resourceVersion": "7"}))
        compare(server.requests[0].path,
                expected="/apis/g/v1/things?fieldSelector=metadata.name%3Dx&resourceVersion=7&watch=1")
    compare(got, expected=events)


def test_watch_410_gone_and_junk(tmp_path: Path) -> None:
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version: 1"}}
    script = [Respond(200, watch_body({"type": "ADDED", "object": {}}, gone)), Respond(200, b"not json\n"),
              Respond(200, watch_body({"type": "ERROR", "object": {"code": 500, "message": "boom"}}))]
    with fake_apiserver(tmp_path, script) as server:
        cluster = session(server.kubeconfig(tmp_path / "kc", {"token": "t"}))
        seen = []
        with ShouldRaise(kube.Gone("too old resource version: 1")):
            for event in cluster.watch("/x"):
                seen.append(event["type"])
        compare(seen, expected=["ADDED"])
        with ShouldRaise(AicrError(Code.UNAVAILABLE, "GET /x: a watch event is not JSON")):
            list(cluster.watch("/x"))
        with ShouldRaise(AicrError(Code.UNAVAILABLE, "watch /x: boom")):
            list(cluster.watch("/x"))


def test_dry_run_and_access_reviews_say_what_they_ask(tmp_path: Path) -> None:
    script = [Respond(200, {"metadata": {}}),
              Respond(201, {"status": {"allowed": True}}), Respond(201, {"status": {"allowed": False}})]
    with fake_apiserver(tmp_path, script) as server:
        cluster = session(server.kubeconfig(tmp_path / "kc", {"token": "t"}))
        cluster.patch("/apis/g/v1/things/x", {"spec": {}}, dry_run=True)
        allowed = cluster.can_i("update", group="operator.aicr.run", resource="runtimerollouts",
                                subresource="approve", name="r")
        denied = cluster.can_i("patch", group="operator.aicr.run", resource="runtimerollouts", name="r")
        requests = [(r.method, r.path, dict(r.headers).get("Content-Type")) for r in server.requests]
    compare((allowed, denied), expected=(True, False))
    compare(requests, expected=[
        ("PATCH", "/apis/g/v1/things/x?dryRun=All&fieldValidation=Strict", "application/merge-patch+json"),
        ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "application/json"),
        ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "application/json")])

