"""A GET sent straight on a kept connection of a cluster's pool, its answer read here.

A fleet's turn is two GETs. Through urllib3's pool manager, its pool, its response object and
http.client's parsing of the head (the email package), each GET cost about as much CPU as the
TLS handshake itself (docs/fleet.md, "Performance"). Here the pool's own connection is taken
(watched by the deadline of the call, opened anew when idle too long: aicr_core.session.kube),
and urllib3 still opens it: the socket, the shared TLS context, the handshake, the server name
and certificate checks are exactly urllib3's. Only the request's bytes are written and the
answer is read here: its status line and headers, then its body by Content-Length or by chunks,
never more than the caller's limit, decoded as urllib3 decodes it (gzip, deflate; we ask for
neither). A connection is kept only when its answer was read to its end and the server keeps it.

What may block (connect, send, receive) holds the socket's timeout (what is left of the
deadline) and the deadline's watchdog, which shuts the socket: a hung or trickling server
cannot hold the command. Only for pools with no proxy (kube.py decides): a proxy goes through
urllib3's whole path.
"""
from __future__ import annotations

import re
import zlib
from typing import Any, NamedTuple

from urllib3 import HTTPHeaderDict

MAX_HEAD_BYTES = 256 * 1024  # http.client: 100 headers of at most 64 KiB a line
MAX_HEADERS = 100
_RECEIVE = 1 << 16
# What Content-Length and a chunk's size may be: ASCII digits, hex digits (str.isdigit and int(x, 16)
# would also take "²", "0x1f", "+1f" or "1_f", which no HTTP server sends).
_DECIMAL = re.compile(r"[0-9]{1,18}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,15}")


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
        sock.sendall(_request(conn, target, headers))
        answer, kept = _answer(sock, limit, failure_limit)
        return answer
    finally:
        if not kept:
            conn.close()
        pool._put_conn(conn)


def _request(conn: Any, target: str, headers: list[tuple[str, str]]) -> bytes:
    """The request's head, as http.client writes it (Host first, then Accept-Encoding: identity)."""
    host: str = conn.host
    try:
        host_bytes = host.encode("ascii")
    except UnicodeEncodeError:
        host_bytes = host.encode("idna")
    if ":" in host:  # an IPv6 address
        host_bytes = b"[" + host_bytes + b"]"
    if conn.port != conn.default_port:
        host_bytes += b":%d" % conn.port
    lines = [b"GET " + target.encode("ascii") + b" HTTP/1.1", b"Host: " + host_bytes, b"Accept-Encoding: identity"]
    lines += [f"{name}: {value}".encode("latin-1") for name, value in headers]
    return b"\r\n".join(lines) + b"\r\n\r\n"


