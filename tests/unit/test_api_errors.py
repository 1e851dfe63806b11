"""The mapping of an API server's failure, given as the wire gave it (status, reason, body), to a CODE."""
from __future__ import annotations

import json

import pytest
from testfixtures import compare

from aicr_core.errors import Code
from aicr_core.session.api_errors import api_error, server_message


def status(message: str) -> bytes:
    return json.dumps({"kind": "Status", "message": message}).encode()


@pytest.mark.parametrize(("code", "reason", "body", "expected"), [
    (401, "Unauthorized", status("Unauthorized"), Code.UNAUTHORIZED),
    (403, "Forbidden", status('rollouts "r" is forbidden: User "u" cannot patch'), Code.FORBIDDEN),
    (403, "Forbidden", status("admission webhook \"x\" denied the request: no"), Code.ADMISSION_DENIED),
    (422, "Unprocessable Entity", status("ValidatingAdmissionPolicy 'p' denied request"), Code.ADMISSION_DENIED),
    (400, "Bad Request", status('strict decoding error: unknown field "spec.x"'), Code.INVALID_OBJECT),
    (404, "Not Found", status("not found"), Code.NOT_FOUND),
    (409, "Conflict", status("the object has been modified"), Code.CONFLICT),
    (504, "Gateway Timeout", b"", Code.TIMEOUT),
    (429, "Too Many Requests", b"", Code.UNAVAILABLE),
    (418, "I'm a teapot", b"not json", Code.UNAVAILABLE),
])
def test_codes(code: int, reason: str, body: bytes, expected: Code) -> None:
    compare(api_error(code, reason, body).code, expected=expected)


def test_messages() -> None:
    compare(server_message(404, "Not Found", status("rollouts.aicr \"r\" not found")),
            expected='rollouts.aicr "r" not found')
    compare(server_message(502, "Bad Gateway", b"<html>"), expected="HTTP 502 Bad Gateway")
    compare(server_message(500, "", b"[" * 1000 + b"]" * 1000), expected="HTTP 500")  # too deep: no message
    refused = api_error(400, "Bad Request", status('strict decoding error: unknown field "spec.a", '
                                                   'unknown field "spec.b"'))
    compare(str(refused.message), expected="the cluster's schema has no field spec.a, spec.b; nothing was written "
            "(is the operator older than this plugin?)")
    denied = api_error(403, "Forbidden", status("admission webhook \"aicr\" denied the request: refused\n- p1\n- p2"))
    compare((denied.message, denied.details), expected=('admission webhook "aicr" denied the request: refused',
                                                         ["- p1", "- p2"]))
