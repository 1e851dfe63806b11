"""The dashboard's app in-process (Starlette's test client), its model built from fixture objects.

A fake API server (support.fake_apiserver) serves the same objects to the real `kubectl aicr list`
and `describe`, and to the dashboard's own reads (describe's page, the Check, a write): the JSON
beside the pages can be compared with what the CLI prints for the same objects. The model is fed
as the watch feeds it (`live_listing.LiveRows` with the LIST's objects), without a watch.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from aicr_core.domain import operator_api as api

from support.fake_apiserver import ByPath, FakeApiServer, Respond, fake_apiserver
from support.samples import REPORT, REPORT_DIGEST, ROLLOUT

PORT = 8765
ADDRESS = "127.0.0.1"
BASE = f"http://{ADDRESS}:{PORT}"
ORIGIN = BASE
ROLLOUTS = "/apis/operator.aicr.run/v1alpha1/runtimerollouts"
REPORTS = "/api/v1/namespaces/aicr-system/configmaps"
EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"
HOSTILE = "<script>alert(1)</script>\x1b[2J\u202eevil"
SECRET_TOKEN = "kubeconfig-bearer-secret-0123456789"


def named(name: str, *, phase: str = "AwaitingApproval", deadline: str | None = "2099-01-01T00:00:00Z",
          message: str = "rollout awaiting approval", created: str = "2026-11-30T05:00:00Z",
          **spec: Any) -> dict[str, Any]:
    obj = copy.deepcopy(ROLLOUT)
    obj["metadata"].update({"name": name, "creationTimestamp": created})
    obj["spec"]["deadline"] = deadline
    obj["spec"].update(spec)
    obj["status"].update({"phase": phase, "message": message})
    if deadline is None:
        del obj["spec"]["deadline"]
    return obj


OBJECTS = [
    named("rollout-a", deadline="2099-01-02T00:00:00Z", created="2026-11-30T05:00:00Z"),
    named("rollout-b", deadline="2099-01-01T00:00:00Z", created="2026-11-30T04:00:00Z", message=HOSTILE),
    named("rollout-c", deadline=None, created="2026-11-30T03:00:00Z"),
    named("rollout-d", phase="Progressing", created="2026-11-30T02:00:00Z",
          approval={"user": "bob", "reason": "CHG-1", "expires": "2099-01-01T00:00:00Z"}),
    named("rollout-e", phase="Ended", created="2026-11-30T01:00:00Z"),
]


def report_configmap() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": api.assessment_configmap_name(REPORT_DIGEST), "namespace": "aicr-system",
                         "labels": {"operator.aicr.run/role": "assessment"}},
            "data": {"report.json": REPORT}}


def routes(objects: list[dict[str, Any]], *, user: str = "alice", allowed: bool = True) -> ByPath:
    listing = {"kind": "RuntimeRolloutList", "apiVersion": "operator.aicr.run/v1alpha1",
               "metadata": {"resourceVersion": "100"}, "items": objects}
    review = {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
              "status": {"userInfo": {"username": user, "groups": ["aicr:approvers"]}}}
    access = {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
              "status": {"allowed": allowed}}
    one = tuple((f"{ROLLOUTS}/{o['metadata']['name']}", Respond(200, o)) for o in objects)
    return ByPath((
        *one,
        (ROLLOUTS, Respond(200, listing)),
        (f"{REPORTS}/", Respond(200, report_configmap())),
        (REPORTS, Respond(200, {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {},
                                "items": [report_configmap()]})),
        (EVENTS, Respond(200, {"kind": "EventList", "apiVersion": "events.k8s.io/v1", "metadata": {},
                               "items": [{"type": "Normal", "reason": "Waiting", "note": HOSTILE,
                                          "eventTime": "2026-11-30T05:00:00.000000Z"}]})),
        ("/apis/authentication.k8s.io/v1/selfsubjectreviews", Respond(201, review)),
        ("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", Respond(201, access)),
    ), Respond(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
                     "reason": "NotFound", "message": "not found"}))


@dataclass
class Served:
    """The dashboard app under the test client, and what it was made of."""

    client: TestClient
    app: Any
    token: str
    dashboard: Any
    kubeconfig: Path
    server: FakeApiServer

    def signed_in(self) -> TestClient:
        """The client with the session cookie (the token exchanged)."""
        answer = self.client.get(f"/?token={self.token}", follow_redirects=False)
        assert answer.status_code == 303, answer.text
        return self.client

    @property
    def csrf(self) -> str:
        sessions = self.dashboard.sessions._by_id
        return next(iter(sessions.values())).csrf if sessions else self.dashboard.sessions.bearer.csrf


def dashboard_args(kubeconfig: Path, **more: Any) -> argparse.Namespace:
    return argparse.Namespace(kubeconfig=str(kubeconfig), context=None, operator_namespace="aicr-system",
                              token=None, read_only=False, **more)


def feed(dashboard: Any, context: str, objects: list[dict[str, Any]], session: Any) -> None:
    """The model as a cluster's watch leaves it after its LIST: `LiveRows` over the LIST's objects."""
    from aicr_core.domain.assessments import Assessments, read_reports
    from aicr_core.domain.live_listing import Listed, LiveRows
    from aicr_core.domain.rollout_listing import RolloutFilter
    from aicr_core.session.watch import Change

    reports, warning = read_reports(session, "aicr-system")
    rows = LiveRows(RolloutFilter(include_ended=True), Assessments(reports, "aicr-system", session), warning)
    for update in rows.apply([Change("LISTED", obj) for obj in objects]):
        assert isinstance(update, Listed)
        dashboard.model.listed(context, update.items, session, dict(rows.objects))


def serve(tmp_path: Path, objects: list[dict[str, Any]], *, contexts: tuple[str, ...] = ("ctx",),
          fleet_form: bool = False, read_only: bool = False, user: str = "alice",
          allowed: bool = True) -> Iterator[Served]:
    from aicr_core.session import kube
    from aicr_core.session.deadline import Deadline
    from aicr_dashboard.serving import Member, Selection, build

    with fake_apiserver(tmp_path, [routes(objects, user=user, allowed=allowed)]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": SECRET_TOKEN})
        members = [Member(c, None, f"--context {c}", lambda d: kube.connect(str(kc), None, d)) for c in contexts]
        token = "T" * 43
        app, dashboard, _ = build(Selection(members, fleet_form), dashboard_args(kc), token=token, address=ADDRESS,
                                  port=PORT, read_only=read_only)
        for context in contexts:
            session = kube.connect(str(kc), None, Deadline(30))
            dashboard.model.identity(context, user, allowed, session)
            feed(dashboard, context, objects, session)
        client = TestClient(app, base_url=BASE)  # no lifespan events: the dashboard has none
        yield Served(client, app, token, dashboard, kc, server)
        client.close()
        for conn in list(server._open):  # the sessions keep their connections: end them, or stop() waits 5 s
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)



CSP_NEEDED = ("frame-ancestors 'none'", "script-src 'self'", "style-src 'self'")


def assert_headers(answer: Any) -> None:
    """The envelope's headers, on this answer whatever it is; no CORS header."""
    csp = answer.headers.get("content-security-policy", "")
    for needed in CSP_NEEDED:
        assert needed in csp, (answer.status_code, csp)
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, csp
    assert answer.headers.get("x-content-type-options") == "nosniff", answer.headers
    assert answer.headers.get("referrer-policy") == "same-origin", answer.headers
    assert answer.headers.get("cache-control") == "no-store", answer.headers
    assert not [k for k in answer.headers if k.lower().startswith("access-control-")], answer.headers
    assert "server" not in answer.headers, answer.headers


def assert_no_secret(answer: Any, url_token: str) -> None:
    """Neither the URL token nor the kubeconfig's credential in the answer's head or body."""
    text = answer.content.decode("utf-8", "replace") + "\n".join(f"{k}: {v}" for k, v in answer.headers.items())
    assert url_token not in text, answer.status_code
    assert SECRET_TOKEN not in text, answer.status_code


@dataclass
class Answer:
    """An answer of `call`: what the tests read of it, as of a test client's."""

    status_code: int
    headers: dict[str, str]
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


def call(app: Any, method: str, target: str, headers: dict[str, str], body: bytes = b"") -> Answer:
    """One request straight to the ASGI app (no client, no thread): the envelope's matrix sends thousands."""
    import asyncio

    path, _, query = target.partition("?")
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
             "root_path": "", "client": ("127.0.0.1", 50000), "server": (ADDRESS, PORT),
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    received: list[dict[str, Any]] = []
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        received.append(message)

    asyncio.run(app(scope, receive, send))
    start = next(m for m in received if m["type"] == "http.response.start")
    return Answer(start["status"], {k.decode(): v.decode() for k, v in start.get("headers", [])},
                  b"".join(m.get("body", b"") for m in received if m["type"] == "http.response.body"))
