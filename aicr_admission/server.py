"""The webhook's HTTPS server: the standard library's `http.server`, with the limits it lacks.

`http.server` parses requests well but protects against nothing (docs/webhook.md,
"Why the standard library's server", compares it with aiohttp and kopf). This module adds:

- The TLS handshake happens in the connection's own thread, bounded by
  `handshake_timeout` (CPython keeps one deadline for the whole handshake).
  An SSL listening socket would shake hands inside `accept()`, where one
  client that stalls its handshake blocks every other connection.
- One deadline per connection covers the request line, the headers and the
  body: before every read the socket's timeout is set to what is left of it.
  A plain socket timeout applies to each read, so a client that trickles a
  byte at a time would hold a worker for as long as it likes.
- A bounded request: a body over `max_body` bytes is refused with 413 before
  it is read, a body without Content-Length (chunked) with 411, and no more
  than `max_body` + `MAX_HEAD` bytes are ever read from one connection.
- At most `max_inflight` connections are served at once; further clients wait
  in the listen backlog until a worker is free.
- One request per connection (`Connection: close`): an idle keep-alive
  connection would hold a worker, and closing idle ones races with the
  client's next request (which the API server would not retry).
- Graceful stop: stop accepting, let the requests in flight finish (each is
  bounded by its deadline).

It knows nothing of admission: routes map (method, path) to a function from
`Request` to `Response`.
"""
from __future__ import annotations

import http.server
import io
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

MAX_HEAD = 64 * 1024  # request line and headers together

Log = Callable[..., None]


@dataclass(frozen=True)
class Limits:
    request_timeout: float = 5.0  # seconds for handshake, request and response together
    handshake_timeout: float = 3.0
    max_body: int = 4 * 1024 * 1024  # an AdmissionReview carries the object twice (each at most ~1.5 MiB)
    max_inflight: int = 16


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]
    body: bytes
    started: float  # time.monotonic() when the connection was accepted
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


class Server:
    def __init__(self, address: str, port: int, context: Callable[[], ssl.SSLContext],
                 routes: Mapping[tuple[str, str], Route], limits: Limits = Limits(), log: Log | None = None) -> None:
        self.context, self.routes, self.limits = context, dict(routes), limits
        self.log = log or (lambda *a, **k: None)
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self._listener = socket.create_server((address, port), family=family, backlog=128)
        self.port: int = self._listener.getsockname()[1]
        self._slots = threading.BoundedSemaphore(limits.max_inflight)
        self._lock = threading.Lock()
        self._active: set[threading.Thread] = set()

    def serve(self, stop: threading.Event) -> None:
        """Accept connections until `stop` is set, then let those in flight finish."""
        self._listener.settimeout(0.2)  # so that `stop` is seen promptly
        try:
            while not stop.is_set():
                if not self._slots.acquire(timeout=0.2):
                    continue
                try:
                    raw, peer = self._listener.accept()
                except TimeoutError:
                    self._slots.release()
                    continue
                except OSError as err:  # out of file descriptors, say: wait a little rather than spin
                    self._slots.release()
                    self.log("accept failed", level="error", error=str(err))
                    stop.wait(0.1)
                    continue
                thread = threading.Thread(target=self._connection, args=(raw, peer), daemon=True,
                                          name=f"conn-{peer[0]}:{peer[1]}")
                with self._lock:
                    self._active.add(thread)
                thread.start()
        finally:
            self._listener.close()
            self._drain()

    def _drain(self) -> None:
        ends = time.monotonic() + self.limits.request_timeout + 1.0
        with self._lock:
            threads = list(self._active)
        for thread in threads:
            thread.join(max(0.0, ends - time.monotonic()))

    def _connection(self, raw: socket.socket, peer: tuple[Any, ...]) -> None:
        started = time.monotonic()
        deadline = started + self.limits.request_timeout
        conn: socket.socket = raw
        try:
            raw.settimeout(min(self.limits.handshake_timeout, self.limits.request_timeout))
            conn = self.context().wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
            try:
                conn.do_handshake()
            except TimeoutError:
                raise TimeoutError(f"TLS handshake not completed within {raw.gettimeout():g}s") from None
            _Exchange(conn, peer, self, deadline, started)
        except (OSError, ValueError) as err:  # ssl.SSLError and TimeoutError are OSErrors
            self.log("connection dropped", level="warning", peer=f"{peer[0]}:{peer[1]}",
                     error=str(err) or type(err).__name__, afterMs=round((time.monotonic() - started) * 1000))
        finally:
            try:
                conn.close()
            finally:
                raw.close()
                self._slots.release()
                with self._lock:
                    self._active.discard(threading.current_thread())


