"""The routes, matched on the raw request path (a context is one percent-encoded segment), behind the envelope.

- `GET /`: the inbox; `GET /c/{context}/r/{name}`: a rollout's page (describe's content, the forms
  it admits, the Check, the equivalent commands, the flash of the last write shown once);
- `POST /c/{context}/r/{name}/{approve|revoke|acknowledge}`: the write, 303 back to the page;
  `POST .../check`: the Check, 303 back to the page, which shows the verdicts;
- `GET /api/rollouts[?pending=true]`, `GET /api/c/{context}/r/{name}`: `list -o json`'s and
  `describe -o json`'s documents; `GET /events`: the server-sent events;
- `GET /static/dashboard.js`, `/static/dashboard.css`: our own files (no CDN, nothing inline).

A segment is decoded after the route matched (`/c/gpu-fleet%2Feu-1/r/NAME` is the member
`gpu-fleet/eu-1`). The envelope (`envelope.Envelope`) has checked the request before any of these.
"""
from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, RedirectResponse, Response

from aicr_core.errors import AicrError, Code
from aicr_dashboard import equivalent, page_actions, page_render
from aicr_dashboard.browser_sessions import BrowserSession, Sessions
from aicr_dashboard.envelope import Receive, Scope, Send
from aicr_dashboard.event_stream import Streams
from aicr_dashboard.fleet_model import ClusterLine, FleetModel

STATIC = Path(__file__).resolve().parent / "static"
STATIC_TYPES = {"dashboard.js": "text/javascript; charset=utf-8", "dashboard.css": "text/css; charset=utf-8"}
NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")  # a Kubernetes object's name
WRITE_TITLES = {"approve": "Approve", "revoke": "Revoke", "acknowledge": "Acknowledge"}


@dataclass
class Dashboard:
    """What the routes serve from: the model, the browser sessions, the streams, and how it was started."""

    model: FleetModel
    sessions: Sessions
    streams: Streams
    args: argparse.Namespace  # the dashboard's own flags: the equivalent commands' connection flags
    namespace: str
    read_only: bool


def json_response(document: Any, status: int = 200) -> Response:
    # ensure_ascii, as `-o json`: every control character escaped (\u001b), never raw in an answer.
    return Response(json.dumps(document, indent=2, ensure_ascii=True) + "\n", status,
                    media_type="application/json")


def problem(status: int, title: str, lines: list[str]) -> Response:
    return HTMLResponse(page_render.render("problem.html", title=title, lines=lines, page="problem",
                                           read_only=False), status)


def writes_nothing(path: bytes) -> bool:
    """The unsafe routes that write nothing, allowed with --read-only: the Check."""
    return path.endswith(b"/check") and path.startswith(b"/c/")


