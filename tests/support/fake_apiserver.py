"""A scripted HTTPS server that fails the way real API servers and networks fail.

For what a real kube-apiserver will not do on request: answer after a chosen
delay, trickle its answer a byte at a time, reset the connection, speak
plain HTTP on a TLS port, or never answer at all. Each request gets the
next `Action` of the script (the last one repeats); every request is
recorded with its headers and the time it arrived.
"""
from __future__ import annotations

import json
import socket
import ssl
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import envtest


@dataclass(frozen=True)
class Respond:
    status: int = 200
    body: Any = field(default_factory=dict)  # JSON-encoded unless bytes
    delay: float = 0.0


@dataclass(frozen=True)
class Trickle:
    """Send `data` one byte per `interval` seconds (after TLS, if the server speaks it)."""

    data: bytes = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
    interval: float = 1.0


@dataclass(frozen=True)
class Reset:
    """Close the connection with a TCP reset once the request is in."""


@dataclass(frozen=True)
class Silent:
    """Read the request and never answer."""


@dataclass(frozen=True)
class ByPath:
    """The first action whose path prefix the request's path starts with, else `default`.

    For commands that send requests from several threads, whose order is not fixed.
    """

    routes: tuple[tuple[str, Respond | Trickle | Reset | Silent | Endless], ...]
    default: Respond | Trickle | Reset | Silent | Endless = field(default_factory=Respond)


@dataclass(frozen=True)
class Raw:
    """Send these bytes as the whole answer (head and body), then close the connection."""

    data: bytes


@dataclass(frozen=True)
class Flood:
    """Send `head`, then `chunk` again and again, `total` bytes in all, as fast as the client reads."""

    head: bytes
    chunk: bytes
    total: int


@dataclass(frozen=True)
class Endless:
    """A list page of `count` copies of `item` whose `metadata.continue` is a new token every time: a list
    that never ends."""

    count: int = 500
    item: Any = field(default_factory=dict)


Action = Respond | Trickle | Reset | Silent | ByPath | Raw | Flood | Endless


def status(code: int, message: str, reason: str = "") -> Respond:
    """A Kubernetes `Status` failure, as the API server sends it."""
    return Respond(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                          "reason": reason, "code": code})


@dataclass
class Request:
    method: str
    path: str
    headers: list[tuple[str, str]]
    at: float  # time.monotonic() when its head was read
    client: str = ""  # the common name of the client certificate presented on its connection, if any
    connection: int = 0  # which connection of the server's (1, 2, ...) it came on


