"""The Kubernetes session of a command: credentials, one deadline, errors as CODEs.

Only commands that talk to the API server import this module (it imports the
Kubernetes client, which costs a few hundred milliseconds). It knows
Kubernetes, not AICR: paths and objects come from `operator_api`.

Objects are read and written as plain JSON (dicts), not the client's models:
cluster data reaches the mapping module byte for byte (digests are computed
over ConfigMap values), and deserialising models would only cost time.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import ssl
from pathlib import Path
from typing import Any

import urllib3
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION, new_client_from_config

from aicr_core.deadline import Deadline
from aicr_core.errors import AicrError, Code
from aicr_core.hookspecs import Identity  # a policy's value type: defined where policies import nothing heavy

MERGE_PATCH = "application/merge-patch+json"


class Cluster:
    """A connection to one API server, with the deadline of the current command."""

    def __init__(self, api_client: ApiClient, deadline: Deadline) -> None:
        self.api = api_client
        self.deadline = deadline

    def get(self, path: str) -> dict[str, Any]:
        return self._call("GET", path)

    def patch(self, path: str, body: Any) -> dict[str, Any]:
        """A JSON merge patch: CRDs take no strategic merge patch."""
        return self._call("PATCH", path, body=body, content_type=MERGE_PATCH)

    def create(self, path: str, body: Any) -> dict[str, Any]:
        return self._call("POST", path, body=body)

    def whoami(self) -> Identity:
        review = self.create("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                             {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        info = review.get("status", {}).get("userInfo", {})
        username = info.get("username")
        if not isinstance(username, str) or not username:
            raise AicrError(Code.UNAUTHORIZED, "the API server did not report a username for these credentials")
        return Identity(username, tuple(g for g in info.get("groups", []) if isinstance(g, str)))

    def _call(self, method: str, path: str, *, body: Any = None,
              content_type: str = "application/json") -> dict[str, Any]:
        timeout = self.deadline.remaining()  # what is left of the command's deadline
        _trace(method, path)
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            response = self.api.call_api(
                *self.api.param_serialize(method, path, header_params=headers, body=body,
                                          auth_settings=["BearerToken"]),
                _request_timeout=timeout)
            response.read()
            data = response.data
        except ApiException as err:
            raise api_error(err) from None
        except Exception as err:  # noqa: BLE001 - transport errors come in many classes
            raise transport_error(err, self.deadline) from None
        if response.status >= 400:
            raise api_error(ApiException(http_resp=response))
        try:
            return json.loads(data or b"{}")
        except ValueError:
            raise AicrError(Code.UNAVAILABLE, f"{method} {path}: the API server's answer is not JSON") from None


def _trace(method: str, path: str) -> None:
    """Append one line per request to $AICR_REQUEST_LOG (bench/ counts API calls with it)."""
    log = os.environ.get("AICR_REQUEST_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{method} {path}\n")


def connect(kubeconfig: str | None, context: str | None, deadline: Deadline | None = None) -> Cluster:
    """Load credentials as kubectl does and return a session; KUBECONFIG errors on any failure."""
    deadline = deadline or Deadline()
    config_file = kubeconfig or os.environ.get("KUBECONFIG") or KUBE_CONFIG_DEFAULT_LOCATION
    paths = [Path(p).expanduser() for p in config_file.split(os.pathsep) if p]
    if kubeconfig and not Path(kubeconfig).expanduser().is_file():
        raise AicrError(Code.KUBECONFIG, f"kubeconfig {kubeconfig} does not exist or is not a file")
    if not any(p.is_file() for p in paths):
        raise AicrError(Code.KUBECONFIG, f"no kubeconfig found (looked at {config_file}); "
                        "pass --kubeconfig or set KUBECONFIG")
    configuration = Configuration()
    configuration.retries = False  # never retry behind the deadline's back
    client_errors = _ClientErrors.install()
    try:
        # persist_config=False: never write refreshed credentials back into the user's files.
        api = new_client_from_config(config_file=config_file, context=context, persist_config=False,
                                     client_configuration=configuration)
    except ConfigException as err:
        message = _first_line(str(err))
        if context and f"Expected object with name {context} " in message:
            message = f'context "{context}" not found in the kubeconfig ({config_file})'
        raise AicrError(Code.KUBECONFIG, message) from None
    except Exception as err:  # noqa: BLE001 - broken YAML, unreadable file, failing exec plugin
        raise AicrError(Code.KUBECONFIG, f"cannot load the kubeconfig: {type(err).__name__}: "
                        f"{_first_line(str(err))}") from None
    if client_errors.messages:
        # The client logs a failing exec credential plugin and goes on as system:anonymous.
        raise AicrError(Code.KUBECONFIG, f"credentials plugin failed: {client_errors.messages[0]}")
    return Cluster(api, deadline)


class _ClientErrors(logging.Handler):
    """Collects what the Kubernetes client logs (and keeps it off stderr: errors are ours to print)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(_first_line(record.getMessage()))

    @classmethod
    def install(cls) -> _ClientErrors:
        """One handler per process on the root logger (where the client logs), emptied for each connect."""
        root = logging.getLogger()
        handler = next((h for h in root.handlers if isinstance(h, cls)), None)
        if handler is None:
            handler = cls()
            root.addHandler(handler)
        handler.messages.clear()
        return handler


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown error"


