"""The envelope as a matrix: Host x Origin x credentials x form token x every unsafe method, on every route.

Nothing reaches a write unless every check holds; the headers are on every answer (refusals,
redirects, the event stream included); no answer holds the URL token or a credential of the
kubeconfig. The writes are recorded, not run (`page_actions.run_write`, `run_check` replaced):
the matrix is about who may ask, test_pages.py about what a write says.
"""
from __future__ import annotations

import itertools
from typing import Any

import pytest
from testfixtures import compare

from aicr_dashboard import envelope, page_actions

from support.dashboard_app import ORIGIN, PORT, Served, assert_headers, assert_no_secret, call

ROUTES = ("/", "/static/dashboard.js", "/static/dashboard.css", "/api/rollouts", "/api/rollouts?pending=true",
          "/api/c/ctx/r/rollout-a", "/c/ctx/r/rollout-a", "/c/ctx/r/rollout-a/approve",
          "/c/ctx/r/rollout-a/revoke", "/c/ctx/r/rollout-a/acknowledge", "/c/ctx/r/rollout-a/check", "/events",
          "/no/such/page")
WRITE_ROUTES = {"/c/ctx/r/rollout-a/approve", "/c/ctx/r/rollout-a/revoke", "/c/ctx/r/rollout-a/acknowledge",
                "/c/ctx/r/rollout-a/check"}
UNSAFE = ("POST", "PUT", "PATCH", "DELETE", "OPTIONS")
HOSTS = {"own": f"127.0.0.1:{PORT}", "localhost": f"LocalHost:{PORT}", "foreign": f"rebound.example:{PORT}",
         "other port": "127.0.0.1:9"}
ORIGINS = {"own": ORIGIN, "other port": "http://127.0.0.1:9", "null": "null", "missing": None}
CREDENTIALS = ("cookie", "bearer", "none", "wrong cookie")
CSRF = ("right", "wrong", "missing")


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    calls: list[tuple[str, ...]] = []

    def write(model: Any, context: str, rollout: str, action: str, form: Any, namespace: str) -> Any:
        calls.append((action, context, rollout))
        return page_actions.Done(["recorded"], True, [action, rollout])

    monkeypatch.setattr(page_actions, "run_write", write)
    monkeypatch.setattr(page_actions, "run_check", write)
    return calls


def headers_for(served: Served, host: str, origin: str | None, credentials: str, csrf: str) -> dict[str, str]:
    headers = {"host": host, "content-type": "application/x-www-form-urlencoded"}
    if origin is not None:
        headers["origin"] = origin
    if credentials == "bearer":
        headers["authorization"] = f"Bearer {served.token}"
    return headers


def expected_status(host: str, origin: str, credentials: str, csrf: str, method: str, route: str) -> int:
    if host in ("foreign", "other port"):
        return 421
    if credentials == "none":
        return 401
    if credentials == "wrong cookie":
        return 403
    if origin != "own" or csrf != "right":
        return 403
    if method == "POST" and route in WRITE_ROUTES:
        return 303
    return 405 if route != "/no/such/page" else 404


@pytest.mark.parametrize("route", ROUTES)
def test_every_unsafe_request_passes_every_check_or_writes_nothing(served: Served, recorded: list[Any],
                                                                   route: str) -> None:
    client = served.signed_in()
    cookie = client.cookies.get(envelope.cookie_name(PORT))
    assert cookie
    wrong: dict[str, int] = {}
    for host, origin, credentials, csrf, method in itertools.product(HOSTS, ORIGINS, CREDENTIALS, CSRF, UNSAFE):
        headers = headers_for(served, HOSTS[host], ORIGINS[origin], credentials, csrf)
        if credentials == "cookie":
            headers["cookie"] = f"{envelope.cookie_name(PORT)}={cookie}"
        elif credentials == "wrong cookie":
            headers["cookie"] = f"{envelope.cookie_name(PORT)}=not-a-session"
        token = {"right": served.csrf if credentials != "bearer" else served.dashboard.sessions.bearer.csrf,
                 "wrong": "x" * 43, "missing": None}[csrf]
        body = "reason=because" + (f"&csrf={token}" if token else "")
        before = len(recorded)
        answer = call(served.app, method, route, headers, body.encode())
        expected = expected_status(host, origin, credentials, csrf, method, route)
        if answer.status_code != expected:
            wrong[f"{method} {host} host, {origin} origin, {credentials}, {csrf} csrf"] = answer.status_code
        assert_headers(answer)
        assert_no_secret(answer, served.token)
        if expected != 303:
            assert len(recorded) == before, (method, host, origin, credentials, csrf)
    compare(wrong, expected={})
    # Two hosts (the address, localhost) x two credentials (cookie, bearer), everything else right: 4 writes.
    compare(len(recorded), expected=4 if route in WRITE_ROUTES else 0)


