"""The webhook's HTTPS server under hostile clients: its protections, proven on real sockets.

The server runs in this process on loopback with a real certificate; the
clients are raw sockets that misbehave on purpose (trickle headers or a body,
stall the TLS handshake, send too much). Each test shows the connection is
dropped within its limit AND that a worker is free again for an honest client.
"""
from __future__ import annotations

import http.server
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import envtest
import pytest
from testfixtures import compare

from aicr_admission.server import Limits, Request, Response, Server, ServingCertificate


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pki")
    ca, ca_cert, ca_key = envtest.make_ca("test-ca")
    serving = envtest.issue(ca_cert, ca_key, "webhook", server=True)
    files = {"ca": folder / "ca.crt", "cert": folder / "tls.crt", "key": folder / "tls.key"}
    files["ca"].write_bytes(ca.cert_pem)
    files["cert"].write_bytes(serving.cert_pem)
    files["key"].write_bytes(serving.key_pem)
    return files


class Running:
    def __init__(self, server: Server, pki: dict[str, Path], calls: list[Request]) -> None:
        self.server, self.pki, self.calls = server, pki, calls
        self.logs: list[tuple[str, dict[str, object]]] = []

    def connect(self, handshake: bool = True) -> socket.socket:
        raw = socket.create_connection(("127.0.0.1", self.server.port), timeout=10)
        if not handshake:
            return raw
        context = ssl.create_default_context(cafile=str(self.pki["ca"]))
        return context.wrap_socket(raw, server_hostname="localhost")

    def request(self, method: str = "POST", path: str = "/validate", body: bytes = b"{}",
                headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        """An honest client: the whole request at once, the whole response read, on a connection of its own."""
        with self.connect() as sock:
            status, _, body = exchange(sock, method, path, body, headers)
            return status, body


def exchange(sock: socket.socket, method: str = "POST", path: str = "/validate", body: bytes = b"{}",
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """One request on `sock` (kept open): (status, headers in lower case, body), as Content-Length delimits it."""
    head = {"Host": "localhost", "Content-Type": "application/json", "Content-Length": str(len(body)),
            **(headers or {})}
    sock.sendall(f"{method} {path} HTTP/1.1\r\n".encode()
                 + "".join(f"{k}: {v}\r\n" for k, v in head.items()).encode() + b"\r\n" + body)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a response: {data!r}")
        data += chunk
    raw_head, _, rest = data.partition(b"\r\n\r\n")
    lines = raw_head.decode("latin-1").split("\r\n")
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(fields.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed mid-body")
        rest += chunk
    return int(lines[0].split(" ")[1]), fields, rest


def read_all(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (ssl.SSLError, ConnectionResetError):
        pass
    return data


def parse_response(data: bytes) -> tuple[int, bytes]:
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


@contextmanager
def running(pki: dict[str, Path], limits: Limits, route: Callable[[Request], Response] | None = None,
            draining: threading.Event | None = None) -> Iterator[Running]:
    calls: list[Request] = []

    def echo(request: Request) -> Response:
        calls.append(request)
        return Response.json({"got": len(request.body)})

    certificate = ServingCertificate(str(pki["cert"]), str(pki["key"]))
    routes = {("POST", "/validate"): route or echo, ("GET", "/healthz"): lambda r: Response.text("ok")}
    server = Server("127.0.0.1", 0, certificate.context, routes, limits)
    state = Running(server, pki, calls)
    server.log = lambda msg, **fields: state.logs.append((msg, fields))
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop, draining), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join(10)
        assert not thread.is_alive()


def dropped_after(sock: socket.socket, send: Callable[[int], bytes], started: float, every: float = 0.1,
                  limit: float = 10) -> float:
    """Send `send(i)` every `every` seconds until the server drops the connection; seconds since `started`."""
    sock.settimeout(every)
    i = 0
    while time.monotonic() - started < limit:
        try:
            sock.sendall(send(i))
            i += 1
            if sock.recv(1) == b"":
                break
        except (TimeoutError, ssl.SSLWantReadError):
            continue
        except (OSError, ssl.SSLError):
            break
    return time.monotonic() - started


def test_an_honest_client_is_served(pki: dict[str, Path]) -> None:
    with running(pki, Limits()) as web:
        compare(web.request(body=b'{"a": 1}'), expected=(200, b'{"got":8}'))
        compare(web.request("GET", "/healthz", b""), expected=(200, b"ok\n"))
        compare(web.request("GET", "/nope", b"")[0], expected=404)
        compare(web.request("GET", "/validate", b"")[0], expected=405)
        compare(web.calls[0].body, expected=b'{"a": 1}')


@pytest.mark.parametrize("what", ["headers", "body"])
def test_a_trickling_client_is_dropped_at_the_request_timeout_and_frees_its_worker(pki: dict[str, Path],
                                                                                  what: str) -> None:
    """At most two connections, two clients sending a byte every 0.1 s: both dropped at 1 s; a third is served then."""
    with running(pki, Limits(request_timeout=1.0, handshake_timeout=1.0, max_connections=2)) as web:
        head = b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n"

        def byte(i: int) -> bytes:
            if what == "headers":
                return head[i % len(head):i % len(head) + 1] if i < len(head) - 4 else b"X"
            return head if i == 0 else b"{"

        started = time.monotonic()
        tricklers = [web.connect() for _ in range(2)]
        times: list[float] = []
        threads = [threading.Thread(target=lambda s=s: times.append(dropped_after(s, byte, started)))
                   for s in tricklers]
        for t in threads:
            t.start()
        time.sleep(0.3)  # both workers are now busy with the tricklers
        status, _ = web.request(body=b"{}")
        honest = time.monotonic() - started
        for t in threads:
            t.join()
        for sock in tricklers:
            sock.close()
    compare(status, expected=200)
    # Dropped at the timeout, not before, and long before they would stop (10 s); margins for a busy machine.
    assert all(0.9 <= t <= 2.5 for t in times), times
    assert 0.9 <= honest <= 3.0, honest  # it waited for a worker, which the deadline freed
    compare(web.calls and len(web.calls), expected=1)  # the tricklers never reached the route
    assert any(msg == "bad request" and "timed out" in str(f.get("error")) for msg, f in web.logs), web.logs


def test_a_client_that_stalls_the_tls_handshake_is_dropped_without_blocking_others(pki: dict[str, Path]) -> None:
    with running(pki, Limits(request_timeout=6.0, handshake_timeout=2.0, max_inflight=4)) as web:
        started = time.monotonic()
        silent = web.connect(handshake=False)  # connects, never says hello
        hello = web.connect(handshake=False)
        partial = threading.Thread(target=lambda: times.append(
            dropped_after(hello, lambda i: b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"[i:i + 1] or b"\x00",
                          started, every=0.2)))
        times: list[float] = []
        partial.start()
        compare(web.request(body=b"{}")[0], expected=200)  # meanwhile an honest client is served at once
        honest = time.monotonic() - started
        silent.settimeout(10)
        assert silent.recv(1) == b""
        silent_after = time.monotonic() - started
        partial.join()
        silent.close()
        hello.close()
    assert honest < 1.5, honest  # not held up by the silent client's handshake
    assert 1.9 <= silent_after <= 3.5, silent_after
    assert 1.9 <= times[0] <= 3.5, times  # a handshake trickled byte by byte: one deadline for all of it
    assert sum(msg == "connection dropped" and "handshake" in str(f.get("error")) for msg, f in web.logs) == 2, web.logs


def test_an_oversized_body_is_refused_before_it_is_read(pki: dict[str, Path]) -> None:
    with running(pki, Limits(max_body=1000)) as web:
        compare(web.request(body=b"x" * 1000)[0], expected=200)
        with web.connect() as sock:  # announces 10 MB, sends only the headers: refused at once
            started = time.monotonic()
            sock.sendall(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10000000\r\n\r\n")
            status, body = parse_response(read_all(sock))
            elapsed = time.monotonic() - started
        compare(web.request(body=b"{}", headers={"Transfer-Encoding": "chunked"})[0], expected=411)
    compare((status, body), expected=(413, b"the body may have at most 1000 bytes\n"))
    assert elapsed < 1.0, elapsed
    compare(len(web.calls), expected=1)


def test_headers_beyond_the_limit_end_the_connection(pki: dict[str, Path]) -> None:
    with running(pki, Limits(request_timeout=5.0)) as web:
        with web.connect() as sock:
            started = time.monotonic()
            sock.sendall(b"POST /validate HTTP/1.1\r\nHost: localhost\r\n")
            try:
                for i in range(200):  # ~200 KiB of headers, far past 64 KiB
                    sock.sendall(f"X-Pad-{i}: {'a' * 1000}\r\n".encode())
            except OSError:
                pass
            data = read_all(sock)
            elapsed = time.monotonic() - started
    assert data == b"" or parse_response(data)[0] == 431, data[:200]
    assert elapsed < 2.0, elapsed
    compare(web.calls, expected=[])


def test_stop_lets_the_request_in_flight_finish(pki: dict[str, Path]) -> None:
    entered = threading.Event()

    def slow(request: Request) -> Response:
        entered.set()
        time.sleep(0.5)
        return Response.json({"done": True})

    results: list[tuple[int, bytes]] = []
    certificate = ServingCertificate(str(pki["cert"]), str(pki["key"]))
    server = Server("127.0.0.1", 0, certificate.context, {("POST", "/validate"): slow}, Limits())
    stop = threading.Event()
    serving = threading.Thread(target=server.serve, args=(stop,))
    serving.start()
    client = Running(server, pki, [])
    caller = threading.Thread(target=lambda: results.append(client.request(body=b"{}")))
    caller.start()
    assert entered.wait(5)
    stop.set()  # while the request is being handled
    caller.join(5)
    serving.join(5)
    compare(results, expected=[(200, json.dumps({"done": True}, separators=(",", ":")).encode())])
    assert not serving.is_alive()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=1)  # no longer listening


def test_a_renewed_certificate_is_served_without_a_restart(pki: dict[str, Path], tmp_path: Path) -> None:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(pki["cert"].read_bytes())
    key.write_bytes(pki["key"].read_bytes())
    certificate = ServingCertificate(str(cert), str(key))
    first = certificate.context()
    ca, ca_cert, ca_key = envtest.make_ca("renewing-ca")
    renewed = envtest.issue(ca_cert, ca_key, "webhook", server=True)
    cert.write_bytes(renewed.cert_pem)
    key.write_bytes(renewed.key_pem)
    certificate._checked -= 2  # as if a second had passed
    second = certificate.context()
    assert second is not first
    key.write_text("half written")
    certificate._checked -= 2
    assert certificate.context() is second  # a broken pair keeps the previous context


def test_why_not_http_server_as_it_comes(pki: dict[str, Path]) -> None:
    """The standard library alone: on an SSL listening socket the handshake happens inside accept().

    One client that connects and says nothing blocks the accept loop, so an
    honest client cannot even complete its handshake: the reason this module
    shakes hands in each connection's own thread, with a deadline.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(pki["cert"]), str(pki["key"]))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    serving = threading.Thread(target=httpd.serve_forever, daemon=True)
    serving.start()
    silent = socket.create_connection(("127.0.0.1", httpd.server_address[1]))
    time.sleep(0.2)
    client = ssl.create_default_context(cafile=str(pki["ca"]))
    raw = socket.create_connection(("127.0.0.1", httpd.server_address[1]), timeout=1.5)
    with pytest.raises(TimeoutError):
        client.wrap_socket(raw, server_hostname="localhost")  # blocked behind the silent one
    raw.close()
    silent.close()  # unblocks accept(), so that the server can be shut down
    httpd.shutdown()
    httpd.server_close()


# -- persistent connections -----------------------------------------------------------------------------

def test_connections_are_kept_and_an_idle_one_holds_no_worker(pki: dict[str, Path]) -> None:
    """One worker, five kept connections idle between their requests: a sixth client is served at once."""
    with running(pki, Limits(max_inflight=1, max_connections=8)) as web:
        kept = [web.connect() for _ in range(5)]
        for sock in kept:
            status, fields, _ = exchange(sock)
            compare((status, fields.get("connection")), expected=(200, None))  # no Connection: close
        started = time.monotonic()
        compare(web.request()[0], expected=200)
        assert time.monotonic() - started < 1.0
        for sock in kept:  # each kept connection serves its next request on the same socket
            compare(exchange(sock, body=b'{"again": 1}')[0], expected=200)
            sock.close()
        compare(web.server.accepted, expected=6)
        compare(len(web.calls), expected=11)


def test_answers_on_a_kept_connection_never_wait_for_a_delayed_ack(pki: dict[str, Path]) -> None:
    """Head and body in one segment, TCP_NODELAY: not the 40 ms of Nagle's algorithm against a delayed ACK."""
    import statistics

    with running(pki, Limits()) as web:
        with web.connect() as sock:
            took = []
            for _ in range(40):
                started = time.perf_counter()
                compare(exchange(sock, body=b'{"x": "' + b"y" * 2000 + b'"}')[0], expected=200)
                took.append(time.perf_counter() - started)
    assert statistics.median(took) < 0.015, sorted(took)


def test_an_idle_connection_is_closed_after_the_idle_timeout(pki: dict[str, Path]) -> None:
    with running(pki, Limits(idle_timeout=0.5)) as web:
        with web.connect() as sock:
            compare(exchange(sock)[0], expected=200)
            started = time.monotonic()
            sock.settimeout(5)
            compare(read_all(sock), expected=b"")
            idled = time.monotonic() - started
    assert 0.4 <= idled <= 2.0, idled


def test_a_request_trickled_on_a_kept_connection_is_dropped_at_its_own_deadline(pki: dict[str, Path]) -> None:
    """The deadline of a kept connection's next request starts with that request's first byte."""
    with running(pki, Limits(request_timeout=1.0, idle_timeout=10.0)) as web:
        with web.connect() as sock:
            compare(exchange(sock)[0], expected=200)
            time.sleep(1.5)  # idle for longer than the request timeout: still kept
            started = time.monotonic()
            took = dropped_after(sock, lambda i: b"POST /validate HTTP/1.1\r\n"[i:i + 1] or b"X", started)
    assert 0.9 <= took <= 2.5, took
    compare(len(web.calls), expected=1)


def test_while_draining_every_answer_closes_its_connection_and_new_ones_are_still_served(
        pki: dict[str, Path]) -> None:
    draining = threading.Event()
    with running(pki, Limits(), draining=draining) as web:
        with web.connect() as sock:
            compare(exchange(sock)[1].get("connection"), expected=None)
            draining.set()
            status, fields, _ = exchange(sock)
            compare((status, fields.get("connection")), expected=(200, "close"))
            sock.settimeout(5)
            compare(read_all(sock), expected=b"")  # and the server closed it after that answer
        with web.connect() as sock:  # a new connection during the delay is accepted and answered
            status, fields, _ = exchange(sock)
            compare((status, fields.get("connection")), expected=(200, "close"))


def test_stop_closes_idle_connections_and_finishes_the_request_in_flight(pki: dict[str, Path]) -> None:
    entered = threading.Event()

    def slow(request: Request) -> Response:
        entered.set()
        time.sleep(0.5)
        return Response.json({"done": True})

    certificate = ServingCertificate(str(pki["cert"]), str(pki["key"]))
    server = Server("127.0.0.1", 0, certificate.context, {("POST", "/validate"): slow}, Limits())
    stop = threading.Event()
    serving = threading.Thread(target=server.serve, args=(stop,))
    serving.start()
    client = Running(server, pki, [])
    idle = client.connect()
    results: list[tuple[int, dict[str, str], bytes]] = []
    busy = client.connect()
    caller = threading.Thread(target=lambda: results.append(exchange(busy)))
    caller.start()
    assert entered.wait(5)
    stop.set()
    stopped = time.monotonic()
    caller.join(5)
    serving.join(5)
    assert not serving.is_alive()
    assert time.monotonic() - stopped < 2.0  # it did not wait for the connection that sent nothing
    compare([(s, f.get("connection"), b) for s, f, b in results], expected=[(200, "close", b'{"done":true}')])
    idle.settimeout(2)
    compare(read_all(idle), expected=b"")
    idle.close()
    busy.close()


def test_at_the_cap_the_longest_idle_connection_makes_room_never_one_in_a_request(pki: dict[str, Path]) -> None:
    """Two connections allowed: one in a slow request, one idle. A third client is served at once, in the idle
    one's place; the request in flight finishes. With both in requests, a new client waits its turn."""
    entered, release = threading.Event(), threading.Event()

    def slow(request: Request) -> Response:
        entered.set()
        release.wait(10)
        return Response.json({"done": True})

    def open_connections(count: int) -> None:
        ends = time.monotonic() + 5
        while len(client.server._connections) != count and time.monotonic() < ends:
            time.sleep(0.01)
        compare(len(client.server._connections), expected=count)

    with running(pki, Limits(max_connections=2), slow) as client:
        busy = client.connect()
        results: list[tuple[int, dict[str, str], bytes]] = []
        threads = [threading.Thread(target=lambda: results.append(exchange(busy)))]
        threads[0].start()
        assert entered.wait(5)
        idle = client.connect()
        compare(exchange(idle, "GET", "/healthz", b"")[0], expected=200)  # now idle, kept open
        started = time.monotonic()
        with client.connect() as newcomer:
            compare(exchange(newcomer, "GET", "/healthz", b"")[0], expected=200)
        assert time.monotonic() - started < 1.0
        idle.settimeout(2)
        compare(read_all(idle), expected=b"")  # closed to make room
        compare(client.server.evicted, expected=1, suffix=str(client.logs))
        open_connections(1)  # the newcomer's client has closed it: only the one in a request is left
        entered.clear()
        second = client.connect()
        threads.append(threading.Thread(target=lambda: results.append(exchange(second))))
        threads[1].start()
        assert entered.wait(5)  # both connections in a request: a third client waits in the backlog
        waiting = client.connect(handshake=False)
        waiting.settimeout(0.5)
        context = ssl.create_default_context(cafile=str(pki["ca"]))
        with pytest.raises((TimeoutError, ssl.SSLError, OSError)):
            context.wrap_socket(waiting, server_hostname="localhost")  # no handshake: not accepted yet
        compare(client.server.evicted, expected=1, suffix=str(client.logs))  # no connection in a request closed
        release.set()
        for thread in threads:
            thread.join(5)
        compare([r[0] for r in results], expected=[200, 200])
        for sock in (busy, second, waiting):
            sock.close()
