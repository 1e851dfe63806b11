"""The pages and the JSON, from a model built of fixture objects: what they show, in which order, escaped how.

The JSON is compared key for key with what the real `kubectl aicr list -o json` (`--pending`,
`--contexts`) and `describe -o json` print for the same objects, served by the same fake API server.
A write's outcome is the CLI's own line, shown once: the write itself is replaced here by one that
returns or raises what the core's would (the real write is tests/dashboard/test_dashboard_cluster.py's).
"""
from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from testfixtures import compare

from aicr_core.domain import rollout_write
from aicr_core.errors import AicrError, Code
from aicr_dashboard import page_render

from support.dashboard_app import EVENTS, HOSTILE, OBJECTS, ORIGIN, Served, assert_headers, assert_no_secret, serve
from support.harness import Aicr


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[Served]:
    """One cluster, its context named as the fake server's kubeconfig names it (`fake`)."""
    yield from serve(tmp_path, OBJECTS, contexts=("fake",))


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path, OBJECTS, contexts=("fake",), fleet_form=True)


def cli_json(aicr: Aicr, served: Served, *args: str) -> dict[str, Any]:
    proc = aicr(*args, "-o", "json", kubeconfig=served.kubeconfig)
    assert proc.returncode == 0, proc.stderr
    document: dict[str, Any] = json.loads(proc.stdout)
    return document


def bearer(served: Served) -> dict[str, str]:
    return {"authorization": f"Bearer {served.token}"}


def test_the_json_is_list_and_describe_key_for_key(aicr: Aicr, fake: Served) -> None:
    for query, flags in (("", ()), ("?pending=true", ("--pending",))):
        answer = fake.client.get(f"/api/rollouts{query}", headers=bearer(fake))
        assert_headers(answer)
        compare(answer.json(), expected=cli_json(aicr, fake, "list", *flags))
    names = [i["name"] for i in fake.client.get("/api/rollouts", headers=bearer(fake)).json()["items"]]
    compare(names, expected=["rollout-a", "rollout-b", "rollout-c", "rollout-d"])  # not the ended one
    described = fake.client.get("/api/c/fake/r/rollout-b", headers=bearer(fake))
    compare(described.json(), expected=cli_json(aicr, fake, "describe", "rollout-b"))


def test_the_fleet_json_is_list_across_contexts_key_for_key(aicr: Aicr, fleet: Served) -> None:
    for query, flags in (("", ()), ("?pending=true", ("--pending",))):
        answer = fleet.client.get(f"/api/rollouts{query}", headers=bearer(fleet))
        compare(answer.json(), expected=cli_json(aicr, fleet, "list", "--contexts", "fake", *flags))


def test_a_cluster_not_listed_yet_is_an_error_of_the_fleet_document(tmp_path: Path) -> None:
    for served in serve(tmp_path, OBJECTS, contexts=("fake", "later"), fleet_form=True):
        served.dashboard.model._lines["later"].listed = False
        document = served.client.get("/api/rollouts", headers=bearer(served)).json()
        compare((document["read"], [e["context"] for e in document["errors"]]), expected=(["fake"], ["later"]))
        served.dashboard.model.failed("fake", AicrError(Code.UNAVAILABLE, "cannot connect"))
        document = served.client.get("/api/rollouts", headers=bearer(served)).json()
        compare(document["errors"][0], expected={"context": "fake", "code": "UNAVAILABLE",
                                                 "message": "cannot connect"})
        page = served.client.get("/", headers=bearer(served)).text
        assert "disconnected: [UNAVAILABLE] cannot connect" in page, page
        assert "rollout-a" in page  # its rows kept, marked with the time of its last answer
        assert "(as of " in page


def test_the_inbox_is_soonest_deadline_first_and_only_what_waits(served: Served) -> None:
    page = served.client.get("/", headers=bearer(served))
    assert_headers(page)
    text = page.text
    order = [text.index(f">{name}</a>") for name in ("rollout-b", "rollout-a", "rollout-c")]
    compare(order, expected=sorted(order))
    assert ">rollout-d</a>" not in text and ">rollout-e</a>" not in text  # approved; ended
    assert "<title>(3) waiting for a person" in text
    assert "alice" in text  # who the user is there
    # In the CLI's words (list -o wide's row, its layout found by entry point): the deadline and the time left.
    assert '<td class="deadline">2099-01-02T00:00:00Z (in ' in text, text
    assert '<td class="approval">pending</td>' in text


def test_cluster_text_is_inert_and_escaped_as_the_cli_escapes_it(served: Served) -> None:
    from aicr_core.framework.terminal import safe

    for path in ("/", "/c/ctx/r/rollout-b"):
        text = served.client.get(path, headers=bearer(served)).text
        for raw in ("<script>alert", "\x1b", "\u202e"):
            assert raw not in text, (path, raw)
    page = served.client.get("/c/ctx/r/rollout-b", headers=bearer(served)).text
    cli = safe(HOSTILE, allow_newlines=False)  # what the CLI prints: \x1b[2J, \u202e
    assert cli.replace("<", "&lt;").replace(">", "&gt;") in page, page
    answer = served.client.get("/api/c/ctx/r/rollout-b", headers=bearer(served))
    assert "\x1b" not in answer.text and "\u202e" not in answer.text and "\\u001b" in answer.text
    compare(page_render.shown(HOSTILE), expected=cli)


