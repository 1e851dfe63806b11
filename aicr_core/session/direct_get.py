"""A GET sent straight on a kept connection of a cluster's pool, its answer read with h11.

A fleet's turn is two GETs. Through urllib3's pool manager, its pool, its response object and
http.client's parsing of the head (the email package), each GET cost about as much CPU as the
TLS handshake itself (docs/fleet.md, "Performance"). Here the pool's own connection is taken
(watched by the deadline of the call, opened anew when idle too long: aicr_core.session.kube),
and urllib3 still opens it: the socket, the shared TLS context, the handshake, the server name
and certificate checks are exactly urllib3's. The request is written and its answer parsed by
h11 (the parser the admission webhook's server uses): its status line and headers, then its
body by Content-Length, by chunks or to the connection's end, never more than the caller's
limit, decoded as urllib3 decodes it (gzip, deflate; we ask for neither). What h11 refuses (a
status outside 100-999, a Transfer-Encoding other than chunked, a malformed length or chunk) is
refused here. A connection is kept only when its answer was read to its end, nothing followed
it, and the server keeps it.

What may block (connect, send, receive) holds the socket's timeout (what is left of the
deadline) and the deadline's watchdog, which shuts the socket: a hung or trickling server
cannot hold the command. Only for pools with no proxy (kube.py decides): a proxy goes through
urllib3's whole path.
"""
from __future__ import annotations

import zlib
from typing import Any, NamedTuple

import h11
from urllib3 import HTTPHeaderDict

MAX_HEAD_BYTES = 256 * 1024  # http.client: 100 headers of at most 64 KiB a line
MAX_HEADERS = 100
_RECEIVE = 1 << 16
_TOO_LONG = 431  # h11's hint when what it holds without a whole event passes max_incomplete_event_size


class Answer(NamedTuple):
    status: int
    reason: str
    fields: list[tuple[str, str]]  # the headers as they came
    body: bytes
    truncated: bool  # the body was longer than the limit for failures: its first bytes only

    @property
    def headers(self) -> HTTPHeaderDict:
        return HTTPHeaderDict(self.fields)


class Malformed(Exception):
    """The server's answer is no HTTP/1.1 as kube-apiserver speaks it (or ended before its end)."""


class TooLarge(Exception):
    """The answer's body is larger than the limit: nothing more was read (`partial`: its first bytes)."""

    def __init__(self, partial: bytes = b"") -> None:
        super().__init__("the answer's body is larger than the limit")
        self.partial = partial


def get(pool: Any, target: str, headers: list[tuple[str, str]], timeout: float | None, limit: int,
        failure_limit: int) -> Answer:
    """GET `target` (path and query) on a connection of `pool`; the whole answer, its body bounded.

    `limit` bounds a success's body (TooLarge beyond it), `failure_limit` a failure's (status >= 400:
    cut to it). The connection goes back to the pool only when the answer was read to its end.
    """
    conn = pool._get_conn()  # the pool's own: watched by the current deadline, checked for idleness and drops
    kept = False
    try:
        if conn.sock is None:
            conn.timeout = timeout  # the connect's (urllib3's create_connection), then the TLS handshake's
            conn.connect()
        sock = conn.sock
        sock.settimeout(timeout)
        http = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
        sock.sendall(_request(http, conn, target, headers))
        answer, kept = _answer(http, sock, limit, failure_limit)
        return answer
    finally:
        if not kept:
            conn.close()
        pool._put_conn(conn)


def _request(http: h11.Connection, conn: Any, target: str, headers: list[tuple[str, str]]) -> bytes:
    """The request's head, in http.client's order (Host first, then Accept-Encoding: identity)."""
    host: str = conn.host
    try:
        host_bytes = host.encode("ascii")
    except UnicodeEncodeError:
        host_bytes = host.encode("idna")
    if ":" in host:  # an IPv6 address
        host_bytes = b"[" + host_bytes + b"]"
    if conn.port != conn.default_port:
        host_bytes += b":%d" % conn.port
    fields = [(b"Host", host_bytes), (b"Accept-Encoding", b"identity")]
    fields += [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]
    head = http.send(h11.Request(method=b"GET", target=target.encode("ascii"), headers=fields))
    end = http.send(h11.EndOfMessage())
    return (head or b"") + (end or b"")


def _answer(http: h11.Connection, sock: Any, limit: int, failure_limit: int) -> tuple[Answer, bool]:
    """The answer read (a stage of bench/fleet_profile.py), and whether its connection may be kept."""
    return _Reading(http, sock).answer(limit, failure_limit)