def server_message(err: ApiException) -> str:
    """The API server's own message (admission denials say why there), else the HTTP reason."""
    try:
        body = json.loads(err.body or "{}")
        message = body.get("message") if isinstance(body, dict) else None
    except (ValueError, TypeError):
        message = None
    return message or f"HTTP {err.status} {err.reason or ''}".strip()


def api_error(err: ApiException) -> AicrError:
    status, message = err.status or 0, server_message(err)
    if status == 0:  # the client reports transport failures (TLS, say) as status 0: "SSLError\n<detail>"
        kind, _, detail = (err.reason or "").partition("\n")
        detail = _first_line(detail or kind)
        if "SSL" in kind:
            return AicrError(Code.UNAVAILABLE, f"TLS failure talking to the API server: {detail}")
        return AicrError(Code.UNAVAILABLE, f"cannot reach the API server: {detail}")
    if status == 401:
        return AicrError(Code.UNAUTHORIZED, f"the API server rejected the credentials: {message}")
    if status == 403 and not _is_admission(message):
        return AicrError(Code.FORBIDDEN, message)
    if status in (403, 422) or (status == 400 and _is_admission(message)):
        return AicrError(Code.ADMISSION_DENIED, message)
    if status == 404:
        return AicrError(Code.NOT_FOUND, message)
    if status == 409:
        return AicrError(Code.CONFLICT, message)
    if status == 504 or "Timeout" in (err.reason or ""):
        return AicrError(Code.TIMEOUT, message)
    if status >= 500 or status == 429 or status == 0:
        return AicrError(Code.UNAVAILABLE, message)
    return AicrError(Code.UNAVAILABLE, f"unexpected answer from the API server: {message}")


def _is_admission(message: str) -> bool:
    return "ValidatingAdmissionPolicy" in message or "denied request" in message or "admission webhook" in message


def transport_error(err: BaseException, deadline: Deadline) -> AicrError:
    chain = _causes(err)
    last = _first_line(str(chain[-1]))
    # NewConnectionError subclasses urllib3's ConnectTimeoutError: test for refusals first.
    if any(isinstance(e, (urllib3.exceptions.NewConnectionError, ConnectionRefusedError,
                          urllib3.exceptions.NameResolutionError, socket.gaierror)) for e in chain):
        return AicrError(Code.UNAVAILABLE, f"cannot connect to the API server: {last}")
    if any(isinstance(e, (urllib3.exceptions.TimeoutError, socket.timeout, TimeoutError)) for e in chain):
        return deadline.expired()
    if any(isinstance(e, (ssl.SSLError, urllib3.exceptions.SSLError)) for e in chain):
        return AicrError(Code.UNAVAILABLE, f"TLS failure talking to the API server: {last}")
    if any(isinstance(e, ConfigException) for e in chain):
        return AicrError(Code.KUBECONFIG, _first_line(str(err)))
    if any(isinstance(e, (urllib3.exceptions.HTTPError, OSError)) for e in chain):
        return AicrError(Code.UNAVAILABLE, f"cannot reach the API server: {last}")
    raise err


def _causes(err: BaseException) -> list[BaseException]:
    """The error, what caused it, and so on (urllib3 keeps the cause in `.reason`)."""
    chain: list[BaseException] = []
    current: BaseException | None = err
    while current is not None and current not in chain:
        chain.append(current)
        reason = getattr(current, "reason", None)
        current = reason if isinstance(reason, BaseException) else (current.__cause__ or current.__context__)
    return chain
