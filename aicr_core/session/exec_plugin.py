"""A credentials (exec) plugin's process: its output read within bounds, its cluster as it is handed to it.

What runs the plugin for the client (the ExecCredential contract, the deadline) is
`client_adapter._BoundedExec`; this module knows no Kubernetes client.
"""
from __future__ import annotations

import base64
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aicr_core.errors import AicrError, Code
from aicr_core.session.quoting import first_line

# A credentials plugin's stdout and stderr, each: a real ExecCredential is a few KiB (a certificate and its
# key, or a token); beyond this the plugin is killed and the command fails (docs/sessions.md).
MAX_OUTPUT_BYTES = 1 << 20


class OutputTooLarge(Exception):
    """A process wrote more than the limit to one of its pipes (`stream`: stdout or stderr)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.stream = stream


def read_bounded(process: subprocess.Popen[bytes], limit: int, timeout: float | None) -> tuple[bytes, bytes]:
    """All a process writes to its stdout and stderr pipes (those it has) up to their end, as communicate(),
    but OutputTooLarge as soon as one passes `limit` bytes (the caller kills it) and TimeoutExpired when
    `timeout` seconds pass first. (docs/sessions.md: what a plugin that writes for ever cost before.)

    The pipes are closed on the way out: a process still writing then gets SIGPIPE.
    """
    ends = None if timeout is None else time.monotonic() + timeout
    named = [(name, pipe) for name, pipe in (("stdout", process.stdout), ("stderr", process.stderr)) if pipe]
    read = {pipe.fileno(): bytearray() for _, pipe in named}
    names = {pipe.fileno(): name for name, pipe in named}
    try:
        with selectors.DefaultSelector() as selector:
            for fd in read:
                selector.register(fd, selectors.EVENT_READ)
            while selector.get_map():
                left = None if ends is None else ends - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired(process.args, timeout or 0)
                for key, _ in selector.select(left):
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        selector.unregister(key.fd)
                    elif len(read[key.fd]) + len(chunk) > limit:
                        raise OutputTooLarge(names[key.fd])
                    else:
                        read[key.fd] += chunk
        by_name = {names[fd]: bytes(data) for fd, data in read.items()}
        return by_name.get("stdout", b""), by_name.get("stderr", b"")
    finally:
        for _, pipe in named:
            pipe.close()


EXEC_EXTENSION = "client.authentication.k8s.io/exec"


def exec_cluster(cluster: Mapping[str, Any], base_path: str | None = None) -> dict[str, Any]:
    """The cluster as kubectl hands it to a plugin that asks for it (`provideClusterInfo`): client
    authentication's Cluster (server, tls-server-name, insecure-skip-tls-verify, certificate-authority-data,
    proxy-url, disable-compression), with the cluster's extension named `client.authentication.k8s.io/exec`
    as `config`, and the CA file's data in place of its path."""
    info: dict[str, Any] = {"server": cluster.get("server") or ""}
    for key in ("tls-server-name", "proxy-url"):
        if cluster.get(key):
            info[key] = cluster[key]
    for key in ("insecure-skip-tls-verify", "disable-compression"):
        if cluster.get(key) is True:
            info[key] = True
    authority = cluster.get("certificate-authority-data")
    if not authority and isinstance(cluster.get("certificate-authority"), str) and cluster["certificate-authority"]:
        path = Path(base_path or "", cluster["certificate-authority"]).expanduser()
        try:
            authority = b64(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as err:
            raise AicrError(Code.KUBECONFIG, f"cannot read the certificate authority {path} for the credentials "
                            f"plugin: {first_line(str(err))}") from None
    if authority:
        info["certificate-authority-data"] = authority
    listed = cluster.get("extensions")
    for extension in listed if isinstance(listed, list) else []:
        if isinstance(extension, Mapping) and extension.get("name") == EXEC_EXTENSION:
            info["config"] = extension.get("extension")
            break
    return info


def kill(process: subprocess.Popen[bytes], interactive: bool) -> None:
    try:
        if interactive:
            process.kill()
        else:
            os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def b64(text: str) -> str:
    return base64.standard_b64encode(text.encode()).decode()
