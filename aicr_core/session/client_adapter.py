"""The Kubernetes client, as this project uses it: the only module that knows its private names.

The client's loader (`KubeConfigLoader`) does what kubectl does with a kubeconfig's cluster and user
(auth providers, token files, base64 data written to private temporary files), with changes it
cannot make itself: a credentials (exec) plugin runs within the command's deadline and is killed
with its children when it passes (`_BoundedExec`), a CA given as data stays in memory, and a token
is fetched again only when it has expired (`_Loader`). Whether a plugin may prompt is the process
owner's to say (aicr_core.process_owner), not whether stdin happens to be a terminal.

The client writes kubeconfig key data (a client certificate and key) to temporary files, and
publishes a file's name before it has written the content: a fleet's sessions with one client
certificate, set up at once, took the name of a file still empty and failed with OpenSSL's "PEM
lib". So its writer is replaced, once, at this module's import, by one that writes into the
process's private folder (`process_owner.temp_folder()`, removed at exit whatever a worker still
does) and one call at a time: a name is seen only once its file is whole (`_write_whole`).

Those changes override or replace private names of `kubernetes==37.0.2`: each one used is listed
in `PRIVATE_NAMES`, which tests/unit/test_private_names.py checks against the installed client (a
client bump that moves one fails there, in one place).
"""
from __future__ import annotations

import base64
import functools
import json
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

import urllib3
from kubernetes.client import ApiClient, Configuration
from kubernetes.config import kube_config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.exec_provider import ExecProvider
from kubernetes.config.kube_config import ConfigNode, KubeConfigLoader, _is_expired

from aicr_core import process_owner
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
from aicr_core.session.quoting import first_line, quoted

# The private names of the client this module calls, overrides or reads: (module, dotted name, the
# parameters it is called with, or None for an attribute). Instance attributes are checked on a loader
# and an exec provider made for the test.
PRIVATE_NAMES: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("kubernetes.config.kube_config", "_is_expired", ("expiry",)),
    ("kubernetes.config.kube_config", "_create_temp_file_with_content",
     ("content", "temp_file_path", "force_recreate")),
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


# -- the client's key files --------------------------------------------------------------------------

def _write_whole(client_writer: Callable[..., str]) -> Callable[..., str]:
    """The client's temporary-file writer, one call at a time, into the process's private folder."""

    @functools.wraps(client_writer)  # its signature stays the client's (tests/unit/test_private_names.py)
    def create_temp_file_with_content(content: Any, temp_file_path: str | None = None,
                                      force_recreate: bool = False) -> str:
        with process_owner.temp_folder() as folder:  # held while writing: the name is handed out once whole
            return client_writer(content, temp_file_path or folder, force_recreate)

    create_temp_file_with_content.writes_whole = True  # type: ignore[attr-defined]
    return create_temp_file_with_content


if not getattr(kube_config._create_temp_file_with_content, "writes_whole", False):
    kube_config._create_temp_file_with_content = _write_whole(kube_config._create_temp_file_with_content)


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
        interactive = self.interactive_mode != "Never" and process_owner.current().prompts_allowed()
        info: dict[str, Any] = {"apiVersion": self.api_version, "kind": "ExecCredential",
                                "spec": {"interactive": interactive}}
        if self.cluster:
            info["spec"]["cluster"] = exec_cluster(self.cluster.value, self.cwd)
        self.env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
        timeout = self.deadline.timeout()  # before starting it: an expired deadline starts nothing
        what = f'the credentials plugin "{command}"'

        def start() -> subprocess.Popen[bytes]:
            try:
                return subprocess.Popen(
                    self.args, stdout=subprocess.PIPE, stderr=None if interactive else subprocess.PIPE,
                    stdin=None if interactive else subprocess.DEVNULL, cwd=self.cwd, env=self.env,
                    start_new_session=not interactive)  # its own group, so that killing it kills its children
            except OSError as err:
                raise AicrError(Code.KUBECONFIG, f"credentials plugin failed: {err}") from None

        # Started under the deadline's lock: on any thread, killed, group and all, at the deadline or the exit.
        with self.deadline.watching_process(start, what) as process:
            try:
                outputs = read_bounded(process, MAX_OUTPUT_BYTES, timeout)
                process.wait(timeout=timeout)  # its pipes are closed: it is ending (the watchdog kills it otherwise)
            except OutputTooLarge as err:
                kill(process, interactive)
                raise AicrError(Code.KUBECONFIG, f"credentials plugin {self.name} failed: credential plugin output "
                                f"too large (more than {MAX_OUTPUT_BYTES // (1 << 20)} MiB on its {err.stream}); "
                                "it was stopped") from None
            except (subprocess.TimeoutExpired, Alarm):
                kill(process, interactive)
                raise self.deadline.expired(what) from None
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