class _Reading:
    """One answer's events, h11 fed from the socket in large pieces; h11's refusals as Malformed."""

    def __init__(self, http: h11.Connection, sock: Any) -> None:
        self.http = http
        self.sock = sock
        self.closed = False
        self.chunked: bool | None = None  # None until the final answer's head is in: what h11 refuses then is its body

    def next(self) -> Any:
        try:
            while (event := self.http.next_event()) is h11.NEED_DATA:
                chunk = self.sock.recv(_RECEIVE)
                self.closed = not chunk
                self.http.receive_data(chunk)  # b"": the server closed it, which ends an answer without a length
            return event
        except h11.RemoteProtocolError as err:
            raise self._refusal(err) from None

    def _refusal(self, err: h11.RemoteProtocolError) -> Malformed:
        if self.closed:
            return Malformed("the server closed the connection before the end of its answer")
        if self.chunked is None:
            if err.error_status_hint == _TOO_LONG:
                return Malformed(f"the answer's head is longer than {MAX_HEAD_BYTES} bytes")
            return Malformed(f"the answer does not start with an HTTP/1.1 status line and headers: {str(err)[:200]}")
        if err.error_status_hint == _TOO_LONG:
            return Malformed(f"a chunk's size line or the trailers are longer than {MAX_HEAD_BYTES} bytes")
        if self.chunked:
            return Malformed(f"a chunk's size line or its data is malformed: {str(err)[:200]}")
        return Malformed(f"the answer's body is no HTTP/1.1: {str(err)[:200]}")

    def answer(self, limit: int, failure_limit: int) -> tuple[Answer, bool]:
        while isinstance(response := self.next(), h11.InformationalResponse):
            pass  # 1xx (100 Continue): an interim answer, skipped as http.client skips it
        if not isinstance(response, h11.Response):  # the connection's end (h11 gives a Response first, or refuses)
            raise Malformed("the server closed the connection before the end of its answer")
        raw_fields = response.headers.raw_items()  # a list (iterating the Headers themselves is slower)
        if len(raw_fields) > MAX_HEADERS:
            raise Malformed(f"got more than {MAX_HEADERS} headers")
        fields = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in raw_fields]
        by_name: dict[str, str] = {}  # by lower-case name, a repeated one's values joined with `, ` (as urllib3)
        for name, value in fields:
            key = name.lower()
            by_name[key] = f"{by_name[key]}, {value}" if key in by_name else value
        self.chunked = "transfer-encoding" in by_name  # h11 takes no other Transfer-Encoding than chunked
        status = response.status_code
        failure = status >= 400
        bound = failure_limit if failure else limit
        # Both lengths: the chunks say where the body ends (as http.client reads it); such an answer may be
        # meant to split the stream (RFC 9112, 6.3), so nothing else is read from this connection.
        keep = not (self.chunked and "content-length" in by_name)
        declared = by_name.get("content-length")  # h11 took it: digits, one value
        if not self.chunked and not failure and declared and int(declared) > bound:
            raise TooLarge()  # refused before its body is read
        raw, complete = self._body(bound, failure)
        truncated = not complete
        body = _decoded(raw, by_name.get("content-encoding", ""), bound)
        if len(body) > bound:
            if not failure:
                raise TooLarge()
            body, truncated = body[:bound], True
        keep = (keep and not truncated and self.http.their_state is h11.DONE
                and self.http.trailing_data == (b"", False))  # more than the answer: nothing else may read it
        return Answer(status, response.reason.decode("latin-1").strip(), fields, body, truncated), keep

    def _body(self, bound: int, failure: bool) -> tuple[bytes, bool]:
        """The body, and whether it is whole. Past `bound`, TooLarge (a success) or its first `bound`
        bytes (a failure: its status still says what failed; the rest is not read).

        One buffer, not a list of h11's pieces: a server sending one-byte chunks made each body byte cost
        a bytes object and a list slot (about 85 bytes); now about one, and one more for the copy returned
        (docs/performance.md)."""
        body = bytearray()
        while not isinstance(event := self.next(), h11.EndOfMessage):
            if isinstance(event, h11.ConnectionClosed):  # h11 ends a body with EndOfMessage, or refuses
                raise Malformed("the server closed the connection before the end of its answer")
            if isinstance(event, h11.Data):
                body += event.data
                if len(body) > bound:
                    if not failure:
                        raise TooLarge()
                    return bytes(body[:bound]), False
        return bytes(body), True


def _decoded(raw: bytes, encoding: str, bound: int) -> bytes:
    """The body as urllib3 decodes it (gzip, deflate: neither is asked for), at most `bound` + 1 bytes of it."""
    encoding = encoding.strip().lower()
    if not raw or encoding not in ("gzip", "x-gzip", "deflate"):
        return raw
    try:
        if encoding == "deflate":
            try:
                return zlib.decompressobj().decompress(raw, bound + 1)
            except zlib.error:  # raw deflate, as some servers send it
                return zlib.decompressobj(-zlib.MAX_WBITS).decompress(raw, bound + 1)
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, bound + 1)
    except zlib.error as err:
        raise Malformed(f"cannot decode the answer's {encoding} body: {err}") from None