@pytest.mark.parametrize("route", ROUTES)
def test_every_read_needs_the_host_and_credentials(served: Served, route: str) -> None:
    served.dashboard.streams.close_all()  # the event stream ends after its first rows
    client = served.client
    for host in HOSTS:
        for credentials in ("bearer", "none", "wrong"):
            headers = {"host": HOSTS[host]}
            if route == "/events" and credentials == "bearer" and host in ("own", "localhost"):
                served.dashboard.streams.closed = True  # the stream ends after its first rows
            if credentials == "bearer":
                headers["authorization"] = f"Bearer {served.token}"
            elif credentials == "wrong":
                headers["authorization"] = "Bearer " + "y" * 43
            answer = client.get(route, headers=headers, follow_redirects=False)
            assert_headers(answer)
            assert_no_secret(answer, served.token)
            if host in ("foreign", "other port"):
                compare(answer.status_code, expected=421)
            elif credentials != "bearer":
                compare(answer.status_code, expected=401 if credentials == "none" else 403)
                assert "rollout-a" not in answer.text
            else:
                assert answer.status_code in (200, 404, 405), (route, answer.status_code, answer.text)


def test_the_token_is_exchanged_for_a_cookie_only_with_the_right_host(served: Served) -> None:
    bad = served.client.get(f"/?token={served.token}", headers={"host": f"rebound.example:{PORT}"},
                            follow_redirects=False)
    compare((bad.status_code, "set-cookie" in bad.headers), expected=(421, False))
    wrong = served.client.get("/?token=" + "z" * 43, follow_redirects=False)
    compare((wrong.status_code, "set-cookie" in wrong.headers), expected=(403, False))
    good = served.client.get(f"/?token={served.token}", follow_redirects=False)
    compare((good.status_code, good.headers["location"]), expected=(303, "/"))
    cookie = good.headers["set-cookie"]
    assert cookie.startswith(f"aicr_dashboard_{PORT}="), cookie
    for attribute in ("HttpOnly", "SameSite=Strict", "Path=/"):
        assert attribute in cookie, cookie
    assert served.token not in cookie
    assert_headers(good)
    page = served.client.get("/")
    compare(page.status_code, expected=200)
    assert served.token not in page.text


def test_a_body_that_is_no_bounded_urlencoded_form_is_refused(served: Served, recorded: list[Any]) -> None:
    client = served.signed_in()
    own = {"origin": ORIGIN}
    route = "/c/ctx/r/rollout-a/approve"
    json_body = client.post(route, content='{"csrf": "x"}', headers={**own, "content-type": "application/json"})
    multipart = client.post(route, files={"reason": ("r", b"x")}, headers=own)
    large = client.post(route, content="reason=" + "x" * envelope.MAX_BODY + f"&csrf={served.csrf}",
                        headers={**own, "content-type": "application/x-www-form-urlencoded"})
    compare((json_body.status_code, multipart.status_code, large.status_code), expected=(415, 415, 413))
    assert_headers(large)
    compare(recorded, expected=[])


def test_read_only_refuses_every_write_before_the_form_token_and_allows_the_check(read_only: Served,
                                                                                  recorded: list[Any]) -> None:
    client = read_only.signed_in()
    for action in ("approve", "revoke", "acknowledge"):
        answer = client.post(f"/c/ctx/r/rollout-a/{action}", content="reason=x",  # no csrf: refused before
                             headers={"origin": ORIGIN, "content-type": "application/x-www-form-urlencoded"})
        compare((answer.status_code, "the dashboard is read-only" in answer.text), expected=(403, True))
    page = client.get("/c/ctx/r/rollout-a")
    assert "<form method=\"post\" action=\"/c/ctx/r/rollout-a/approve\"" not in page.text
    assert "the dashboard is read-only" in page.text
    checked = client.post("/c/ctx/r/rollout-a/check", data={"csrf": read_only.csrf, "reason": "x"},
                          headers={"origin": ORIGIN}, follow_redirects=False)
    compare(checked.status_code, expected=303)
    compare(recorded, expected=[("approve", "ctx", "rollout-a")])  # the Check's, which writes nothing