class _Reader:
    """The bytes of one socket, received in large pieces, taken as lines or counts."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.closed = False

    def _fill(self) -> None:
        chunk = self.sock.recv(_RECEIVE)
        if not chunk:
            self.closed = True
            raise Malformed("the server closed the connection before the end of its answer")
        self.buffer += chunk

    def until(self, mark: bytes, bound: int, what: str) -> bytes:
        """The bytes up to `mark` (taken, the mark too; returned without it), at most `bound` of them."""
        start = 0
        while (end := self.buffer.find(mark, start)) < 0:
            if len(self.buffer) > bound:
                raise Malformed(f"{what} is longer than {bound} bytes")
            start = max(0, len(self.buffer) - len(mark) + 1)
            self._fill()
        if end > bound:
            raise Malformed(f"{what} is longer than {bound} bytes")
        taken = bytes(self.buffer[:end])
        del self.buffer[:end + len(mark)]
        return taken

    def exactly(self, count: int) -> bytes:
        while len(self.buffer) < count:
            self._fill()
        taken = bytes(self.buffer[:count])
        del self.buffer[:count]
        return taken

    def to_the_end(self, bound: int) -> bytes:
        """Everything until the server closes, at most `bound` bytes (TooLarge beyond)."""
        while len(self.buffer) <= bound:
            chunk = self.sock.recv(_RECEIVE)
            if not chunk:
                self.closed = True
                break
            self.buffer += chunk
        if len(self.buffer) > bound:
            raise TooLarge(bytes(self.buffer))
        taken = bytes(self.buffer)
        self.buffer.clear()
        return taken


def _answer(sock: Any, limit: int, failure_limit: int) -> tuple[Answer, bool]:
    reader = _Reader(sock)
    while True:
        head = reader.until(b"\r\n\r\n", MAX_HEAD_BYTES, "the answer's head")
        version, status, reason, fields, headers = _head(head)
        if not 100 <= status < 200 or status == 101:
            break  # 1xx (100 Continue): an interim answer, skipped as http.client skips it
    failure = status >= 400
    bound = failure_limit if failure else limit
    keep = version == b"HTTP/1.1" and "close" not in headers.get("connection", "").lower()
    truncated = False
    try:
        if status in (204, 304):
            raw = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            raw = _chunked(reader, bound, failure)
        elif "content-length" in headers:
            lengths = {part.strip() for part in headers["content-length"].split(",")}
            if len(lengths) != 1 or not _DECIMAL.fullmatch(next(iter(lengths))):
                raise Malformed(f"the answer's Content-Length is {headers['content-length'][:40]!r}")
            length = int(lengths.pop())
            if length > bound:
                raise TooLarge(reader.exactly(bound) if failure else b"")
            raw = reader.exactly(length)
        else:
            raw, keep = reader.to_the_end(bound), False
    except TooLarge as err:
        if not failure:
            raise
        # A failure's body is cut to the limit: its status still says what failed; the connection is not kept.
        raw, keep, truncated = err.partial[:bound], False, True
    body = _decoded(raw, headers.get("content-encoding", ""), bound)
    if len(body) > bound:
        if not failure:
            raise TooLarge()
        body, keep, truncated = body[:bound], False, True
    if reader.buffer:  # more than the answer: nothing else may read from this connection
        keep = False
    return Answer(status, reason, fields, body, truncated), keep


def _head(head: bytes) -> tuple[bytes, int, str, list[tuple[str, str]], dict[str, str]]:
    """The status line's version, status and reason; the headers as they came, and by lower-case name (the
    values of a repeated one joined with `, `, as urllib3 joins them)."""
    status_line, *lines = head.split(b"\r\n")
    parts = status_line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not (parts[1].isdigit() and len(parts[1]) == 3):
        raise Malformed(f"the answer does not start with an HTTP/1.1 status line: {status_line[:80]!r}")
    if len(lines) > MAX_HEADERS:
        raise Malformed(f"got more than {MAX_HEADERS} headers")
    fields: list[tuple[str, str]] = []
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(b":")
        if colon and name and not name[:1].isspace():
            field = (name.decode("latin-1").strip(), value.decode("latin-1").strip())
            fields.append(field)
            key = field[0].lower()
            headers[key] = f"{headers[key]}, {field[1]}" if key in headers else field[1]
    reason = parts[2].decode("latin-1").strip() if len(parts) > 2 else ""
    return parts[0], int(parts[1]), reason, fields, headers


def _chunked(reader: _Reader, bound: int, partial: bool) -> bytes:
    pieces: list[bytes] = []
    size = 0
    while True:
        line = reader.until(b"\r\n", 4096, "a chunk's size line")
        text = line.split(b";", 1)[0].strip()
        if not _HEX.fullmatch(text):
            raise Malformed(f"a chunk's size is {text[:40]!r}")
        count = int(text, 16)
        if count == 0:
            while reader.until(b"\r\n", MAX_HEAD_BYTES, "the answer's trailers"):
                pass  # trailers, ignored as http.client ignores them
            return b"".join(pieces)
        size += count
        if size > bound:
            raise TooLarge(b"".join(pieces) + reader.exactly(count - (size - bound)) if partial else b"")
        pieces.append(reader.exactly(count))
        if reader.exactly(2) != b"\r\n":
            raise Malformed("a chunk does not end with CRLF")


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
