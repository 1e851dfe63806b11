"""GETs sent straight on a kept connection (aicr_core.session.direct_get), in-process against the scripted server:
the answer's framing (length, chunks, to the end), its decoding, its limits, its refusals, and the URLs left to urllib3.
"""
from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest
from testfixtures import ShouldRaise, compare

from aicr_core.errors import AicrError, Code
from aicr_core.session import bounded_json, kube
from aicr_core.session.deadline import Deadline

from support.fake_apiserver import Raw, Respond, Trickle, fake_apiserver

THING = {"kind": "Thing", "n": 1}


def get_from(tmp_path: Path, answer: bytes, path: str = "/apis/g/v1/things/x") -> dict[str, object]:
    with fake_apiserver(tmp_path, [Raw(answer)]) as server:
        session = kube.connect(str(server.kubeconfig(tmp_path / "kc", {"token": "t"})), None, Deadline(10))
        return session.get(path)


def test_a_chunked_answer_is_read_chunk_by_chunk(tmp_path: Path) -> None:
    body = json.dumps(THING).encode()
    chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(part), part) for part in (body[:5], body[5:]))
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\nTrailer: x\r\n\r\n"
    compare(get_from(tmp_path, answer), expected=THING)


def test_an_answer_without_a_length_is_read_to_its_end_and_a_gzip_one_decoded(tmp_path: Path) -> None:
    compare(get_from(tmp_path, b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + json.dumps(THING).encode()),
            expected=THING)
    packed = gzip.compress(json.dumps(THING).encode())
    compare(get_from(tmp_path, b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
                     % (len(packed), packed)), expected=THING)


def test_a_failure_is_its_code_with_the_servers_message(tmp_path: Path) -> None:
    status = json.dumps({"kind": "Status", "code": 404, "message": 'things "x" not found'}).encode()
    with ShouldRaise(AicrError(Code.NOT_FOUND, 'things "x" not found')):
        get_from(tmp_path, b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n%s" % (len(status), status))


def test_an_answer_larger_than_the_limit_is_refused_before_it_is_read(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded_json, "MAX_BODY_BYTES", 1024 * 1024)
    with ShouldRaise(AicrError) as raised:
        get_from(tmp_path, b"HTTP/1.1 200 OK\r\nContent-Length: 2000000\r\n\r\n{")
    compare((raised.raised.code, "larger than 1 MiB" in raised.raised.message), expected=(Code.INVALID_OBJECT, True))
    chunk = b"x" * 600_000
    with ShouldRaise(AicrError) as raised:  # chunks that add up past it
        get_from(tmp_path, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                 + b"%x\r\n%s\r\n" % (len(chunk), chunk) * 2 + b"0\r\n\r\n")
    compare(raised.raised.code, expected=Code.INVALID_OBJECT)


@pytest.mark.parametrize(("answer", "words"), [
    (b"SSH-2.0-OpenSSH\r\n\r\n", "does not start with an HTTP/1.1 status line"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{", "closed the connection before the end of its answer"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\n{", "Content-Length"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "a chunk's size"),
    # What int() would take but no HTTP server sends: a superscript digit, a 0x prefix, a sign, an underscore
    (b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n{}", "Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n{}", "Content-Length"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\n{}\r\n0\r\n\r\n", "a chunk's size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\n{}\r\n0\r\n\r\n", "a chunk's size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0_2\r\n{}\r\n0\r\n\r\n", "a chunk's size"),
])
def test_an_answer_that_is_no_http_is_unavailable_in_words(tmp_path: Path, answer: bytes, words: str) -> None:
    with ShouldRaise(AicrError) as raised:
        get_from(tmp_path, answer)
    compare((raised.raised.code, words in raised.raised.message), expected=(Code.UNAVAILABLE, True))


def test_a_path_urllib3_would_rewrite_is_sent_by_urllib3_as_before(tmp_path: Path) -> None:
    with fake_apiserver(tmp_path, [Respond(200, THING)]) as server:
        session = kube.connect(str(server.kubeconfig(tmp_path / "kc", {"token": "t"})), None, Deadline(10))
        compare(session.get("/apis/g/v1/things/a b"), expected=THING)
        compare(session.get("/apis/g/v1/things/%2fx"), expected=THING)
        compare([r.path for r in server.requests], expected=["/apis/g/v1/things/a%20b", "/apis/g/v1/things/%2Fx"])


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 000 OK\r\nContent-Length: 22\r\n\r\n" + json.dumps(THING).encode(),  # no status (http.client: refused)
    # No chunked coding (http.client reads it by its length; h11 takes no coding but chunked)
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n16\r\n" + json.dumps(THING).encode() + b"\r\n0\r\n\r\n",
], ids=["status 000", "xchunked"])
def test_an_answer_http_client_would_not_take_is_no_success(tmp_path: Path, answer: bytes) -> None:
    with ShouldRaise(AicrError) as raised:
        get_from(tmp_path, answer)
    compare((raised.raised.code, "does not start with an HTTP/1.1 status line and headers" in raised.raised.message),
            expected=(Code.UNAVAILABLE, True))


