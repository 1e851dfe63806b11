"""The connections of a cluster's pool, each watched by the deadline of the call that holds it.

The only module that knows urllib3's private names: it mixes itself into urllib3's connection and
pool classes (`_new_conn`, `_get_conn`, `_put_conn`) so that the deadline can shut a socket down
on any thread, and a connection kept idle too long is not reused. `PRIVATE_NAMES` lists every
private name of urllib3 (and of CPython) this module and `direct_get`/`tls_contexts` rely on;
tests/unit/test_private_names.py checks them against the installed libraries.
"""
from __future__ import annotations

import socket
import time
from typing import Any

import urllib3

from aicr_core.session import tls_contexts
from aicr_core.session.deadline import Deadline

# A kept connection idle for longer is not reused (Go's http.Transport: 90 s).
KEEP_IDLE_SECONDS = 90.0

# (module, dotted name, the parameters it is called with or overridden with, or None for an attribute).
# `Class()` stands for an instance: its attribute is checked on one made for the test.
PRIVATE_NAMES: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("urllib3.connection", "HTTPConnection._new_conn", ("self",)),
    ("urllib3.connectionpool", "HTTPConnectionPool._get_conn", ("self", "timeout")),
    ("urllib3.connectionpool", "HTTPConnectionPool._put_conn", ("self", "conn")),
    ("urllib3.connectionpool", "HTTPConnectionPool.ConnectionCls", None),
    ("urllib3.connectionpool", "HTTPSConnectionPool.ConnectionCls", None),
    ("urllib3.poolmanager", "PoolManager().pool_classes_by_scheme", None),
    ("urllib3.connection", "HTTPConnection().sock", None),
    ("urllib3.connection", "HTTPSConnection().ssl_context", None),
    ("urllib3.connection", "HTTPSConnection().ca_certs", None),
    ("urllib3.connection", "HTTPSConnection().ca_cert_dir", None),
    ("urllib3.connection", "HTTPSConnection().ca_cert_data", None),
    ("urllib3.connection", "HTTPSConnection().cert_file", None),
    ("urllib3.connection", "HTTPSConnection().key_file", None),
    ("urllib3.connection", "HTTPSConnection().key_password", None),
    ("urllib3.connection", "HTTPSConnection().cert_reqs", None),
    ("urllib3.connection", "HTTPSConnection().ssl_version", None),
    ("urllib3.connection", "HTTPSConnection().ssl_minimum_version", None),
    ("urllib3.connection", "HTTPSConnection().ssl_maximum_version", None),
    ("urllib3.util.ssl_", "create_urllib3_context",
     ("ssl_version", "cert_reqs", "options", "ciphers", "ssl_minimum_version", "ssl_maximum_version",
      "verify_flags")),
    ("urllib3.util.ssl_", "resolve_cert_reqs", ("candidate",)),
    ("urllib3.util.ssl_", "resolve_ssl_version", ("candidate",)),
    ("urllib3.util.ssl_match_hostname", "CertificateError", None),
    ("socket", "socket.dup", ("self",)),
)


class _WatchedConnection:
    """Mixed into urllib3's connection classes: an fd of our own on each socket, for the deadline to shut.

    A dup of the socket, taken when it is made: shutdown(2) through it reaches the same socket, during
    the TLS handshake (when urllib3 holds it in a local variable) as after it.
    """

    _aicr_handle: socket.socket | None = None
    _aicr_deadline: Deadline | None = None

    def _new_conn(self) -> socket.socket:
        sock: socket.socket = super()._new_conn()  # type: ignore[misc]
        self._aicr_release()
        try:
            self._aicr_handle = sock.dup()
        except (OSError, AttributeError):  # a socket type without dup: socket timeouts only
            self._aicr_handle = None
        self._aicr_attach(Deadline.current())
        return sock

    def connect(self) -> None:
        if getattr(self, "ssl_context", False) is None:  # HTTPS, and urllib3 would make a TLS context for it
            tls_contexts.share(self)
        super().connect()  # type: ignore[misc]

    def _aicr_attach(self, deadline: Deadline | None) -> None:
        if deadline is not self._aicr_deadline:
            self._aicr_detach()
        self._aicr_deadline = deadline
        if deadline is not None and self._aicr_handle is not None:
            deadline.watch_socket(self._aicr_handle)

    def _aicr_detach(self) -> None:
        if self._aicr_deadline is not None and self._aicr_handle is not None:
            self._aicr_deadline.unwatch_socket(self._aicr_handle)
        self._aicr_deadline = None

    def _aicr_release(self) -> None:
        self._aicr_detach()
        if self._aicr_handle is not None:
            self._aicr_handle.close()
            self._aicr_handle = None

    def close(self) -> None:
        self._aicr_release()
        super().close()  # type: ignore[misc]

    def __del__(self) -> None:
        if self._aicr_handle is not None:
            self._aicr_handle.close()


class _WatchedPool:
    """Mixed into urllib3's pool classes: a connection is watched by the deadline of the call that takes it.

    A connection kept idle for longer than KEEP_IDLE_SECONDS is closed when taken, and opened
    anew: load balancers drop idle connections without a word (after 4 to 10 minutes), and a
    request sent on one is lost (no request is retried behind the deadline's back). Waves keep
    a cluster's pool for the whole command, minutes apart.
    """

    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)  # type: ignore[misc]
        idle_since = getattr(conn, "_aicr_idle_since", None)
        if idle_since is not None and time.monotonic() - idle_since > KEEP_IDLE_SECONDS:
            conn.close()  # urllib3 connects a closed connection again before using it
        conn._aicr_idle_since = None
        conn._aicr_attach(Deadline.current())
        return conn

    def _put_conn(self, conn: Any) -> None:
        if conn is not None:
            conn._aicr_detach()
            conn._aicr_idle_since = time.monotonic()
        super()._put_conn(conn)  # type: ignore[misc]


_WATCHED_POOLS: dict[type, type] = {}


def watch_connections(pool_manager: urllib3.PoolManager) -> None:
    """Swap the manager's pool classes (proxy and SOCKS ones too) for watched subclasses of themselves."""
    classes: dict[str, Any] = {}
    pool_class: Any
    for scheme, pool_class in pool_manager.pool_classes_by_scheme.items():
        if not issubclass(pool_class, _WatchedPool):
            if pool_class not in _WATCHED_POOLS:
                connection = type(f"Watched{pool_class.ConnectionCls.__name__}",
                                  (_WatchedConnection, pool_class.ConnectionCls), {})
                _WATCHED_POOLS[pool_class] = type(f"Watched{pool_class.__name__}", (_WatchedPool, pool_class),
                                                  {"ConnectionCls": connection})
            pool_class = _WATCHED_POOLS[pool_class]
        classes[scheme] = pool_class
    pool_manager.pool_classes_by_scheme = classes  # type: ignore[assignment]
