"""The Kubernetes session (a command's, a fleet cluster's, the webhook's): one deadline, kubectl's flags, CODEs.

The session's other jobs have modules of their own (docs/sessions.md, "The session's modules"): the
settings it is loaded from (`kubeconfig`), the client's private names (`client_adapter`), urllib3's
(`connections`), the mapping of failures (`api_errors`), the bounds of a list (`list_bounds`), a GET
on a kept connection (`direct_get`) and shared TLS contexts (`tls_contexts`).

Only the code that talks to the API server imports this module (it imports the
Kubernetes client, which costs a few hundred milliseconds). It knows
Kubernetes, not AICR: paths and objects come from `operator_api`.

Objects are read and written as plain JSON (dicts), not the client's models:
cluster data reaches the operator API (aicr_core.domain.operator_api) byte for
byte (digests are computed over ConfigMap values), and deserialising models
would only cost time.
Requests go through the official client's connection pool (TLS, proxies,
client certificates), with headers built here: the client can send neither
several `Impersonate-Group` headers nor any impersonation at all. A GET with
no proxy in the way is sent straight on a connection of that pool, and its
answer read by `direct_get` (a fleet's turn is two GETs, and urllib3's layers
above the connection cost about as much CPU as the TLS handshake); urllib3
still opens the connection, so TLS is verified exactly as for other requests.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import ssl
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import urllib3
from kubernetes.client import ApiClient
from kubernetes.config.config_exception import ConfigException
from urllib3 import HTTPHeaderDict
from urllib3.util.ssl_match_hostname import CertificateError

from aicr_core import process_owner
from aicr_core.errors import AicrError, Code, shown
from aicr_core.session import bounded_json, client_adapter, connections, direct_get
from aicr_core.session.api_errors import api_error, tls_failure, transport_error
from aicr_core.session.connection_flags import Overrides
from aicr_core.session.deadline import Deadline
from aicr_core.session.kubeconfig import Settings, entry_settings, load_settings
from aicr_core.session.list_bounds import ListBounds
from aicr_core.session.quoting import first_line

if TYPE_CHECKING:
    from aicr_core.session.identity import Identity

MERGE_PATCH = "application/merge-patch+json"
USER_AGENT = "kubectl-aicr"
MAX_ERROR_BYTES = 1024 * 1024  # a failure's Status is a few hundred bytes
# A watch stream with no event (not even a bookmark) for this long is taken for dead.
WATCH_IDLE_SECONDS = 330.0
# A request target urllib3 sends as it is: its path and query characters, escapes in upper case.
_PLAIN_TARGET = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-F]{2})*")


class Gone(Exception):
    """A watch's resourceVersion is too old (410 Gone): read again, then watch from the new version."""