class FakeApiServer:
    def __init__(self, workdir: Path, script: Sequence[Action], *, tls: bool = True,
                 raw_trickle: float | None = None) -> None:
        """`raw_trickle`: before any TLS, send a garbage byte every so many seconds (a stuck handshake)."""
        self.script, self.tls, self.raw_trickle = list(script), tls, raw_trickle
        self.requests: list[Request] = []
        self.accepted: list[float] = []  # time.monotonic() of each connection
        self.workdir = workdir
        ca, ca_cert, ca_key = envtest.make_ca("fake-apiserver-ca")
        serving = issue_server(ca_cert, ca_key)
        (workdir / "ca.crt").write_bytes(ca.cert_pem)
        (workdir / "serving.crt").write_bytes(serving.cert_pem)
        (workdir / "serving.key").write_bytes(serving.key_pem)
        self.ca_pem = ca.cert_pem
        self._ca = (ca_cert, ca_key)
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(workdir / "serving.crt", workdir / "serving.key")
        self.context.verify_mode = ssl.CERT_OPTIONAL  # let clients present their certificates
        self.context.load_verify_locations(cadata=ca.cert_pem.decode())
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._open: list[socket.socket] = []

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> FakeApiServer:
        self.listener.settimeout(0.1)  # here, not in the thread: a stop before the thread runs closes it
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        self.listener.close()
        for conn in list(self._open):
            try:
                conn.close()
            except OSError:
                pass
        for thread in self._threads:
            thread.join(timeout=5)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted.append(time.monotonic())
            self._open.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn, len(self.accepted)), daemon=True)
            thread.start()
            self._threads.append(thread)

    # -- one connection ------------------------------------------------------------------------------
    def _serve(self, raw: socket.socket, connection: int = 0) -> None:
        try:
            if self.raw_trickle is not None:
                self._trickle(raw, b"\x16" * 10_000, self.raw_trickle)
                return
            if not self.tls:  # a plain HTTP server on the TLS port answers the handshake with an HTTP error
                raw.recv(4096)
                raw.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                raw.close()
                return
            conn = self.context.wrap_socket(raw, server_side=True)
            self._open.append(conn)
            client = _common_name(conn.getpeercert())
            reader = conn.makefile("rb")
            while not self._stop.is_set():
                request = self._read_request(reader)
                if request is None:
                    return
                request.client, request.connection = client, connection
                index = len(self.requests)
                self.requests.append(request)
                action = self.script[min(index, len(self.script) - 1)]
                if not self._act(conn, action):
                    return
        except (OSError, ssl.SSLError, ValueError):
            return

    def _read_request(self, reader: Any) -> Request | None:
        line = reader.readline()
        if not line:
            return None
        method, path, _ = line.decode("latin-1").split(" ", 2)
        headers: list[tuple[str, str]] = []
        while True:
            header = reader.readline().decode("latin-1").rstrip("\r\n")
            if not header:
                break
            name, _, value = header.partition(":")
            headers.append((name.strip(), value.strip()))
        at = time.monotonic()
        length = int(next((v for n, v in headers if n.lower() == "content-length"), "0"))
        if length:
            reader.read(length)
        return Request(method, path, headers, at)

    def _act(self, conn: socket.socket, action: Action) -> bool:
        """Carry out one action; False when the connection is done with."""
        if isinstance(action, ByPath):
            path = self.requests[-1].path
            action = next((a for prefix, a in action.routes if path.startswith(prefix)), action.default)
        if isinstance(action, Endless):
            page = {"kind": "List", "apiVersion": "v1", "metadata": {"continue": f"page-{len(self.requests)}"},
                    "items": [action.item] * action.count}
            action = Respond(200, page)
        if isinstance(action, Raw):
            conn.sendall(action.data)
            conn.shutdown(socket.SHUT_RDWR)  # closed, as the docstring says: an answer without a length ends here
            return False
        if isinstance(action, Flood):
            conn.sendall(action.head)
            sent = 0
            while sent < action.total and not self._stop.is_set():
                conn.sendall(action.chunk)
                sent += len(action.chunk)
            return False
        if isinstance(action, Respond):
            if self._stop.wait(action.delay):
                return False
            body = action.body if isinstance(action.body, bytes) else json.dumps(action.body).encode()
            head = (f"HTTP/1.1 {action.status} X\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n").encode()
            conn.sendall(head + body)
            return True
        if isinstance(action, Trickle):
            self._trickle(conn, action.data, action.interval)
            return False
        if isinstance(action, Reset):
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
            return False
        self._stop.wait()  # Silent
        return False

    def _trickle(self, conn: socket.socket, data: bytes, interval: float) -> None:
        for byte in data:
            if self._stop.wait(interval):
                return
            conn.sendall(bytes([byte]))

    # -- what a client needs ---------------------------------------------------------------------------
    def client_certificate(self, name: str) -> envtest.KeyPair:
        """A client certificate this server accepts (it requests one, and verifies what it gets)."""
        return envtest.issue(*self._ca, name)

    def kubeconfig(self, path: Path, user: dict[str, Any], *, insecure: bool = False) -> Path:
        cluster: dict[str, Any] = {"server": self.url}
        if insecure:
            cluster["insecure-skip-tls-verify"] = True
        else:
            cluster["certificate-authority-data"] = envtest.b64(self.ca_pem)
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": cluster}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}]}))
        return path


def _common_name(peer: Any) -> str:
    """The CN of a verified peer certificate (ssl's getpeercert() form), else ""."""
    for rdn in (peer or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return ""


def issue_server(ca_cert: Any, ca_key: Any) -> envtest.KeyPair:
    return envtest.issue(ca_cert, ca_key, "fake-apiserver", server=True)


@contextmanager
def fake_apiserver(workdir: Path, script: Sequence[Action], **kwargs: Any) -> Iterator[FakeApiServer]:
    server = FakeApiServer(workdir, script, **kwargs).start()
    try:
        yield server
    finally:
        server.stop()
