"""What every request passes before any route, whatever its method: the envelope (docs/dashboard.md).

In order, each refusal a plain-text answer with no data of any cluster:

1. `Host`: one of the dashboard's own (`loopback.allowed_hosts`), else 421, even with a valid token
   (DNS rebinding: a page whose name was made to resolve to 127.0.0.1 sends its own name);
2. who: `GET /?token=TOKEN` with the right token is answered 303 to `/` with a session cookie
   (`HttpOnly; SameSite=Strict; Path=/`, named with the port: two dashboards on one machine keep
   theirs apart); every other request carries that cookie or `Authorization: Bearer TOKEN`, else
   401 (none) or 403 (a wrong one);
3. every method but GET and HEAD: `Origin` one of the dashboard's own (403: a missing, `null` or
   foreign one), then with `--read-only` 403 "the dashboard is read-only" (but for the Check, which
   writes nothing), then the body: `application/x-www-form-urlencoded` (else 415), at most
   MAX_BODY bytes (else 413), parsed by the standard library (`urllib.parse.parse_qs`), and its
   `csrf` field equal to the session's form token (403). The form is handed to the route in the
   scope (`aicr.form`); the session too (`aicr.session`).

And on every answer (pages, JSON, redirects, refusals, the event stream) the headers of HEADERS,
whatever the route set; no CORS header ever.
"""
from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

from aicr_dashboard.browser_sessions import BrowserSession, Sessions

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    # Not no-referrer: with it, browsers send `Origin: null` on the page's own forms.
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
)
_REPLACED = {name for name, _ in HEADERS} | {b"server"}
SAFE_METHODS = ("GET", "HEAD")
FORM_TYPE = "application/x-www-form-urlencoded"
MAX_BODY = 64 * 1024
MAX_FIELDS = 256
READ_ONLY = "the dashboard is read-only: it writes nothing (started with --read-only)"


def cookie_name(port: int) -> str:
    return f"aicr_dashboard_{port}"


def with_headers(send: Send) -> Send:
    """`send` that puts HEADERS on the answer's start (replacing any of the same name, and any CORS one)."""
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            kept = [(k, v) for k, v in message.get("headers", [])
                    if k.lower() not in _REPLACED and not k.lower().startswith(b"access-control-")]
            message = {**message, "headers": [*kept, *HEADERS]}
        await send(message)
    return sending


async def answer(send: Send, status: int, text: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """A plain-text answer (a refusal, a redirect)."""
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def header_values(scope: Scope, name: bytes) -> list[str]:
    return [value.decode("latin-1") for key, value in scope.get("headers", []) if key.lower() == name]


def cookies(scope: Scope) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in header_values(scope, b"cookie"):
        for part in line.split(";"):
            key, sep, value = part.strip().partition("=")
            if sep:
                found.setdefault(key, value)
    return found


class Envelope:
    """The ASGI middleware of the module's doc, around the routes (`app`)."""

    def __init__(self, app: App, *, token: str, hosts: frozenset[str], origins: frozenset[str], port: int,
                 sessions: Sessions, read_only: bool, writes_nothing: Callable[[bytes], bool]) -> None:
        self.app, self.token, self.hosts, self.origins = app, token, hosts, origins
        self.cookie = cookie_name(port)
        self.sessions, self.read_only, self.writes_nothing = sessions, read_only, writes_nothing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # no websockets, no lifespan events of use here
            return
        send = with_headers(send)
        hosts = header_values(scope, b"host")
        if len(hosts) != 1 or hosts[0].lower() not in self.hosts:
            await answer(send, 421, "this Host is not the dashboard's")
            return
        method = scope["method"]
        path: bytes = scope.get("raw_path") or scope["path"].encode()
        path = path.split(b"?", 1)[0]
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if method == "GET" and path == b"/" and "token" in query:
            await self.exchange(send, query["token"])
            return
        session = self.who(scope)
        if not isinstance(session, BrowserSession):
            await answer(send, session, "not signed in: open the URL the dashboard printed"
                         if session == 401 else "wrong credentials: open the URL the dashboard printed")
            return
        scope["aicr.session"] = session
        if method not in SAFE_METHODS:
            refusal = await self.check_write(scope, receive, session, path)
            if refusal is not None:
                await answer(send, *refusal)
                return
        await self.app(scope, receive, send)

    async def exchange(self, send: Send, tokens: list[str]) -> None:
        if len(tokens) != 1 or not hmac.compare_digest(tokens[0].encode(), self.token.encode()):
            await answer(send, 403, "wrong token: open the URL the dashboard printed")
            return
        session = self.sessions.new()
        cookie = f"{self.cookie}={session.id}; HttpOnly; SameSite=Strict; Path=/"
        await answer(send, 303, "signed in", ((b"location", b"/"), (b"set-cookie", cookie.encode())))

    def who(self, scope: Scope) -> BrowserSession | int:
        """The request's session, or the refusal's status: 401 without credentials, 403 with wrong ones."""
        given = False
        for value in header_values(scope, b"authorization"):
            given = True
            scheme, _, credential = value.partition(" ")
            if scheme.lower() == "bearer" and hmac.compare_digest(credential.strip().encode(), self.token.encode()):
                return self.sessions.bearer
        session_id = cookies(scope).get(self.cookie)
        if session_id is not None:
            given = True
            found = self.sessions.find(session_id)
            if found is not None:
                return found
        return 403 if given else 401

    async def check_write(self, scope: Scope, receive: Receive, session: BrowserSession,
                          path: bytes) -> tuple[int, str] | None:
        origins = header_values(scope, b"origin")
        if len(origins) != 1 or origins[0].lower() not in self.origins:
            return 403, "refused: a write must come from the dashboard's own page (Origin)"
        if self.read_only and not self.writes_nothing(path):
            return 403, READ_ONLY
        types = header_values(scope, b"content-type")
        if len(types) != 1 or types[0].split(";", 1)[0].strip().lower() != FORM_TYPE:
            return 415, f"a form must be sent as {FORM_TYPE}"
        lengths = header_values(scope, b"content-length")
        if lengths and (not lengths[0].strip().isdigit() or int(lengths[0]) > MAX_BODY):
            return 413, f"a form may hold at most {MAX_BODY} bytes"
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return 400, "the request ended early"
            body += message.get("body", b"")
            if len(body) > MAX_BODY:
                return 413, f"a form may hold at most {MAX_BODY} bytes"
            if not message.get("more_body"):
                break
        try:
            form = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False,
                            max_num_fields=MAX_FIELDS)
        except (UnicodeDecodeError, ValueError):
            return 400, "the form does not parse (UTF-8, urlencoded, at most 256 fields)"
        csrf = form.get("csrf") or []
        if len(csrf) != 1 or not hmac.compare_digest(csrf[0].encode(), session.csrf.encode()):
            return 403, "refused: the form's token is missing or wrong (reload the page)"
        scope["aicr.form"] = form
        return None
