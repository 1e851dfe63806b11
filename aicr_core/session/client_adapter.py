"""The Kubernetes client, as this project uses it: the only module that knows its private methods.

The client's loader (`KubeConfigLoader`) does what kubectl does with a kubeconfig's cluster and user
(auth providers, token files, base64 data written to private temporary files), with changes it
cannot make itself: a credentials (exec) plugin runs within the command's deadline and is killed
with its children when it passes (`_BoundedExec`), a CA given as data stays in memory, and a token
is fetched again only when it has expired (`_Loader`). Those changes override private methods of
`kubernetes==37.0.2`: each private name used is listed in `PRIVATE_NAMES`, which
tests/unit/test_private_names.py checks against the installed client (a client bump that moves one
fails there, in one place).
"""
from __future__ import annotations

import base64
import json
import logging
import subprocess
import sys
import threading
from collections.abc import Mapping
from typing import Any

import urllib3
from kubernetes.client import ApiClient, Configuration
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.exec_provider import ExecProvider
from kubernetes.config.kube_config import ConfigNode, KubeConfigLoader, _is_expired

from aicr_core.errors import AicrError, Code, shown
from aicr_core.session import bounded_json
from aicr_core.session.deadline import Alarm, Deadline
from aicr_core.session.exec_plugin import (
    MAX_OUTPUT_BYTES,
    OutputTooLarge,
    b64,
    exec_cluster,
    kill,
    read_bounded,
)
from aicr_core.session.kubeconfig_files import Entry
from aicr_core.session.text import first_line, quoted

# The private names of the client this module calls, overrides or reads: (module, dotted name, the
# parameters it is called with, or None for an attribute). Instance attributes are checked on a loader
# and an exec provider made for the test.
PRIVATE_NAMES: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("kubernetes.config.kube_config", "_is_expired", ("expiry",)),
    ("kubernetes.config.kube_config", "KubeConfigLoader._load_cluster_info", ("self",)),
    ("kubernetes.config.kube_config", "KubeConfigLoader._set_config", ("self", "client_configuration")),
    ("kubernetes.config.kube_config", "KubeConfigLoader._load_authentication", ("self",)),
    ("kubernetes.config.kube_config", "KubeConfigLoader._load_from_exec_plugin", ("self",)),
    ("kubernetes.config.kube_config", "KubeConfigLoader._get_base_path", ("self", "config_path")),
    ("kubernetes.config.kube_config", "KubeConfigLoader.__init__",
     ("self", "config_dict", "active_context", "get_google_credentials", "config_base_path", "config_persister",
      "temp_file_path")),
    ("kubernetes.config.kube_config", "KubeConfigLoader()._cluster", None),
    ("kubernetes.config.kube_config", "KubeConfigLoader()._user", None),
    ("kubernetes.config.exec_provider", "ExecProvider.__init__", ("self", "exec_config", "cwd", "cluster")),
    ("kubernetes.config.exec_provider", "ExecProvider().args", None),
    ("kubernetes.config.exec_provider", "ExecProvider().env", None),
    ("kubernetes.config.exec_provider", "ExecProvider().cwd", None),
    ("kubernetes.config.exec_provider", "ExecProvider().cluster", None),
    ("kubernetes.config.exec_provider", "ExecProvider().api_version", None),
    ("kubernetes.client.api_client", "ApiClient().rest_client", None),
    ("kubernetes.client.rest", "RESTClientObject().pool_manager", None),
)


def node(entry: Entry) -> ConfigNode:
    """A kubeconfig entry as the client's loader takes it."""
    return ConfigNode(entry.name, entry.value, entry.path)


def load(cluster: Entry, user: Entry, configuration: Configuration, deadline: Deadline) -> None:
    """Load the cluster and the user into `configuration` as the client does (within the deadline).

    ConfigException: what the client refuses (its words); OSError, ValueError & co.: a file or data
    that cannot be read."""
    config = ConfigNode("kubeconfig", {
        "current-context": "selected",
        "contexts": [{"name": "selected", "context": {"cluster": "selected", "user": "selected"}}],
        "clusters": [ConfigNode(cluster.name, {"name": "selected", "cluster": cluster.value}, cluster.path)],
        "users": [ConfigNode(user.name, {"name": "selected", "user": user.value}, user.path)],
    })
    _Loader(config, deadline).load_and_set(configuration)


def new_client(configuration: Configuration) -> ApiClient:
    """The client of a configuration (ValueError: a proxy-url urllib3 cannot parse)."""
    return ApiClient(configuration=configuration)


