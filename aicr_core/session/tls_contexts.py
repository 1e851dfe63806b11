"""TLS client contexts shared by the connections whose TLS material is the same.

urllib3 makes a new `SSLContext` for every connection it opens without one: OpenSSL's
SSL_CTX_new, the CA file parsed into it, the client certificate and key loaded (about 1 ms of
CPU; 50 ms when the cluster names no CA and the system's trust store is read). A fleet `list`
opens two connections a cluster, so 500 clusters paid that 1,000 times. A context holds
nothing but that material and the settings urllib3 gives it, so this module keeps one per
(verification mode, TLS versions, CA bytes, client certificate and key bytes) for the process,
made as urllib3 makes its own, and hands it to each connection in place of the files.

What is shared carries nothing of one cluster to another:
- the key is the material itself, read from the files at each connect (a file changed under a
  long command is taken as it is then) or given as data (a kubeconfig's CA data is kept in
  memory: aicr_core.session.client_adapter), so two clusters share a context only when they trust
  the same CA and present the same client certificate;
- the connection's CA and certificate files are cleared once it has the context, so urllib3
  never loads another cluster's CA into a shared context (it would, were both given);
- session tickets are off (urllib3's OP_NO_TICKET) and the client offers no cached session, so
  no TLS session of one server is offered to another; urllib3 sets the context's verify_mode
  and ALPN at each connect, to the values it was made with.
A CA folder (`ca_cert_dir`) or a key password (neither comes from a kubeconfig) is left to
urllib3, unshared.

The process keeps at most MAX_CONTEXTS of them, the least recently used dropped first (a context
in use by a connection stays that connection's): a fleet of 500 clusters, each with a CA of its
own, fits; a long-lived program whose clusters rotate their certificates does not grow for ever.
"""
from __future__ import annotations

import hashlib
import ssl
import threading
from collections import OrderedDict
from typing import Any

import urllib3
from urllib3.util.ssl_ import create_urllib3_context, resolve_cert_reqs, resolve_ssl_version

MAX_CONTEXTS = 1024
_CONTEXTS: OrderedDict[tuple[Any, ...], ssl.SSLContext] = OrderedDict()  # least recently used first
_LOCK = threading.Lock()


def share(conn: Any) -> None:
    """Give an urllib3 HTTPS connection that has no context the shared one for its material."""
    if conn.ssl_context is not None or conn.ca_cert_dir or conn.key_password:
        return
    ca_file, cert_file, key_file = conn.ca_certs, conn.cert_file, conn.key_file
    ca_data = conn.ca_cert_data
    material = (_read(ca_file), ca_data.encode() if isinstance(ca_data, str) else ca_data,
                _read(cert_file), _read(key_file))
    key = (resolve_cert_reqs(conn.cert_reqs), conn.ssl_version, conn.ssl_minimum_version,
           conn.ssl_maximum_version, *(_digest(m) for m in material))
    with _LOCK:
        context = _CONTEXTS.get(key)
        if context is not None:
            _CONTEXTS.move_to_end(key)
    if context is None:
        context = _new_context(conn, ca_file, ca_data, cert_file, key_file, material[3])
        if (_read(ca_file), _read(cert_file), _read(key_file)) == (material[0], material[2], material[3]):
            with _LOCK:  # not a file changed while it was loaded: the context holds what its key says
                context = _CONTEXTS.setdefault(key, context)
                while len(_CONTEXTS) > MAX_CONTEXTS:
                    _CONTEXTS.popitem(last=False)
    conn.ssl_context = context
    conn.ca_certs = conn.ca_cert_data = conn.cert_file = conn.key_file = None


def _new_context(conn: Any, ca_file: str | None, ca_data: str | bytes | None, cert_file: str | None,
                 key_file: str | None, key_bytes: bytes | None) -> ssl.SSLContext:
    """What urllib3 would build for this connection (its errors included), once."""
    context = create_urllib3_context(ssl_version=resolve_ssl_version(conn.ssl_version),
                                     ssl_minimum_version=conn.ssl_minimum_version,
                                     ssl_maximum_version=conn.ssl_maximum_version,
                                     cert_reqs=resolve_cert_reqs(conn.cert_reqs))
    if ca_file or ca_data:
        try:
            context.load_verify_locations(ca_file, None, ca_data)
        except (OSError, ValueError) as err:
            if ca_file or not isinstance(ca_data, str):
                raise urllib3.exceptions.SSLError(err) from err
            raise urllib3.exceptions.SSLError(_file_refusal(ca_data) or err) from err
    else:
        context.load_default_certs()
    if cert_file:
        if key_bytes is not None and b"ENCRYPTED" in key_bytes:  # OpenSSL would ask for a password on the tty
            raise urllib3.exceptions.SSLError("Client private key is encrypted, password is required")
        context.load_cert_chain(cert_file, key_file)
    return context


def _file_refusal(ca_data: str) -> Exception | None:
    """What OpenSSL says of this CA text read from a file: a kubeconfig's CA data is kept in memory
    (aicr_core.session.client_adapter), and a bad one is refused with the words it had as the client's file."""
    import tempfile

    from aicr_core import process_owner

    with process_owner.temp_folder() as folder, \
            tempfile.NamedTemporaryFile("w", encoding="ascii", suffix=".crt", dir=folder) as file:
        file.write(ca_data)
        file.flush()
        try:
            ssl.create_default_context(cafile=file.name)
        except (OSError, ValueError) as err:
            return err
    return None


def _read(path: str | None) -> bytes | None:
    if not path:
        return None
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:
        return None  # loading it fails the same way, with urllib3's message


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def cached() -> int:
    """How many contexts the process holds (for tests)."""
    with _LOCK:
        return len(_CONTEXTS)