def test_a_head_of_bare_line_feeds_is_read_as_http_client_reads_it(tmp_path: Path) -> None:
    """The server keeps the connection open: a reader that waits for CRLF CRLF would wait for the deadline."""
    body = json.dumps(THING).encode()
    answer = b"HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Length: %d\n\n%s" % (len(body), body)
    with fake_apiserver(tmp_path, [Trickle(answer, 0.0)]) as server:
        session = kube.connect(str(server.kubeconfig(tmp_path / "kc", {"token": "t"})), None, Deadline(10))
        started = time.monotonic()
        compare(session.get("/apis/g/v1/things/x"), expected=THING)
    assert time.monotonic() - started < 5, "the answer waited for the deadline"


def test_an_answer_with_both_lengths_is_read_by_its_chunks_and_its_connection_not_kept(tmp_path: Path) -> None:
    """Content-Length beside chunks (RFC 9112, 6.3: a way to split the stream): the chunks end the body, as
    http.client reads it, and the next GET goes on a new connection (the old one is no longer served)."""
    body = json.dumps(THING).encode()
    both = (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"
            % (len(body), body))
    with fake_apiserver(tmp_path, [Trickle(both, 0.0), Respond(200, {"kind": "Thing", "n": 2})]) as server:
        session = kube.connect(str(server.kubeconfig(tmp_path / "kc", {"token": "t"})), None, Deadline(5))
        compare(session.get("/apis/g/v1/things/x"), expected=THING)
        compare(session.get("/apis/g/v1/things/y"), expected={"kind": "Thing", "n": 2})
        compare([r.connection for r in server.requests], expected=[1, 2])


def test_a_plain_answer_keeps_its_connection(tmp_path: Path) -> None:
    with fake_apiserver(tmp_path, [Respond(200, THING)]) as server:
        session = kube.connect(str(server.kubeconfig(tmp_path / "kc", {"token": "t"})), None, Deadline(5))
        session.get("/apis/g/v1/things/x")
        session.get("/apis/g/v1/things/y")
        compare([r.connection for r in server.requests], expected=[1, 1])


@pytest.mark.parametrize(("answer", "words"), [
    (b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 300_000 + b"\r\n\r\n{}", "head is longer than 262144 bytes"),
    (b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(101)) + b"Content-Length: 2\r\n\r\n{}",
     "more than 100 headers"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1" * 300_000 + b"\r\n",
     "a chunk's size line or the trailers are longer than 262144 bytes"),
])
def test_a_head_or_a_chunk_line_beyond_the_bounds_is_refused(tmp_path: Path, answer: bytes, words: str) -> None:
    with ShouldRaise(AicrError) as raised:
        get_from(tmp_path, answer)
    compare((raised.raised.code, words in raised.raised.message), expected=(Code.UNAVAILABLE, True))
