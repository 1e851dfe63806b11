"""The h11 reader's memory per body byte (issue 37, item 7), against a lying loopback server that sends its body in
one-byte chunks: each byte used to cost about 85 bytes (a bytes object and a list slot); now a buffer's byte."""
from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from testfixtures import compare

from aicr_core.session import kube
from aicr_core.session.deadline import Deadline

from support.fake_apiserver import Raw, fake_apiserver

BODY = json.dumps({"kind": "Thing", "pad": "x" * 20_000}).encode()


def test_one_byte_chunks_cost_a_few_bytes_of_memory_each(tmp_path: Path) -> None:
    chunks = b"".join(b"1\r\n%s\r\n" % BODY[i:i + 1] for i in range(len(BODY)))
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"
    with fake_apiserver(tmp_path, [Raw(answer)]) as server:
        session = kube.connect(str(server.kubeconfig(tmp_path / "kc", {"token": "t"})), None, Deadline(30))
        tracemalloc.start()
        try:
            got = session.get("/apis/g/v1/things/x")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    compare(len(got["pad"]), expected=20_000)
    per_byte = peak / len(BODY)
    assert per_byte < 8, f"{per_byte:.1f} bytes of memory per body byte"