def pool_manager(client: ApiClient) -> urllib3.PoolManager:
    """The client's urllib3 pool manager (a ProxyManager or SOCKSProxyManager behind a proxy)."""
    manager: urllib3.PoolManager = client.rest_client.pool_manager
    return manager


def bearer_token(configuration: Configuration) -> str | None:
    """The Authorization header's value, after the client's refresh hook (it may run a plugin)."""
    value: str | None = configuration.get_api_key_with_prefix("BearerToken")
    return value


class _ClientErrors(logging.Handler):
    """Collects what the Kubernetes client logs (and keeps it off stderr: errors are ours to print).

    Per thread: sessions connecting at once on several threads (the fleet's) each see only what the
    client logged while loading their own credentials (it logs on the thread that loads them).
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self._threads = threading.local()

    @property
    def messages(self) -> list[str]:
        """What was logged on this thread since its last `install()`."""
        messages: list[str] | None = getattr(self._threads, "messages", None)
        if messages is None:
            messages = self._threads.messages = []
        return messages

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(first_line(record.getMessage()))

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


# -- credentials plugins within the deadline ------------------------------------------------------

class _Loader(KubeConfigLoader):
    """The client's loader, with credentials plugins that fail loudly and never outlive the deadline."""

    def __init__(self, config: ConfigNode, deadline: Deadline) -> None:
        super().__init__(config_dict=config, config_base_path=None)
        self._deadline = deadline

    def _load_cluster_info(self) -> None:
        """The client's, but a CA given as data stays in memory (the configuration's `ca_cert_data`, which
        aicr_core.session.tls_contexts loads into the cluster's TLS context) rather than being written to a
        temporary file that the connection reads back: a file made and read per cluster of a fleet. Its
        base64 is decoded as the client decodes it (the same errors); data that is no text (a DER
        certificate, or junk) takes the client's file, for OpenSSL to refuse it with the same words."""
        cluster = self._cluster.value
        data, server = cluster.get("certificate-authority-data"), cluster.get("server")
        if not data or not isinstance(server, str) or not server.rstrip("/").startswith("https"):
            super()._load_cluster_info()  # type: ignore[misc]
            return
        authority = base64.standard_b64decode(data.encode() if isinstance(data, str) else data)
        if not authority.isascii():
            super()._load_cluster_info()  # type: ignore[misc]
            return
        # The data wins over a file (as the client's FileOrData): neither is seen by the client's loading.
        kept = {key: cluster.pop(key) for key in ("certificate-authority-data", "certificate-authority")
                if key in cluster}
        try:
            super()._load_cluster_info()  # type: ignore[misc]
        finally:
            cluster.update(kept)
        self.ca_cert_data = authority.decode("ascii")

    def _set_config(self, client_configuration: Configuration) -> None:
        super()._set_config(client_configuration)  # type: ignore[misc]
        if "ca_cert_data" in self.__dict__:
            client_configuration.ca_cert_data = self.ca_cert_data
        if client_configuration.refresh_api_key_hook is not None:
            client_configuration.refresh_api_key_hook = self._refresh

    def _refresh(self, client_configuration: Configuration) -> None:
        """The hook the client runs before each request: a token that has expired is fetched again.

        The client's own hook also sets every setting again each time, and setting `host` reads
        the whole environment for a proxy (the largest cost of a request after TLS): only a new
        token changes anything, so only then is anything set.
        """
        if "expiry" in self.__dict__ and _is_expired(self.expiry):
            self._load_authentication()
            self._set_config(client_configuration)

    def _load_from_exec_plugin(self) -> bool | None:
        if "exec" not in self._user:
            return None
        base_path = self._get_base_path(self._cluster.path)
        plugin = _BoundedExec(self._user["exec"], base_path, self._cluster, self._deadline)
        status = plugin.run()
        if "token" in status:
            self.token = f"Bearer {plugin.text(status, 'token')}"
        elif "clientCertificateData" in status and "clientKeyData" in status:
            certificate, key = plugin.text(status, "clientCertificateData"), plugin.text(status, "clientKeyData")
            self._user.value.pop("client-certificate", None)
            self._user.value.pop("client-key", None)
            self._user.value["client-certificate-data"] = b64(certificate)
            self._user.value["client-key-data"] = b64(key)
        else:
            raise AicrError(Code.KUBECONFIG, f"credentials plugin {plugin.name} failed: its answer has neither a "
                            "token nor clientCertificateData and clientKeyData")
        if "expirationTimestamp" in status:
            from kubernetes.config.dateutil import parse_rfc3339
            stamp = plugin.text(status, "expirationTimestamp")
            try:
                self.expiry = parse_rfc3339(stamp)
            except (ValueError, TypeError, AttributeError):
                raise AicrError(Code.KUBECONFIG, f"credentials plugin {plugin.name} failed: its "
                                "status.expirationTimestamp is not an RFC 3339 time") from None
        return True