class Routes:
    """The ASGI app of the routes (behind the envelope)."""

    def __init__(self, dashboard: Dashboard) -> None:
        self.d = dashboard
        self.static = {name: (STATIC / name).read_bytes() for name in STATIC_TYPES}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.respond(scope)
        await response(scope, receive, send)

    async def respond(self, scope: Scope) -> Response:
        method = scope["method"]
        raw: bytes = (scope.get("raw_path") or scope["path"].encode()).split(b"?", 1)[0]
        parts = raw[1:].split(b"/") if raw != b"/" else []
        try:
            segments = [unquote(p.decode("ascii"), errors="strict") for p in parts]
        except (UnicodeDecodeError, UnicodeError):
            return problem(404, "not found", ["no such page"])
        session: BrowserSession = scope["aicr.session"]
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        reading = method in ("GET", "HEAD")
        match segments:
            case []:
                return self.inbox(session) if reading else self.not_allowed("GET, HEAD")
            case ["static", name] if name in self.static:
                if not reading:
                    return self.not_allowed("GET, HEAD")
                return Response(self.static[name], media_type=STATIC_TYPES[name])
            case ["api", "rollouts"]:
                if not reading:
                    return self.not_allowed("GET, HEAD")
                pending = query.get("pending", ["false"])
                if pending not in (["true"], ["false"]):
                    return json_response({"error": {"code": "USAGE", "message": "pending is true or false"}}, 400)
                unlisted = self.d.model.unlisted()
                if unlisted is not None:  # one cluster, not listed now: list would fail, not print no item
                    return json_response({"error": unlisted}, 503)
                return json_response(self.d.model.listing(pending == ["true"]))
            case ["api", "c", context, "r", name]:
                if not reading:
                    return self.not_allowed("GET, HEAD")
                return await self.describe_json(context, name)
            case ["events"]:
                if not reading:
                    return self.not_allowed("GET, HEAD")
                return self.d.streams.response(self.d.model)
            case ["c", context, "r", name]:
                if not reading:
                    return self.not_allowed("GET, HEAD")
                return await self.rollout_page(session, context, name)
            case ["c", context, "r", name, action] if action in (*page_actions.WRITES, "check"):
                if method != "POST":
                    return self.not_allowed("POST")
                return await self.post(session, scope.get("aicr.form") or {}, context, name, action)
        return problem(404, "not found", ["no such page"])

    @staticmethod
    def not_allowed(allow: str) -> Response:
        return Response("method not allowed\n", 405, headers={"Allow": allow}, media_type="text/plain")

    def known(self, context: str, name: str) -> ClusterLine | None:
        line = self.d.model.line(context)
        return line if line is not None and NAME.fullmatch(name) else None

    # -- pages -----------------------------------------------------------------------------------------

    def inbox(self, session: BrowserSession) -> Response:
        from aicr_dashboard.cli_words import row_words

        rows = [{**row, "words": row_words(row)} for row in self.d.model.inbox()]
        title = f"({len(rows)}) waiting for a person - kubectl aicr dashboard"
        return HTMLResponse(page_render.render("inbox.html", title=title, page="inbox", rows=rows,
                                               clusters=self.d.model.cluster_data(), read_only=self.d.read_only))

    async def rollout_page(self, session: BrowserSession, context: str, name: str) -> Response:
        line = self.known(context, name)
        if line is None:
            return problem(404, "not found", [f"no rollout {name} in a selected cluster {context}"])
        status, description, error = 200, None, None
        try:
            description = await run_in_threadpool(page_actions.describe, self.d.model, context, name,
                                                   self.d.namespace)
        except AicrError as err:
            error = page_actions.error_lines(err)
            status = 404 if err.code == Code.NOT_FOUND and self.d.model.item(context, name) is None else 200
        flash = session.flashes.pop((context, name), None)
        check = session.checks.pop((context, name), None)
        forms = self.forms(session, line, name)
        return HTMLResponse(page_render.render(
            "rollout.html", title=f"{name} in {context} - kubectl aicr dashboard", page="rollout",
            context=context, name=name, d=description, error=error,
            flash=flash[0] if flash else None, flash_ok=flash[1] if flash else False,
            forms=forms, csrf=session.csrf, read_only=self.d.read_only, check_inputs=self.check_inputs(),
            check=check, check_action=check["action"] if check else "approve"), status)

    def forms(self, session: BrowserSession, line: ClusterLine, name: str) -> list[dict[str, Any]]:
        """The write forms: which the rollout admits and the user's RBAC allows, each with its equivalent command."""
        from aicr_core.domain.actions import ACTIONS
        from aicr_core.write_inputs import declared_inputs

        item = self.d.model.item(line.context, name)
        forms = []
        for action_name in page_actions.WRITES:
            action = ACTIONS[action_name]
            why_not = self.why_not(action_name, item, line)
            argv = session.last_form.get((line.context, name, action_name)) or \
                equivalent.placeholder_argv(action_name, name, action.takes_reason)
            plan = self.plan_of(line.context, name)
            forms.append({"action": action_name, "title": WRITE_TITLES[action_name], "why_not": why_not,
                          "offered": why_not is None, "takes_reason": action.takes_reason,
                          "takes_expires": action.takes_expires, "inputs": declared_inputs(action_name),
                          "command": equivalent.command(argv, line.context, single=line.reach is not None,
                                                        plan=plan, args=self.d.args)})
        return forms

    @staticmethod
    def check_inputs() -> list[Any]:
        """The inputs sites declare for any write, once each: the Check's form offers them all."""
        from aicr_core.write_inputs import declared_inputs

        seen: dict[str, Any] = {}
        for action_name in page_actions.WRITES:
            for item in declared_inputs(action_name):
                seen.setdefault(item.name, item)
        return list(seen.values())

    def plan_of(self, context: str, name: str) -> str | None:
        item = self.d.model.item(context, name)
        return item["transition"]["to"] if item else None

    def why_not(self, action_name: str, item: dict[str, Any] | None, line: ClusterLine) -> str | None:
        """Why the page offers no such form (None: it does); the server decides all the same at the write."""
        if self.d.read_only:
            return "the dashboard is read-only"
        if line.may_approve is False:
            return (f"{line.user or 'you'} may not approve, revoke or acknowledge in {line.context}: RBAC grants no "
                    "update on runtimerollouts/approve")
        if item is None:
            return "the rollout is not in this cluster's listing"
        approval = item["approval"]
        if item["phase"] == "Ended":
            return "the rollout has ended"
        if action_name == "approve":
            if approval["user"]:
                return f"approved already by {approval['user']}"
            if item["phase"] != "AwaitingApproval" or not approval["required"]:
                return f"it waits for no approval (phase {item['phase']})"
        if action_name == "revoke" and (not approval["user"] or approval["revocation"]):
            return "there is no approval to revoke"
        if action_name == "acknowledge" and not (item["waitingOn"] and item["waitingForPerson"]):
            return "it waits for no acknowledgement"
        return None

    async def describe_json(self, context: str, name: str) -> Response:
        if self.known(context, name) is None:
            return json_response({"error": {"code": "NOT_FOUND", "message": "no such rollout or context"}}, 404)
        try:
            document = await run_in_threadpool(page_actions.describe, self.d.model, context, name, self.d.namespace)
        except AicrError as err:
            status = 404 if err.code == Code.NOT_FOUND else 502
            return json_response({"error": {"code": str(err.code), "message": err.message,
                                            "details": list(err.details)}}, status)
        return json_response(document)

    # -- writes and the Check ----------------------------------------------------------------------------

    async def post(self, session: BrowserSession, form: dict[str, list[str]], context: str, name: str,
                   action: str) -> Response:
        line = self.known(context, name)
        if line is None:
            return problem(404, "not found", [f"no rollout {name} in a selected cluster {context}"])
        back = RedirectResponse(page_render.rollout_path(context, name), 303)
        if action == "check":
            checked = (form.get("action") or ["approve"])[0]
            if checked not in page_actions.WRITES:
                checked = "approve"
            fields = {k: v for k, v in form.items() if k != "action" and any(v)}  # blank: not given
            done = await run_in_threadpool(page_actions.run_check, self.d.model, context, name, checked, fields,
                                           self.d.namespace)
            argv = done.argv or equivalent.placeholder_argv(checked, name, checked != "acknowledge")
            session.checks[(context, name)] = {
                "action": checked, "lines": done.lines, "ok": done.ok,
                "command": equivalent.command(argv, context, single=line.reach is not None,
                                              plan=self.plan_of(context, name), args=self.d.args, check=True)}
            if done.argv:
                session.last_form[(context, name, checked)] = done.argv
            return back
        done = await run_in_threadpool(page_actions.run_write, self.d.model, context, name, action, form,
                                       self.d.namespace)
        session.flashes[(context, name)] = (done.lines, done.ok)
        if done.argv:
            session.last_form[(context, name, action)] = done.argv
        return back