class TooLarge(OSError):
    """More bytes than a request may have: the connection is dropped."""


class _DeadlineReader(io.RawIOBase):
    """Reads from the socket with what is left of the deadline as the timeout, and at most `allowance` bytes."""

    def __init__(self, sock: socket.socket, deadline: float, allowance: int) -> None:
        self.sock, self.deadline, self.allowance = sock, deadline, allowance

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("request not received within the request timeout")
        if self.allowance <= 0:
            raise TooLarge("request larger than the limit")
        self.sock.settimeout(left)
        view = memoryview(buffer)[:self.allowance]
        count = self.sock.recv_into(view)
        self.allowance -= count
        return count


class _DeadlineWriter(io.RawIOBase):
    """Sends with what is left of the deadline (a client that does not read cannot hold the worker)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline = sock, deadline

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("response not sent within the request timeout")
        self.sock.settimeout(left)
        self.sock.sendall(data)
        return len(data)


class _Exchange(http.server.BaseHTTPRequestHandler):
    """One request and its response on one connection; parsing is http.server's."""

    protocol_version = "HTTP/1.1"
    server_version = "aicr-admission"
    sys_version = ""

    def __init__(self, conn: socket.socket, peer: tuple[Any, ...], owner: Server, deadline: float,
                 started: float) -> None:
        self.owner, self.deadline, self.started = owner, deadline, started
        super().__init__(conn, peer, None)  # type: ignore[arg-type]  # runs setup, handle, finish

    def setup(self) -> None:
        self.connection = self.request
        allowance = MAX_HEAD + self.owner.limits.max_body
        self.rfile = io.BufferedReader(_DeadlineReader(self.request, self.deadline, allowance))
        self.wfile = _DeadlineWriter(self.request, self.deadline)  # type: ignore[assignment]

    def handle(self) -> None:
        self.close_connection = True
        self.handle_one_request()

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        route = self.owner.routes.get((self.command, url.path))
        if route is None:
            known = any(path == url.path for _, path in self.owner.routes)
            self._send(Response.text("method not allowed" if known else "not found", 405 if known else 404))
            return
        body = b""
        if self.command == "POST":
            if "Transfer-Encoding" in self.headers:
                self._send(Response.text("a body needs a Content-Length", 411))
                return
            try:
                length = int(self.headers.get("Content-Length", "0"))
                if length < 0:
                    raise ValueError(length)
            except ValueError:
                self._send(Response.text("bad Content-Length", 400))
                return
            if length > self.owner.limits.max_body:
                self._send(Response.text(f"the body may have at most {self.owner.limits.max_body} bytes", 413))
                return
            body = self.rfile.read(length)
            if len(body) < length:
                return  # the client went away mid-body
        request = Request(self.command, url.path, urllib.parse.parse_qs(url.query),
                          {k: v for k, v in self.headers.items()}, body, self.started, time.monotonic())
        try:
            response = route(request)
        except Exception as err:  # noqa: BLE001 - a bug answers 500 (the API server then applies failurePolicy)
            self.owner.log("request failed", level="error", path=url.path, error=f"{type(err).__name__}: {err}")
            response = Response.text("internal error", 500)
        self._send(response)

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(response.body)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # the webhook logs its decisions itself; a line per probe would drown them

    def log_error(self, format: str, *args: Any) -> None:
        self.owner.log("bad request", level="warning", peer=self.address_string(), error=format % args)