def test_the_rollout_page_shows_describe_the_forms_and_the_equivalent_command(served: Served) -> None:
    page = served.client.get("/c/ctx/r/rollout-a", headers=bearer(served))
    assert_headers(page)
    text = page.text
    for shown in ("AwaitingApproval", "gpu-operator", "checkpoint training jobs", "verified", "1 manual"):
        assert shown in text, shown
    assert 'action="/c/ctx/r/rollout-a/approve"' in text
    assert 'action="/c/ctx/r/rollout-a/revoke"' not in text  # no approval to revoke
    assert f"kubectl aicr approve rollout-a --reason REASON --context ctx --kubeconfig {served.kubeconfig}" in text
    assert 'name="csrf"' in text


def test_a_forbidden_user_is_offered_no_form(tmp_path: Path) -> None:
    for served in serve(tmp_path, OBJECTS, user="victor", allowed=False):
        text = served.client.get("/c/ctx/r/rollout-a", headers=bearer(served)).text
        assert 'action="/c/ctx/r/rollout-a/approve"' not in text
        assert "victor may not approve" in text


REFUSALS = [
    AicrError(Code.FORBIDDEN, "victor may not approve rollout rollout-a: the API server refused the write (RBAC); "
              "nothing was written", ["not allowed: update runtimerollouts/approve"]),
    AicrError(Code.POLICY_DENIED, "2 policy violation(s); nothing was written",
              ["change-window: outside the window", "reason-format: no ticket"]),
    AicrError(Code.ALREADY_APPROVED, "rollout rollout-a is already approved by bob"),
    AicrError(Code.ENDED, "rollout rollout-a has ended"),
    AicrError(Code.ADMISSION_DENIED, "admission webhook denied: <b>no</b>\x1b[31m"),
    AicrError(Code.CONFLICT, "rollout rollout-a changed"),
    AicrError(Code.POLICY_ERROR, "a policy failed; refusing (fail closed)", ["x: boom"]),
]
# Every other code the core has, in the CLI's line all the same.
REFUSALS += [AicrError(code, f"a refusal coded {code.value}", ["one detail"]) for code in Code
             if code not in {r.code for r in REFUSALS}]


@pytest.mark.parametrize("refusal", REFUSALS, ids=[str(r.code) for r in REFUSALS])
def test_every_refusal_is_the_clis_line_shown_once(served: Served, monkeypatch: pytest.MonkeyPatch,
                                                   refusal: AicrError) -> None:
    from aicr_core.framework.app import AicrApp

    def refused(session: Any, request: Any) -> Any:
        raise refusal

    monkeypatch.setattr(rollout_write, "write", refused)
    client = served.signed_in()
    answer = client.post("/c/ctx/r/rollout-a/approve", data={"csrf": served.csrf, "reason": "CHG 1"},
                         headers={"origin": ORIGIN}, follow_redirects=False)
    compare((answer.status_code, answer.headers["location"]), expected=(303, "/c/ctx/r/rollout-a"))
    stderr = io.StringIO()
    AicrApp(stderr=stderr).print_error(refusal)
    cli_lines = stderr.getvalue().splitlines()
    page = client.get("/c/ctx/r/rollout-a").text
    for line in cli_lines:
        assert line.replace("<", "&lt;").replace(">", "&gt;") in page, (line, page)
    assert "--reason &#39;CHG 1&#39;" in page  # the equivalent command, with the values submitted
    again = client.get("/c/ctx/r/rollout-a").text
    assert cli_lines[0].replace("<", "&lt;").replace(">", "&gt;") not in again  # once


