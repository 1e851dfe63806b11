"""An API server's failures, and the transport's, as CODEs.

An answer's failure is mapped from what the wire said, `(status, reason, body)`: the server's
own message (a Status object's `message`; admission denials say why there) decides between
admission, RBAC and schema refusals. A transport failure (refused, timed out, TLS) is mapped
from the chain of exceptions urllib3 and the socket raised.
"""
from __future__ import annotations

import re
import socket
import ssl
from typing import TYPE_CHECKING

import urllib3

from aicr_core.errors import AicrError, Code
from aicr_core.session import bounded_json
from aicr_core.session.quoting import first_line

if TYPE_CHECKING:
    from aicr_core.session.deadline import Deadline

# What strict field validation says of a field the object's schema does not declare.
_UNKNOWN_FIELDS = re.compile(r'unknown field "([^"]{1,256})"')


def server_message(status: int, reason: str, body: bytes | str | None) -> str:
    """The API server's own message (admission denials say why there), else the HTTP reason."""
    try:
        document = bounded_json.loads(body or "{}")
        message = document.get("message") if isinstance(document, dict) else None
    except (ValueError, TypeError):  # TooDeep is a ValueError
        message = None
    return message if isinstance(message, str) and message else f"HTTP {status} {reason or ''}".strip()


def api_error(status: int, reason: str, body: bytes | str | None) -> AicrError:
    """An answer of HTTP `status` (>= 400) as a CODE."""
    text = server_message(status, reason, body)
    # A message of several lines (our admission webhook's: the verdict, then one line per violated
    # policy) is shown as the CLI shows its own refusals: the first line, then indented details.
    message, *details = [line.strip() for line in text.splitlines() if line.strip()] or [text]
    if status == 401:
        return AicrError(Code.UNAUTHORIZED, f"the API server rejected the credentials: {message}", details)
    if status == 403 and not _is_admission(message):
        return AicrError(Code.FORBIDDEN, message, details)
    unknown = _UNKNOWN_FIELDS.findall(text) if status in (400, 422) and "strict decoding error" in text else []
    if unknown:  # the server quotes the whole object before these words: name the fields only
        return AicrError(Code.INVALID_OBJECT, "the cluster's schema has no field " + ", ".join(unknown)
                         + "; nothing was written (is the operator older than this plugin?)")
    if status in (403, 422) or (status == 400 and _is_admission(message)):
        return AicrError(Code.ADMISSION_DENIED, message, details)
    if status == 404:
        return AicrError(Code.NOT_FOUND, message, details)
    if status == 409:
        return AicrError(Code.CONFLICT, message, details)
    if status == 504 or "Timeout" in (reason or ""):
        return AicrError(Code.TIMEOUT, message, details)
    if status >= 500 or status == 429:
        return AicrError(Code.UNAVAILABLE, message, details)
    return AicrError(Code.UNAVAILABLE, f"unexpected answer from the API server: {message}", details)


def tls_failure(err: BaseException) -> AicrError:
    """A TLS failure of the handshake (a certificate refused, say), as the client words it."""
    return AicrError(Code.UNAVAILABLE, f"TLS failure talking to the API server: "
                     f"{first_line(str(err) or type(err).__name__)}")


def _is_admission(message: str) -> bool:
    return "ValidatingAdmissionPolicy" in message or "denied request" in message or "admission webhook" in message


def transport_error(err: BaseException, deadline: Deadline) -> AicrError:
    """A failure below HTTP (no answer, or none in time) as a CODE; a timeout is the deadline's."""
    from kubernetes.config.config_exception import ConfigException  # a token refresh's failure, mid-request

    chain = _causes(err)
    last = first_line(str(chain[-1]))
    # NewConnectionError subclasses urllib3's ConnectTimeoutError: test for refusals first.
    if any(isinstance(e, (urllib3.exceptions.NewConnectionError, ConnectionRefusedError,
                          urllib3.exceptions.NameResolutionError, socket.gaierror)) for e in chain):
        return AicrError(Code.UNAVAILABLE, f"cannot connect to the API server: {last}")
    if any(isinstance(e, (urllib3.exceptions.TimeoutError, socket.timeout, TimeoutError)) for e in chain):
        return deadline.expired()
    if any(isinstance(e, (ssl.SSLError, urllib3.exceptions.SSLError)) for e in chain):
        return AicrError(Code.UNAVAILABLE, f"TLS failure talking to the API server: {last}")
    if any(isinstance(e, ConfigException) for e in chain):
        return AicrError(Code.KUBECONFIG, first_line(str(err)))
    return AicrError(Code.UNAVAILABLE, f"cannot reach the API server: {last}")


def _causes(err: BaseException) -> list[BaseException]:
    """The error, what caused it, and so on (urllib3 keeps the cause in `.reason`)."""
    chain: list[BaseException] = []
    current: BaseException | None = err
    while current is not None and current not in chain:
        chain.append(current)
        reason = getattr(current, "reason", None)
        current = reason if isinstance(reason, BaseException) else (current.__cause__ or current.__context__)
    return chain
