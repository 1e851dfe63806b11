"""The webhook's HTTPS server: an asyncio event loop, h11 to parse HTTP/1.1, and the limits neither has.

kube-apiserver reuses idle connections to a webhook (kubernetes PR #82090),
so a review need not pay a TCP and TLS handshake. On an event loop an idle
keep-alive connection costs a socket and a few KiB, never a worker; the
decision itself runs in a thread (it reads the API server with blocking
calls). docs/webhook.md ("Choosing the server") compares this with uvicorn,
hypercorn and aiohttp: none of them bounds the whole of a request, which is
why the limits below are ours:

- The TLS handshake happens per connection, never in the accept loop (an SSL
  listening socket would shake hands inside `accept()`, where one client that
  stalls blocks all others), bounded as a whole by `handshake_timeout`.
- One deadline per request covers its request line, headers and body, and
  the response: `request_timeout` from the request's first byte (for a
  connection's first request, from the accept, the handshake included). A
  per-read timeout would let a client that trickles a byte at a time hold
  the connection for as long as it likes.
- A bounded request: at most MAX_HEAD bytes of head (431), a body over
  `max_body` refused with 413 before it is read, a chunked body with 411;
  either answer closes the connection (the body was not read).
- At most `max_connections` connections are open at once. At the cap, a
  client waiting in the listen backlog is admitted by closing the connection
  that has been idle longest (between requests, or not yet sent its first
  byte), as production servers do: otherwise 255 connections that each sent
  one `GET /healthz` and then idled kept the kubelet's readiness probe and
  the API server out until `idle_timeout`. Only when every connection is in
  the middle of a request does a new client wait in the backlog. At most
  `max_inflight` requests are decided at once; further requests wait their
  turn (an idle connection holds no worker).
- Keep-alive: an idle connection is closed after `idle_timeout`, which is
  longer than the client's own idle timeout (90 s for kube-apiserver), so
  the client closes first. A server that closes an idle connection races the
  client's next request on it, and kube-apiserver does not retry a POST.
- Draining (the shutdown delay after SIGTERM): every answer carries
  `Connection: close`, so the client's next review opens a new connection,
  to a replica that is not stopping once the endpoints have dropped this one.
  Stop: the listener closes, connections idle since before are closed,
  requests in flight finish (each bounded by its deadline).

It knows nothing of admission: routes map (method, path) to a function from
`Request` to `Response`.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import h11

MAX_HEAD = 64 * 1024  # request line and headers together
READ_CHUNK = 64 * 1024

Log = Callable[..., None]


@dataclass(frozen=True)
class Limits:
    request_timeout: float = 5.0  # seconds for one request: its head, body and response (and handshake, if first)
    handshake_timeout: float = 3.0
    max_body: int = 4 * 1024 * 1024  # an AdmissionReview carries the object twice (each at most ~1.5 MiB)
    max_inflight: int = 16  # requests decided at once
    max_connections: int = 256  # connections open at once, idle ones included
    idle_timeout: float = 120.0  # a kept connection with no request for this long is closed


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]
    body: bytes
    started: float  # time.monotonic() at the request's first byte (a connection's first: when it was accepted)
    received: float  # ... and when the whole request had been read (the TLS handshake and transfer before it)


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "application/json"

    @classmethod
    def json(cls, document: Any, status: int = 200) -> Response:
        return cls(status, json.dumps(document, separators=(",", ":")).encode())

    @classmethod
    def text(cls, text: str, status: int = 200) -> Response:
        return cls(status, (text + "\n").encode(), "text/plain; charset=utf-8")


Route = Callable[[Request], Response]


class ServingCertificate:
    """The TLS context from --tls-cert-file and --tls-private-key-file, reloaded when the files change.

    cert-manager (or whoever fills the Secret) renews the certificate and the
    kubelet updates the mounted files; a webhook that kept the old one would
    refuse every write once it expired. A change is picked up at the next
    connection (checked at most once a second); files caught half-written keep
    the previous context until they read whole.
    """

    def __init__(self, cert_file: str, key_file: str, log: Log | None = None) -> None:
        self.cert_file, self.key_file = cert_file, key_file
        self.log = log or (lambda *a, **k: None)
        self._lock = threading.Lock()
        self._stamp = self._files_stamp()
        self._context = self._load()  # raises at start-up: no certificate, no server
        self._checked = time.monotonic()

    def _files_stamp(self) -> tuple[tuple[int, int], ...]:
        stamps = []
        for path in (self.cert_file, self.key_file):
            try:
                info = os.stat(path)
                stamps.append((info.st_mtime_ns, info.st_size))
            except OSError:
                stamps.append((0, 0))
        return tuple(stamps)

    def _load(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def context(self) -> ssl.SSLContext:
        with self._lock:
            now = time.monotonic()
            if now - self._checked >= 1.0:
                self._checked = now
                stamp = self._files_stamp()
                if stamp != self._stamp:
                    try:
                        self._context, self._stamp = self._load(), stamp
                        self.log("serving certificate reloaded", cert=self.cert_file)
                    except (OSError, ssl.SSLError) as err:
                        self.log("serving certificate unreadable; keeping the previous one", level="warning",
                                 error=str(err))
            return self._context


class RequestTimeout(TimeoutError):
    """The request did not arrive, or its answer could not be sent, within its deadline."""


class _Early(Exception):
    """An answer given before the body was read (the connection closes after it)."""

    def __init__(self, response: Response, started: float) -> None:
        super().__init__(response.status)
        self.response, self.started = response, started


class _Connection:
    """What the stop and the cap need to know of one connection: since when is it idle (between requests,
    nothing of the next received), if it is?"""

    def __init__(self, on_idle: Callable[[], None]) -> None:
        self.idle_since: float | None = None
        self._on_idle = on_idle

    @property
    def idle(self) -> bool:
        return self.idle_since is not None

    def waiting(self) -> None:
        self.idle_since = time.monotonic()
        self._on_idle()

    def receiving(self) -> None:
        self.idle_since = None


class Server:
    def __init__(self, address: str, port: int, context: Callable[[], ssl.SSLContext],
                 routes: Mapping[tuple[str, str], Route], limits: Limits = Limits(), log: Log | None = None,
                 on_connection: Callable[[], None] | None = None) -> None:
        self.context, self.routes, self.limits = context, dict(routes), limits
        self.log = log or (lambda *a, **k: None)
        self.on_connection = on_connection or (lambda: None)  # called for each accepted connection (metrics)
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self._listener = socket.create_server((address, port), family=family, backlog=128)
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self.accepted = 0  # connections accepted so far
        self.evicted = 0  # idle connections closed to admit a new one at the cap
        self._connections: dict[asyncio.Task[None], _Connection] = {}
        self._draining: threading.Event = threading.Event()

    def serve(self, stop: threading.Event, draining: threading.Event | None = None) -> None:
        """Serve until `stop` is set, then finish what is in flight; while `draining` is set, answers close."""
        self._draining = draining or stop
        asyncio.run(self._serve(stop))

    def _closing(self) -> bool:
        return self._draining.is_set()

    async def _serve(self, stop: threading.Event) -> None:
        self._workers = concurrent.futures.ThreadPoolExecutor(self.limits.max_inflight, thread_name_prefix="request")
        self._room = asyncio.Event()  # set when a connection closes or turns idle: the cap may admit a client
        accepting = asyncio.create_task(self._accept())
        try:
            while not stop.is_set():  # a threading.Event (set from a signal handler or a test): polled
                await asyncio.sleep(0.05)
        finally:
            accepting.cancel()
            await asyncio.gather(accepting, return_exceptions=True)
            self._listener.close()
            await self._drain()
            self._workers.shutdown(wait=False)

    async def _drain(self) -> None:
        """Close the connections idle since before the stop; let the others finish their request."""
        for task, connection in list(self._connections.items()):
            if connection.idle:
                task.cancel()
        if self._connections:
            _, pending = await asyncio.wait(list(self._connections), timeout=self.limits.request_timeout + 1.0)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if len(self._connections) >= self.limits.max_connections:
                await self._make_room()
                continue
            try:
                raw, peer = await loop.sock_accept(self._listener)
            except OSError as err:  # out of file descriptors, say: wait a little rather than spin
                self.log("accept failed", level="error", error=str(err))
                await asyncio.sleep(0.1)
                continue
            self.accepted += 1
            self.on_connection()
            connection = _Connection(self._room.set)
            task = asyncio.create_task(self._connection(raw, peer, connection))
            self._connections[task] = connection
            task.add_done_callback(self._closed)

    async def _make_room(self) -> None:
        """At the cap: once a client waits in the backlog, close the longest-idle connection for it; if every
        connection is in a request, wait until one ends or turns idle (the client waits in the backlog)."""
        await _readable(self._listener)  # nobody waiting: nothing to close
        if len(self._connections) < self.limits.max_connections:
            return  # one closed meanwhile: room enough
        idle = [(connection.idle_since, task) for task, connection in self._connections.items()
                if connection.idle_since is not None and not task.done()]
        if not idle:
            self._room.clear()
            await self._room.wait()
            return
        since, task = min(idle, key=lambda pair: pair[0])
        task.cancel()  # it is between requests: nothing is lost (the client opens a new connection)
        await asyncio.wait([task])  # closed at once (no close_notify), and gone from _connections
        self.evicted += 1
        self.log("idle connection closed to admit a new one", level="info",
                 idleMs=round((time.monotonic() - since) * 1000), maxConnections=self.limits.max_connections)

    def _closed(self, task: asyncio.Task[None]) -> None:
        self._connections.pop(task, None)
        self._room.set()

    async def _connection(self, raw: socket.socket, peer: tuple[Any, ...], connection: _Connection) -> None:
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        where = f"{peer[0]}:{peer[1]}"
        reader = asyncio.StreamReader(limit=MAX_HEAD)
        protocol = asyncio.StreamReaderProtocol(reader)
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # asyncio sets it only on sockets it accepts
            transport, _ = await loop.connect_accepted_socket(
                lambda: protocol, raw, ssl=self.context(),
                ssl_handshake_timeout=min(self.limits.handshake_timeout, self.limits.request_timeout))
        except (OSError, ValueError) as err:  # ConnectionAbortedError at the timeout; ssl.SSLError
            raw.close()
            self.log("connection dropped", level="warning", peer=where,
                     error=f"TLS handshake: {err or type(err).__name__}",
                     afterMs=round((time.monotonic() - started) * 1000))
            return
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        graceful = False
        try:
            await self._exchanges(reader, writer, connection, started)
            graceful = True
        except RequestTimeout as err:
            self.log("bad request", level="warning", peer=where, error=str(err))
        except h11.ProtocolError as err:
            self.log("bad request", level="warning", peer=where, error=str(err) or type(err).__name__)
        except OSError as err:
            self.log("connection dropped", level="warning", peer=where, error=str(err) or type(err).__name__,
                     afterMs=round((time.monotonic() - started) * 1000))
        except Exception as err:  # noqa: BLE001 - a bug ends this connection, never the server
            self.log("connection failed", level="error", peer=where, error=f"{type(err).__name__}: {err}")
        finally:
            await _close(writer, graceful)

    async def _exchanges(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                         connection: _Connection, started: float) -> None:
        """Requests and their answers on one connection, until either side closes it."""
        http = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        deadline: float | None = started + self.limits.request_timeout  # the first request's, from the accept
        while True:
            try:
                request = await self._read_request(http, reader, connection, started, deadline)
                if request is None:
                    return  # the client closed, or the connection idled out
                response, early, ends = await self._answer(request), False, request.started
            except _Early as answer:
                response, early, ends = answer.response, True, answer.started
            except h11.RemoteProtocolError as err:
                if http.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                    status = err.error_status_hint
                    await self._send(http, writer, Response.text(str(err) or "bad request", status), True,
                                     time.monotonic() + 1.0)
                raise
            await self._send(http, writer, response, early or self._closing(), ends + self.limits.request_timeout)
            if http.our_state is not h11.DONE or http.their_state is not h11.DONE:
                return  # one side asked to close (Connection: close, HTTP/1.0, an early answer)
            http.start_next_cycle()
            deadline = None  # the next request's deadline starts with its first byte

    async def _read_request(self, http: h11.Connection, reader: asyncio.StreamReader, connection: _Connection,
                            started: float, deadline: float | None) -> Request | None:
        """The next whole request, or None when the client closed (or idled out) between requests."""
        head: h11.Request | None = None
        body = bytearray()
        begun = False  # has any byte of this request arrived?
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                if deadline is None:  # idle: nothing of the next request yet
                    connection.waiting()
                    try:
                        data = await asyncio.wait_for(reader.read(READ_CHUNK), self.limits.idle_timeout)
                    except asyncio.TimeoutError:
                        return None
                    finally:
                        connection.receiving()
                    started = time.monotonic()
                    deadline = started + self.limits.request_timeout
                else:  # a connection's first request, or the rest of one begun
                    if not begun:  # nothing received yet: the stop, or the cap, may close it
                        connection.waiting()
                    try:
                        data = await _read(reader, deadline, self.limits.request_timeout)
                    finally:
                        connection.receiving()
                begun = True
                http.receive_data(data)  # b"" is the end of the stream
            elif isinstance(event, h11.ConnectionClosed):
                return None
            elif isinstance(event, h11.Request):
                if deadline is None:  # it was already buffered (pipelined)
                    started = time.monotonic()
                    deadline = started + self.limits.request_timeout
                head = event
                self._check_framing(event, started)
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                url = urllib.parse.urlsplit(head.target.decode("latin-1"))
                headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in head.headers.raw_items()}
                return Request(head.method.decode("ascii", "replace"), url.path,
                               urllib.parse.parse_qs(url.query), headers, bytes(body), started, time.monotonic())

    def _check_framing(self, head: h11.Request, started: float) -> None:
        """Refuse, before reading it, a body that is chunked or too long."""
        names = {name for name, _ in head.headers}
        if b"transfer-encoding" in names:
            raise _Early(Response.text("a body needs a Content-Length", 411), started)
        length = next((int(value) for name, value in head.headers if name == b"content-length"), 0)
        if length > self.limits.max_body:
            raise _Early(Response.text(f"the body may have at most {self.limits.max_body} bytes", 413), started)

    async def _answer(self, request: Request) -> Response:
        route = self.routes.get((request.method, request.path))
        if route is None:
            known = any(path == request.path for _, path in self.routes)
            return Response.text("method not allowed" if known else "not found", 405 if known else 404)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._workers, route, request)
        except Exception as err:  # noqa: BLE001 - a bug answers 500 (the API server then applies failurePolicy)
            self.log("request failed", level="error", path=request.path, error=f"{type(err).__name__}: {err}")
            return Response.text("internal error", 500)

    async def _send(self, http: h11.Connection, writer: asyncio.StreamWriter, response: Response, close: bool,
                    deadline: float) -> None:
        headers = [("Content-Type", response.content_type), ("Content-Length", str(len(response.body))),
                   ("Server", "aicr-admission")]
        if close:
            headers.append(("Connection", "close"))
        # One write, so one TLS record and one TCP segment where it fits: a head and a body sent apart would
        # wait for the client's delayed ACK (Nagle's algorithm; TCP_NODELAY is set too, see _connection).
        writer.write(b"".join(http.send(event) or b"" for event in (
            h11.Response(status_code=response.status, headers=headers), h11.Data(data=response.body),
            h11.EndOfMessage())))
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise asyncio.TimeoutError
            await asyncio.wait_for(writer.drain(), left)  # a client that does not read cannot hold the connection
        except asyncio.TimeoutError:
            raise RequestTimeout("timed out: the response was not sent within the request timeout") from None


async def _readable(sock: socket.socket) -> None:
    """Until `sock` can be read (a listening socket: a client waits to be accepted), without reading it."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(sock.fileno(), wake)
    try:
        await ready
    finally:
        loop.remove_reader(sock.fileno())


async def _read(reader: asyncio.StreamReader, deadline: float, timeout: float) -> bytes:
    left = deadline - time.monotonic()
    try:
        if left <= 0:
            raise asyncio.TimeoutError
        return await asyncio.wait_for(reader.read(READ_CHUNK), left)
    except asyncio.TimeoutError:
        raise RequestTimeout(f"timed out: the request was not received within the request timeout ({timeout:g}s)") \
            from None


async def _close(writer: asyncio.StreamWriter, graceful: bool) -> None:
    """Close with TLS's close_notify when the client behaved, at once otherwise."""
    if not graceful:
        writer.transport.abort()
        return
    writer.close()
    try:
        await asyncio.wait_for(writer.wait_closed(), 1.0)
    except (asyncio.TimeoutError, OSError):
        writer.transport.abort()