def test_a_write_shows_the_clis_success_line(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    def written(session: Any, request: Any) -> Any:
        seen.append(request)
        data = {"rollout": request.rollout, "user": "alice", "expires": "2099-01-01T00:00:00Z",
                "reason": request.reason, "dryRun": "none"}
        return rollout_write.Written(None, data, ())

    monkeypatch.setattr(rollout_write, "write", written)
    client = served.signed_in()
    client.post("/c/ctx/r/rollout-a/approve", data={"csrf": served.csrf, "reason": "CHG-1", "expires": "2h"},
                headers={"origin": ORIGIN}, follow_redirects=False)
    page = client.get("/c/ctx/r/rollout-a").text
    assert "rollout rollout-a approved by alice until 2099-01-01T00:00:00Z" in page, page[page.find("flash"):][:800]
    compare((seen[0].rollout, seen[0].reason, seen[0].expires.total_seconds(), seen[0].flags["dry_run"]),
            expected=("rollout-a", "CHG-1", 7200.0, "none"))


def test_the_check_shows_each_verdict_and_writes_nothing(served: Served) -> None:
    client = served.signed_in()
    answer = client.post("/c/ctx/r/rollout-a/check", data={"csrf": served.csrf, "reason": "CHG-1"},
                         headers={"origin": ORIGIN}, follow_redirects=False)
    compare(answer.status_code, expected=303)
    page = client.get("/c/ctx/r/rollout-a").text
    assert 'id="verdicts"' in page, page
    assert "kubectl aicr policy check rollout-a --action approve --reason CHG-1 --context ctx" in page
    compare([r.method for r in served.server.requests if r.method not in ("GET", "POST")], expected=[])


def test_a_context_is_one_percent_encoded_segment(tmp_path: Path) -> None:
    compare(page_render.segment("gpu-fleet/eu-1.x"), expected="gpu-fleet%2Feu-1%2Ex")
    compare(page_render.rollout_path("arn:aws:eks:r:1:cluster/x", "r.1"),
            expected="/c/arn%3Aaws%3Aeks%3Ar%3A1%3Acluster%2Fx/r/r%2E1")
    for served in serve(tmp_path, OBJECTS, contexts=("gpu-fleet/eu-1",), fleet_form=True):
        inbox = served.client.get("/", headers=bearer(served)).text
        assert 'href="/c/gpu-fleet%2Feu-1/r/rollout-a"' in inbox
        page = served.client.get("/c/gpu-fleet%2Feu-1/r/rollout-a", headers=bearer(served))
        compare(page.status_code, expected=200)
        assert "rollout-a" in page.text
        compare(served.client.get("/c/gpu-fleet/eu-1/r/rollout-a", headers=bearer(served)).status_code,
                expected=404)


def test_the_events_send_every_row_first_with_ids(served: Served) -> None:
    served.dashboard.streams.closed = True  # the stream ends after its first rows
    answer = served.client.get("/events", headers=bearer(served))
    assert_headers(answer)
    assert_no_secret(answer, served.token)
    compare(answer.headers["content-type"].split(";")[0], expected="text/event-stream")
    events = [block for block in answer.text.split("\n\n") if block.startswith("id:")]
    kinds = [block.splitlines()[1] for block in events]
    compare(kinds, expected=["event: cluster"] + ["event: rollout"] * len(OBJECTS))
    ids = [int(block.splitlines()[0].split(": ")[1]) for block in events]
    compare(ids, expected=sorted(set(ids)))
    first = json.loads(events[1].splitlines()[2].removeprefix("data: "))
    compare((first["context"], first["name"]), expected=("ctx", "rollout-a"))
    assert "\x1b" not in answer.text and "\u202e" not in answer.text


def test_a_view_sends_no_request_but_the_rollout_pages_events(served: Served) -> None:
    served.client.get("/c/ctx/r/rollout-a", headers=bearer(served))  # its report read once, and kept
    before = len(served.server.requests)
    for path in ("/", "/api/rollouts", "/api/rollouts?pending=true", "/static/dashboard.js"):
        compare(served.client.get(path, headers=bearer(served)).status_code, expected=200)
    compare(served.server.requests[before:], expected=[])
    served.client.get("/c/ctx/r/rollout-a", headers=bearer(served))
    compare([r.path.split("?")[0] for r in served.server.requests[before:]], expected=[EVENTS])


def test_a_change_is_an_event_and_a_quiet_stream_a_comment(served: Served) -> None:
    """The stream itself (no client): the first rows, a heartbeat comment, then a change as one event."""
    import asyncio

    from aicr_dashboard.event_stream import Streams

    streams = Streams(heartbeat=0.05)
    model = served.dashboard.model

    async def read() -> list[str]:
        events = streams.events(model)
        got = [await events.__anext__() for _ in range(1 + 1 + len(OBJECTS))]  # a comment, a cluster, the rows
        got.append(await events.__anext__())  # quiet: the heartbeat
        item = model.item("ctx", "rollout-a")
        assert item is not None
        await asyncio.get_running_loop().run_in_executor(None, model.changed, "ctx", {**item, "phase": "Progressing"},
                                                         True)
        got.append(await events.__anext__())
        await events.aclose()
        return got

    got = asyncio.run(read())
    compare((got[0].startswith(":"), got[-2]), expected=(True, ": still here\n\n"))
    lines = got[-1].splitlines()
    compare(lines[1], expected="event: rollout")
    compare({k: json.loads(lines[2].removeprefix("data: "))[k] for k in ("context", "name", "phase")},
            expected={"context": "ctx", "name": "rollout-a", "phase": "Progressing"})
    compare(model._listeners, expected=[])  # the stream, closed, listens no more


def test_one_cluster_not_listed_is_an_error_not_an_empty_list(fake: Served) -> None:
    fake.dashboard.model.failed("fake", AicrError(Code.UNAVAILABLE, "cannot connect to the API server"))
    answer = fake.client.get("/api/rollouts", headers=bearer(fake))
    compare((answer.status_code, answer.json()), expected=(503, {"error": {
        "code": "UNAVAILABLE", "message": "cannot connect to the API server"}}))