class _BoundedExec(ExecProvider):
    """The client's ExecProvider (same ExecCredential contract), run within the deadline."""

    def __init__(self, exec_config: ConfigNode, cwd: str, cluster: ConfigNode, deadline: Deadline) -> None:
        try:
            super().__init__(exec_config, cwd, cluster)
        except ConfigException as err:
            raise AicrError(Code.KUBECONFIG, f"credentials plugin: {err}") from None
        self.deadline = deadline
        self.interactive_mode = exec_config.safe_get("interactiveMode") or "IfAvailable"
        self.name = f'"{self.args[0]}"'

    def text(self, status: Mapping[str, Any], key: str) -> str:
        """A string field of the plugin's status; KUBECONFIG naming the plugin and the field otherwise."""
        value = status.get(key)
        if not isinstance(value, str):
            raise AicrError(Code.KUBECONFIG, f"credentials plugin {self.name} failed: its status.{key} is "
                            f"{bounded_json.kind_of(value)}, not a string")
        return value

    def run(self, previous_response: Any = None) -> dict[str, Any]:
        command = self.args[0]
        interactive = self.interactive_mode != "Never" and sys.stdin.isatty()
        info: dict[str, Any] = {"apiVersion": self.api_version, "kind": "ExecCredential",
                                "spec": {"interactive": interactive}}
        if self.cluster:
            info["spec"]["cluster"] = exec_cluster(self.cluster.value, self.cwd)
        self.env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
        timeout = self.deadline.timeout()  # before starting it: an expired deadline starts nothing
        try:
            process = subprocess.Popen(
                self.args, stdout=subprocess.PIPE, stderr=None if interactive else subprocess.PIPE,
                stdin=None if interactive else subprocess.DEVNULL, cwd=self.cwd, env=self.env,
                start_new_session=not interactive)  # its own group, so that killing it kills its children
        except OSError as err:
            raise AicrError(Code.KUBECONFIG, f"credentials plugin failed: {err}") from None
        try:
            with self.deadline.watching_process(process):  # on any thread: killed, group and all, at the deadline
                outputs = read_bounded(process, MAX_OUTPUT_BYTES, timeout)
                process.wait(timeout=timeout)  # its pipes are closed: it is ending (the watchdog kills it otherwise)
        except OutputTooLarge as err:
            kill(process, interactive)
            raise AicrError(Code.KUBECONFIG, f"credentials plugin {self.name} failed: credential plugin output too "
                            f"large (more than {MAX_OUTPUT_BYTES // (1 << 20)} MiB on its {err.stream}); it was "
                            "stopped") from None
        except (subprocess.TimeoutExpired, Alarm):
            kill(process, interactive)
            raise self.deadline.expired(f'the credentials plugin "{command}"') from None
        except BaseException:
            kill(process, interactive)
            raise
        if self.deadline.fired:
            raise self.deadline.expired(f'the credentials plugin "{command}"')
        stdout, stderr = (part.decode("utf-8", "replace") for part in outputs)
        if process.returncode != 0:
            detail = quoted(first_line(stderr)) if stderr.strip() else ""
            raise AicrError(Code.KUBECONFIG, f"credentials plugin failed: exec: process returned "
                            f"{process.returncode}" + (f". {detail}" if detail else ""))
        try:
            data = bounded_json.loads(stdout)
        except bounded_json.TooDeep as err:
            raise AicrError(Code.KUBECONFIG, f"credentials plugin {self.name} failed: its output is refused: "
                            f"{err}") from None
        except ValueError:
            raise AicrError(Code.KUBECONFIG, "credentials plugin failed: its output is not JSON") from None
        if not isinstance(data, dict) or not isinstance(data.get("status"), dict):
            raise AicrError(Code.KUBECONFIG, "credentials plugin failed: its output is no ExecCredential")
        if data.get("apiVersion") != self.api_version:
            raise AicrError(Code.KUBECONFIG, f"credentials plugin failed: it answered apiVersion "
                            f"{shown(data.get('apiVersion'))}, not {shown(self.api_version)}")
        status: dict[str, Any] = data["status"]
        return status