class KubeSession:
    """A connection to one API server, with the deadline of the current command."""

    def __init__(self, settings: Settings, deadline: Deadline) -> None:
        self.settings = settings
        self.api = _client(settings)
        self.deadline = deadline
        # An interrupted fleet sends no new write (`hold_writes()` is then true) and lets a turn that has
        # sent one finish: `writes_sent` tells it which (aicr_core.fleet.fan_out).
        self.hold_writes: Callable[[], bool] | None = None
        self.writes_sent = 0

    def with_deadline(self, deadline: Deadline) -> KubeSession:
        """This session under another deadline: the same settings, client and connection pool (nothing is
        connected again), `hold_writes` kept, its own count of writes sent.

        For work beside the command's (a read on another thread, which must not share a deadline it
        would disarm) or one deadline per request of a long-lived program (the admission webhook's
        reads).
        """
        import copy

        session = copy.copy(self)
        session.deadline = deadline
        session.writes_sent = 0
        return session

    # -- requests ---------------------------------------------------------------------------------
    def get(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        return self._call("GET", path, params)

    def list(self, path: str, params: Mapping[str, str] | None = None,
             limit: int = 500) -> tuple[list[dict[str, Any]], str]:
        """Every item of a collection, page by page (`limit` + `continue`), and the list's resourceVersion."""
        items: list[dict[str, Any]] = []
        query = {**(params or {}), "limit": str(limit)}
        version = ""
        bounds = ListBounds(path, limit)  # a lying server's pages end the list (aicr_core.session.list_bounds)
        while True:
            page = self._call("GET", path, query, before_parsing=bounds.page)
            page_items = page.get("items")
            if not isinstance(page_items, list):
                raise AicrError(Code.INVALID_OBJECT, f"GET {path}: the API server's answer is not a list "
                                f"(its items are {bounded_json.kind_of(page_items)}, not an array)")
            bounds.items_of_page(len(page_items))
            items += [i for i in page_items if isinstance(i, dict)]
            metadata: dict[str, Any] = page["metadata"] if isinstance(page.get("metadata"), dict) else {}
            version = version or str(metadata.get("resourceVersion") or "")
            token = metadata.get("continue")
            if not token:
                return items, version
            bounds.next_token(str(token))
            query["continue"] = str(token)

    def patch(self, path: str, body: Any, *, dry_run: bool = False) -> dict[str, Any]:
        """A JSON merge patch (CRDs take no strategic merge patch); `dryRun=All` when asked.

        `fieldValidation=Strict`, as kubectl sends it: a field the cluster's schema does not
        declare is refused, not silently pruned (a record written without it would be lost).
        """
        self.writes_sent += 1  # before the check: a fan-out that reads 0 once it has stopped knows none will go
        if self.hold_writes is not None and self.hold_writes():
            self.writes_sent -= 1
            raise AicrError(Code.INTERRUPTED, "interrupted before the write was sent: nothing was written")
        params = {"dryRun": "All"} if dry_run else {}
        return self._call("PATCH", path, {**params, "fieldValidation": "Strict"}, body=body,
                          content_type=MERGE_PATCH)

    def create(self, path: str, body: Any, *, dry_run: bool = False) -> dict[str, Any]:
        return self._call("POST", path, {"dryRun": "All"} if dry_run else None, body=body)

    def whoami(self) -> Identity:
        review = self.create("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                             {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        status = review.get("status")
        info = status.get("userInfo") if isinstance(status, dict) else None
        info = info if isinstance(info, dict) else {}
        username = info.get("username")
        if not isinstance(username, str) or not username:
            raise AicrError(Code.UNAUTHORIZED, "the API server did not report a username for these credentials")
        from aicr_core.session.identity import Identity

        return Identity(username, tuple(g for g in info.get("groups", []) if isinstance(g, str)))

    def can_i(self, verb: str, *, group: str, resource: str, name: str = "", subresource: str = "",
              namespace: str = "") -> bool:
        """A SelfSubjectAccessReview: may we `verb` that (RBAC's answer, not admission's)?"""
        attributes = {"verb": verb, "group": group, "resource": resource, "name": name,
                      "subresource": subresource, "namespace": namespace}
        review = self.create("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {k: v for k, v in attributes.items() if v}}})
        status = review.get("status")
        return isinstance(status, dict) and status.get("allowed") is True

    def watch(self, path: str, params: Mapping[str, str] | None = None) -> Iterator[dict[str, Any]]:
        """The events of a watch, as they arrive, until the server ends the stream.

        Each wait for the next event is bounded by what is left of the deadline
        (and by WATCH_IDLE_SECONDS); the caller's code between events is not.
        A 410 Gone raises `Gone`; other failures are AicrErrors as for any call.
        """
        response = self._send("GET", path, {**(params or {}), "watch": "1"}, stream=True,
                              read_timeout=WATCH_IDLE_SECONDS)
        lines = _lines(response, f"GET {path}")
        ended = False
        try:
            while True:
                try:
                    with self.deadline.enforced():
                        line = next(lines, None)
                except (urllib3.exceptions.HTTPError, OSError) as err:
                    raise transport_error(err, self.deadline) from None
                if line is None:
                    ended = True
                    return
                try:
                    event = bounded_json.loads(line)
                except bounded_json.TooDeep as err:
                    raise AicrError(Code.INVALID_OBJECT, f"GET {path}: a watch event is refused: {err}") from None
                except ValueError:
                    raise AicrError(Code.UNAVAILABLE, f"GET {path}: a watch event is not JSON") from None
                if not isinstance(event, dict):
                    raise AicrError(Code.UNAVAILABLE, f"GET {path}: a watch event is not a JSON object")
                if event.get("type") == "ERROR":
                    failure: dict[str, Any] = event["object"] if isinstance(event.get("object"), dict) else {}
                    if failure.get("code") == 410:
                        raise Gone(str(failure.get("message") or "resourceVersion too old"))
                    raise AicrError(Code.UNAVAILABLE, f"watch {path}: {failure.get('message') or 'error event'}")
                yield event
        finally:
            if not ended:  # left while the stream goes on: its connection must serve no other request of the pool
                response.close()
            response.release_conn()

    # -- the one place requests are sent ------------------------------------------------------------
    def _call(self, method: str, path: str, params: Mapping[str, str] | None = None, *, body: Any = None,
              content_type: str = "application/json",
              before_parsing: Callable[[bytes], None] | None = None) -> dict[str, Any]:
        what = f"{method} {path}"
        target = self._direct_target(path, params) if method == "GET" and body is None else None
        if target is not None:
            data = self._direct_get(target, what)
        else:
            response = self._send(method, path, params, body=body, content_type=content_type)
            try:
                with self.deadline.enforced():
                    data = read_body(response, what)
            except (urllib3.exceptions.HTTPError, OSError) as err:
                raise transport_error(err, self.deadline) from None
        if not data.strip():
            raise AicrError(Code.INVALID_OBJECT, f"{what}: the API server's answer is empty, "
                            "not the object asked for")
        if before_parsing is not None:
            before_parsing(data)
        try:
            answer = bounded_json.loads(data)
        except bounded_json.TooDeep as err:
            raise AicrError(Code.INVALID_OBJECT, f"{what}: the API server's answer is refused: {err}") from None
        except ValueError:
            raise AicrError(Code.UNAVAILABLE, f"{what}: the API server's answer is not JSON") from None
        if not isinstance(answer, dict):
            raise AicrError(Code.INVALID_OBJECT, f"{what}: the API server answered {bounded_json.kind_of(answer)}, "
                            "not the object asked for")
        return answer

    def _direct_target(self, path: str, params: Mapping[str, str] | None) -> str | None:
        """The request target of a GET that may go straight on a kept connection (aicr_core.session.direct_get):
        none with a proxy, nor for a URL that urllib3 would rewrite (it percent-encodes some characters,
        uppercases escapes and removes dot segments): those take urllib3's whole path, as before."""
        shared = self.settings.shared
        prefix: str | bool | None = shared.get("direct_prefix")
        if prefix is None:
            with _CLIENT_LOCK:
                manager = client_adapter.pool_manager(self.api)
                host = self.settings.configuration.host
                split = urllib.parse.urlsplit(host)
                direct = type(manager) is urllib3.PoolManager and not split.query and not split.fragment
                shared["direct_pool"] = manager.connection_from_url(host) if direct else None
                prefix = shared["direct_prefix"] = split.path if direct else False
        if not isinstance(prefix, str):
            return None
        target = prefix + path + ("?" + urllib.parse.urlencode(params) if params else "")
        if "/." in target or not _PLAIN_TARGET.fullmatch(target):
            return None
        return target

    def _direct_get(self, target: str, what: str) -> bytes:
        """A GET on a kept connection of the cluster's pool: its body (status < 300), else its error."""
        _trace("GET", target[len(self.settings.shared["direct_prefix"]):])
        try:
            with self.deadline.enforced():
                timeout = self.deadline.timeout()
                headers = [("Accept", "application/json"), ("User-Agent", USER_AGENT), *_credentials(self.settings)]
                try:
                    answer = direct_get.get(self.settings.shared["direct_pool"], target, headers, timeout,
                                            bounded_json.MAX_BODY_BYTES, MAX_ERROR_BYTES)
                except (ssl.SSLError, CertificateError, urllib3.exceptions.SSLError) as err:  # as urllib3 reports them
                    raise tls_failure(err) from None
                except direct_get.TooLarge:
                    raise too_large(what, bounded_json.MAX_BODY_BYTES) from None
                except direct_get.Malformed as err:
                    raise AicrError(Code.UNAVAILABLE, f"cannot reach the API server: {err}") from None
        except (urllib3.exceptions.HTTPError, OSError, ConfigException) as err:
            raise transport_error(err, self.deadline) from None
        if 300 <= answer.status < 400:
            raise _redirected(what, answer.status, answer.headers.get("Location"))
        if answer.status >= 400:
            raise api_error(answer.status, answer.reason, answer.body)
        return answer.body

    def _send(self, method: str, path: str, params: Mapping[str, str] | None, *, body: Any = None,
              content_type: str = "application/json", stream: bool = False,
              read_timeout: float | None = None) -> urllib3.BaseHTTPResponse:
        """Send one request within the deadline; return the response once its headers are in (status < 400)."""
        url = self.settings.configuration.host + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        _trace(method, url[len(self.settings.configuration.host):])
        headers = HTTPHeaderDict({"Accept": "application/json", "User-Agent": USER_AGENT})
        if body is not None:
            headers["Content-Type"] = content_type
        with self.deadline.enforced():
            timeout = self.deadline.timeout()
            for name, value in _credentials(self.settings):
                headers.add(name, value)
            if stream:
                idle = read_timeout if timeout is None else min(timeout, read_timeout or math.inf)
                request_timeout: Any = urllib3.Timeout(connect=timeout, read=idle)
            else:
                request_timeout = urllib3.Timeout(total=timeout) if timeout else None
            try:
                # The pool manager itself (what the Kubernetes client's request method calls, minus its
                # per-request overhead): JSON bodies, no retry, no redirect followed.
                response = client_adapter.pool_manager(self.api).urlopen(
                    method, url, body=None if body is None else json.dumps(body), headers=headers,
                    timeout=request_timeout, preload_content=False, redirect=False)
            except urllib3.exceptions.SSLError as err:
                raise tls_failure(err) from None
            except (urllib3.exceptions.HTTPError, OSError, ConfigException) as err:
                raise transport_error(err, self.deadline) from None
        if 300 <= response.status < 400:
            response.close()
            raise _redirected(f"{method} {path}", response.status, response.headers.get("Location"))
        if response.status >= 400:
            try:
                with self.deadline.enforced():
                    failure = read_body(response, f"{method} {path}", MAX_ERROR_BYTES, truncate=True)
            except (urllib3.exceptions.HTTPError, OSError) as err:
                raise transport_error(err, self.deadline) from None
            raise api_error(response.status, response.reason or "", failure)
        return response


def _credentials(settings: Settings) -> list[tuple[str, str]]:
    """The Authorization header (after the client's refresh hook, which may run a plugin) and the
    impersonation headers of a request, each value as it must be handed to http.client (`header_value`)."""
    authorization = client_adapter.bearer_token(settings.configuration)
    found = [("Authorization", authorization)] if authorization else []
    return [(name, header_value(name, value)) for name, value in [*found, *settings.impersonation.headers()]]


def _redirected(what: str, status: int, location: Any) -> AicrError:
    """A redirect (HTTP 3xx) refused: the client follows none, and no API server sends one."""
    shown_location = first_line(str(location or "")) or "nowhere"
    return AicrError(Code.UNAVAILABLE, f"{what}: the server answered HTTP {status} "
                     f"(a redirect to {shown_location[:200]}), which no API server sends; "
                     "is the server address right?")


def header_value(name: str, value: str) -> str:
    """`value` as http.client must be given it for kubectl's bytes to go on the wire.

    kubectl (Go) sends a header's UTF-8 bytes; http.client encodes a str as Latin-1, so the UTF-8
    bytes are handed over as Latin-1 characters (`--as José` is the user kubectl impersonates, and
    `--as-group 李` is sent at all). Go refuses control characters but TAB, and so do we, as
    KUBECONFIG naming the header: http.client's own ValueError quoted the value, which may be the token.
    """
    refusal = AicrError(Code.KUBECONFIG, f"the {name} header cannot be sent: its value (from the kubeconfig or "
                        "the connection flags) holds a line break or another control character")
    try:
        wire = value.encode("utf-8", "surrogateescape")  # argv bytes that are no UTF-8 go as they came
    except UnicodeEncodeError:  # a lone surrogate from a JSON kubeconfig
        raise refusal from None
    if any((b < 0x20 and b != 0x09) or b == 0x7F for b in wire):
        raise refusal
    return wire.decode("latin-1")


def read_body(response: urllib3.BaseHTTPResponse, what: str, limit: int = bounded_json.MAX_BODY_BYTES, *,
              truncate: bool = False) -> bytes:
    """The whole body, but INVALID_OBJECT as soon as it is known to exceed `limit` (nothing more is read).

    `truncate`: the first `limit` bytes instead (a failure's body: its status code still says what failed).
    """
    declared = str(response.headers.get("Content-Length") or "")
    if not truncate and declared.isdigit() and int(declared) > limit:
        response.close()
        raise too_large(what, limit)
    chunks, size = [], 0
    for chunk in response.stream(1 << 16, decode_content=True):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            response.close()  # unread data is left on the connection: it must not go back to the pool
            if truncate:
                return b"".join(chunks)[:limit]
            del chunks
            raise too_large(what, limit)
    return b"".join(chunks)


def too_large(what: str, limit: int) -> AicrError:
    return AicrError(Code.INVALID_OBJECT, f"{what}: the API server's answer is larger than "
                     f"{limit // (1024 * 1024)} MiB, the limit for one answer; nothing more was read")


def _lines(response: urllib3.BaseHTTPResponse, what: str) -> Iterator[bytes]:
    """Newline-delimited JSON from a streaming response, line by line as it arrives (each within the limit)."""
    pending = b""
    for chunk in response.stream(4096, decode_content=True):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from (line for line in complete if line.strip())
        if len(pending) > bounded_json.MAX_BODY_BYTES:
            raise too_large(what, bounded_json.MAX_BODY_BYTES)
    if pending.strip():
        yield pending


def _trace(method: str, path: str) -> None:
    """Append one line per request to $AICR_REQUEST_LOG: method and path, never headers or bodies."""
    log = os.environ.get("AICR_REQUEST_LOG")
    if log:
        try:
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"{method} {path}\n")
        except OSError as err:
            raise AicrError(Code.USAGE, f"AICR_REQUEST_LOG={shown(log, 4096)} cannot be written to: "
                            f"{err.strerror or err} (name a file in a folder that exists)") from None


# -- connecting -----------------------------------------------------------------------------------------

def connect_args(args: argparse.Namespace, deadline: Deadline | None = None) -> KubeSession:
    """A session for a command: its --kubeconfig, --context and kubectl's connection flags."""
    overrides = Overrides.from_args(args)
    return connect(getattr(args, "kubeconfig", None), overrides.context,
                   deadline or command_deadline(overrides), overrides=overrides)


def command_deadline(overrides: Overrides) -> Deadline:
    """--request-timeout (0: none), else AICR_DEADLINE_SECONDS, else 30 s."""
    if overrides.request_timeout is None:
        return Deadline()
    return Deadline(overrides.request_timeout or math.inf)


def connect(kubeconfig: str | None, context: str | None, deadline: Deadline | None = None, *,
            overrides: Overrides | None = None) -> KubeSession:
    """Load credentials as kubectl does and return a session; KUBECONFIG errors on any failure."""
    deadline = deadline or Deadline()
    overrides = overrides or Overrides(context=context)
    return _connect(lambda: load_settings(kubeconfig, overrides, deadline), deadline)


def connect_entries(cluster: Mapping[str, Any], user: Mapping[str, Any], source: str, deadline: Deadline, *,
                    overrides: Overrides | None = None) -> KubeSession:
    """A session for a cluster and a user given as kubeconfig entries (a ClusterProfile's access provider),
    loaded as a context's would be; `source` names them in messages."""
    overrides = overrides or Overrides()
    return _connect(lambda: entry_settings(cluster, user, overrides, deadline, source), deadline)


def _connect(load: Callable[[], Settings], deadline: Deadline) -> KubeSession:
    # The client logs some failures (its exec plugin runner's, which client_adapter replaces) and goes
    # on regardless: what it logs on this thread while loading is the error (aicr_core.process_owner).
    with process_owner.library_records() as logged:
        settings = load()
    if logged:
        raise AicrError(Code.KUBECONFIG, f"cannot load the credentials: {first_line(logged[0].getMessage())}")
    try:
        return KubeSession(settings, deadline)
    except ImportError as err:  # a socks5:// proxy-url: urllib3 then imports PySocks, which we do not ship
        raise AicrError(Code.KUBECONFIG, f"cannot use the kubeconfig's proxy-url: {err} "
                        "(a SOCKS proxy needs the PySocks package)") from None


_CLIENT_LOCK = threading.Lock()


def _client(settings: Settings) -> ApiClient:
    """The client of these settings, made once: every session of one cluster's settings (the two
    reads of `list`, a fleet's turns, waves) shares its pool, whose connections are kept and
    reused. Each connection is watched by the deadline of the call that holds it, so sessions
    with deadlines of their own may share it."""
    with _CLIENT_LOCK:
        client: ApiClient | None = settings.shared.get("client")
        if client is None:
            try:
                client = client_adapter.new_client(settings.configuration)
            except ValueError as err:  # urllib3 could not parse the proxy-url (LocationParseError is a ValueError)
                proxy = shown(settings.configuration.proxy, 200)
                raise AicrError(Code.KUBECONFIG, f"the kubeconfig's proxy-url {proxy} is not a URL: "
                                f"{first_line(str(err))}") from None
            connections.watch_connections(client_adapter.pool_manager(client))
            settings.shared["client"] = client
    return client
