"""Credentials and server settings, found as kubectl finds them.

The files: `--kubeconfig PATH` alone (it must exist), else every file of
`$KUBECONFIG` that exists, merged as kubectl merges them (the first file to
name a cluster, context or user, or to set `current-context`, wins), else
`~/.kube/config`. Then kubectl's connection flags override what the files
say, with kubectl's rules (`--certificate-authority` and
`--insecure-skip-tls-verify` replace each other, `--server` drops the file's
`tls-server-name`, `--token` stands for the user's other credentials).

The official client does the rest (auth providers, token files, base64 data
written to private temporary files), with two changes it cannot make itself:
a credentials (exec) plugin runs within the command's deadline and is killed
with its children when the deadline passes, and impersonation (`--as`, the
kubeconfig's `as`/`as-groups`) is kept for the session to send, since the
client ignores it.
"""
from __future__ import annotations

import base64
import copy
import functools
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from kubernetes.client import Configuration
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.exec_provider import ExecProvider
from kubernetes.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION, ConfigNode, KubeConfigLoader, _is_expired

from aicr_core.errors import AicrError, Code, shown, shown_argument
from aicr_core.session import bounded_json, bounded_yaml, private_temp
from aicr_core.session.connection_flags import Overrides
from aicr_core.session.deadline import Alarm, Deadline

ITEMS = ("clusters", "contexts", "users")
# A credentials plugin's stdout and stderr, each: a real ExecCredential is a few KiB (a certificate and its
# key, or a token); beyond this the plugin is killed and the command fails (docs/sessions.md).
MAX_OUTPUT_BYTES = 1 << 20
MAX_QUOTED_CHARS = 1000  # of a plugin's stderr (or any text of it) quoted in an error


class Impersonation(NamedTuple):
    """Who to act as (Impersonate-* headers); empty `user`: nobody."""

    user: str = ""
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (key, values) pairs, sorted by key

    def headers(self) -> list[tuple[str, str]]:
        if not self.user:
            return []
        pairs = [("Impersonate-User", self.user)]
        pairs += [("Impersonate-Group", group) for group in self.groups]
        if self.uid:
            pairs.append(("Impersonate-Uid", self.uid))
        for key, values in self.extra:
            pairs += [(f"Impersonate-Extra-{_header_key_escape(key)}", value) for value in values]
        return pairs


_HEADER_KEY_BYTES = frozenset(b"!#$&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _header_key_escape(key: str) -> str:
    """client-go's headerKeyEscape: a byte that may not stand in a header name (or `%`) becomes %XX,
    so `scopes.example.com/team` is sent as `scopes.example.com%2Fteam`, as kubectl sends it."""
    return "".join(chr(b) if b in _HEADER_KEY_BYTES else f"%{b:02X}" for b in key.encode("utf-8"))


@dataclass(frozen=True)
class Settings:
    """What a session needs: the client's configuration, and whom to impersonate.

    `shared` holds what every session made from these settings (one cluster, one set of
    credentials) shares: its pool of kept connections (aicr_core.session.kube). Never another's.
    """

    configuration: Configuration
    impersonation: Impersonation
    source: str  # the kubeconfig file(s), for messages
    shared: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def load_settings(kubeconfig: str | None, overrides: Overrides, deadline: Deadline) -> Settings:
    """Load the kubeconfig as kubectl does and apply the flags; KUBECONFIG errors on any failure."""
    files, source = _files(kubeconfig)
    merged = _merged(files)
    context_name = overrides.context or merged.current_context
    context: Mapping[str, Any] = {}
    if context_name:
        found = merged.entries["contexts"].get(context_name)
        if found is None:
            raise AicrError(Code.KUBECONFIG, f'context "{shown_argument(context_name)}" not found in the '
                            f'kubeconfig ({source})')
        context = _mapping(found.value.get("context"), f"context {context_name}")
    elif not files and not overrides.server:
        raise AicrError(Code.KUBECONFIG, f"no kubeconfig found (looked at {source}); "
                        "pass --kubeconfig or set KUBECONFIG")
    cluster = _pick(merged, "clusters", overrides.cluster or context.get("cluster"), "cluster")
    user = _pick(merged, "users", overrides.user or context.get("user"), "user")
    no_server = (f"no server to talk to: context {context_name or '(none)'} names no cluster with a server in "
                 f"the kubeconfig ({source}); pass --context or --server")
    return _settings(cluster, user, overrides, deadline, source, no_server)


def entry_settings(cluster: Mapping[str, Any], user: Mapping[str, Any], overrides: Overrides, deadline: Deadline,
                   source: str) -> Settings:
    """Settings for a cluster and a user that no kubeconfig file holds (a ClusterProfile's, say), given as
    kubeconfig entries; loaded as a context of a file would be. `source` names them in messages."""
    return _settings(ConfigNode("clusters[entry]", {"cluster": dict(cluster)}, None),
                     ConfigNode("users[entry]", {"user": dict(user)}, None), overrides, deadline, source,
                     f"no server to talk to: {source} gives none")


def _settings(cluster: ConfigNode, user: ConfigNode, overrides: Overrides, deadline: Deadline, source: str,
              no_server: str) -> Settings:
    cluster.value = _override_cluster(dict(_mapping(cluster.value.get("cluster"), "cluster")), overrides)
    user.value = _override_user(dict(_mapping(user.value.get("user"), "user")), overrides)
    if not cluster.value.get("server"):
        raise AicrError(Code.KUBECONFIG, no_server)
    impersonation = _impersonation(user.value, overrides)
    config = ConfigNode("kubeconfig", {
        "current-context": "selected",
        "contexts": [{"name": "selected", "context": {"cluster": "selected", "user": "selected"}}],
        "clusters": [ConfigNode(cluster.name, {"name": "selected", "cluster": cluster.value}, cluster.path)],
        "users": [ConfigNode(user.name, {"name": "selected", "user": user.value}, user.path)],
    })
    configuration = _configuration(cluster.value["server"])
    configuration.retries = False  # never retry behind the deadline's back
    private_temp.use()  # the client's key files, in a folder removed at exit whatever a worker still does
    try:
        with deadline.enforced("loading the credentials"):
            _Loader(config, deadline).load_and_set(configuration)
    except ConfigException as err:
        raise AicrError(Code.KUBECONFIG, f"{first_line(str(err))} ({source})") from None
    except (OSError, ValueError, TypeError, KeyError) as err:  # unreadable certificate file, broken base64, ...
        raise AicrError(Code.KUBECONFIG, f"cannot load the credentials: {type(err).__name__}: "
                        f"{first_line(str(err))}") from None
    return Settings(configuration, impersonation, source)


def _configuration(server: str) -> Configuration:
    """A client configuration with the environment's proxy for `server` (HTTPS_PROXY, NO_PROXY, ...).

    The client reads the whole environment for it each time a Configuration is made and again
    each time its host is set; the environment is read once a process instead, as kubectl
    reads it. A kubeconfig's proxy-url still wins (the loader sets it after this)."""
    proxies = _environment_proxies()
    proxy = proxies.get(urllib.parse.urlsplit(server).scheme) or proxies.get("all") or ""
    configuration = copy.copy(_blank_configuration(proxy, proxies.get("no") or ""))
    # Nothing mutable is shared with the template or another session (the loader fills `api_key`).
    configuration.__dict__.update({name: dict(value) for name, value in vars(configuration).items()
                                   if isinstance(value, dict)})
    return configuration


@functools.lru_cache(maxsize=8)
def _blank_configuration(proxy: str, no_proxy: str) -> Configuration:
    """A configuration as the client makes it, once a process: making one sets the levels of the client's
    loggers (which empties the logging module's cache of every logger's level) and counts the CPUs,
    a fifth of the cost of a fleet's session; each session gets a copy (`_configuration`)."""
    return Configuration(proxy=proxy, no_proxy=no_proxy)


@functools.lru_cache(maxsize=1)
def _environment_proxies() -> dict[str, str]:
    return urllib.request.getproxies()


# -- the files ---------------------------------------------------------------------------------

# A file is known by (path, device, inode, size, mtime): changed in place, it is read again.
FileKey = tuple[str, int, int, int, int]


class Merged(NamedTuple):
    """The merged kubeconfig: entries by name (in the files' order), and the current context."""

    current_context: str
    entries: Mapping[str, Mapping[str, ConfigNode]]  # "clusters" | "contexts" | "users" -> name -> entry


def _files(kubeconfig: str | None) -> tuple[list[tuple[FileKey, Path]], str]:
    """The kubeconfig files to merge, each with its key (a stat: cheap), and their names for messages."""
    if kubeconfig:
        path = Path(kubeconfig).expanduser()
        if not _is_file(path):
            raise AicrError(Code.KUBECONFIG, f"kubeconfig {shown_argument(kubeconfig)} does not exist or is not a "
                            "file")
        return [(_key(path), path)], shown_argument(kubeconfig)
    listed = os.environ.get("KUBECONFIG") or KUBE_CONFIG_DEFAULT_LOCATION
    paths = [Path(p).expanduser() for p in listed.split(os.pathsep) if p]
    return [(_key(p), p) for p in paths if _is_file(p)], shown_argument(listed, 200)


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long, say: no file, as kubectl sees it
        return False


def _key(path: Path) -> FileKey:
    try:
        info = path.stat()
    except OSError as err:
        raise AicrError(Code.KUBECONFIG, f"cannot read kubeconfig {path}: {first_line(str(err))}") from None
    return (str(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


# The merged kubeconfig by its files' keys: a command across 500 contexts of one file parses and
# merges it once, not 500 times (each merge also grew with the file: the fleet's CPU went as the
# square of its size). Sessions only read it: every entry a session changes is copied first
# (_pick copies the cluster and user deeply), so nothing one session loads, an exec plugin's
# certificate say, reaches another's. The lock is held while a file is parsed, so that the
# fleet's workers, starting together, do not all parse it at once.
_MERGED: dict[tuple[FileKey, ...], Merged] = {}
_MERGED_LOCK = threading.Lock()


def _merged(files: list[tuple[FileKey, Path]]) -> Merged:
    key = tuple(file_key for file_key, _ in files)
    with _MERGED_LOCK:
        merged = _MERGED.get(key)
        if merged is None:
            merged = _MERGED[key] = _merge([(path, _parse(path)) for _, path in files])
    return merged


def _parse(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        doc = _json(text)
        if doc is None:  # YAML, on libyaml where PyYAML has it; an anchor bomb is refused, not expanded
            doc = bounded_yaml.load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise AicrError(Code.KUBECONFIG, f"cannot read kubeconfig {path}: {first_line(str(err))}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise AicrError(Code.KUBECONFIG, f"kubeconfig {path} is not a kubeconfig (a YAML mapping)")
    return doc


def _json(text: str) -> Any:
    """A kubeconfig written as JSON (as tools write them), read as JSON, as kubectl reads it: a YAML
    parser builds the same document sixty times slower (0.2 s for 500 contexts); None if it is not JSON."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        return bounded_json.loads(text)  # nesting bounded: 100,000 `{` is refused, not a RecursionError
    except ValueError:
        return None  # YAML's flow style, or too deep, say: the bounded YAML loader says what it is


def _merge(files: list[tuple[Path, dict[str, Any]]]) -> Merged:
    """kubectl's merge: the first file to name an entry, or to set current-context, wins."""
    current_context = ""
    entries: dict[str, dict[str, ConfigNode]] = {item: {} for item in ITEMS}
    for path, doc in files:
        for item in ITEMS:
            listed = doc.get(item) or []
            if not isinstance(listed, list):
                raise AicrError(Code.KUBECONFIG, f"kubeconfig {path}: {item} is not a list")
            named = entries[item]
            for entry in listed:
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    raise AicrError(Code.KUBECONFIG, f"kubeconfig {path}: an entry of {item} has no name")
                if entry["name"] not in named:
                    named[entry["name"]] = ConfigNode(f"{item}[name={entry['name']}]", entry, str(path))
        current = doc.get("current-context")
        if not current_context and isinstance(current, str):
            current_context = current
    return Merged(current_context, entries)


def _pick(merged: Merged, item: str, name: Any, what: str) -> ConfigNode:
    """A deep copy of the named cluster or user (empty when none is named), remembering its file."""
    if not name:
        return ConfigNode(f"{item}[none]", {}, None)
    found = merged.entries[item].get(str(name))
    if found is None:
        raise AicrError(Code.KUBECONFIG, f'{what} "{shown_argument(name) if isinstance(name, str) else shown(name)}" '
                        "not found in the kubeconfig")
    return ConfigNode(found.name, copy.deepcopy(found.value), found.path)


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AicrError(Code.KUBECONFIG, f"kubeconfig: {what} is not a mapping")
    return value


# -- kubectl's overrides -------------------------------------------------------------------------

def _override_cluster(cluster: dict[str, Any], o: Overrides) -> dict[str, Any]:
    if o.server:
        cluster["server"] = o.server
    server = cluster.get("server")
    if server is not None and not isinstance(server, str):
        raise AicrError(Code.KUBECONFIG, f"kubeconfig: the cluster's server is {type(server).__name__}, not a URL")
    if server:
        cluster["server"] = _server_url(server)
    if o.insecure_skip_tls_verify or o.certificate_authority:
        # As kubectl: either flag replaces the file's CA and its insecure setting.
        for key in ("certificate-authority", "certificate-authority-data", "insecure-skip-tls-verify"):
            cluster.pop(key, None)
        if o.certificate_authority:
            cluster["certificate-authority"] = os.path.abspath(o.certificate_authority)
        cluster["insecure-skip-tls-verify"] = o.insecure_skip_tls_verify
    if o.tls_server_name or o.server:
        cluster.pop("tls-server-name", None)
        if o.tls_server_name:
            cluster["tls-server-name"] = o.tls_server_name
    return cluster


def _server_url(server: str) -> str:
    """As client-go: `host:port` means https; only http and https are spoken."""
    url = server if "://" in server else f"https://{server}"
    scheme, _, rest = url.partition("://")
    if scheme.lower() not in ("http", "https") or not rest.strip("/"):
        raise AicrError(Code.KUBECONFIG, f"server {shown(server, 200)} is not an http(s) URL")
    return url


def _override_user(user: dict[str, Any], o: Overrides) -> dict[str, Any]:
    if o.token:
        # An explicit token is the credential: kubectl runs no credentials plugin then.
        for key in ("token", "tokenFile", "exec", "auth-provider", "username", "password"):
            user.pop(key, None)
        user["token"] = o.token
    for flag, key in ((o.client_certificate, "client-certificate"), (o.client_key, "client-key")):
        if flag:
            user.pop(f"{key}-data", None)
            user[key] = os.path.abspath(flag)
    return user


def _impersonation(user: Mapping[str, Any], o: Overrides) -> Impersonation:
    """`--as` & co., else the kubeconfig user's `as` & co. (which the official client would ignore)."""
    name = o.impersonate or _text(user.get("as"))
    listed = user.get("as-groups") or []
    if not isinstance(listed, list):  # a string would be sent one character a group
        raise AicrError(Code.KUBECONFIG, "kubeconfig: the user's as-groups is not a list")
    groups = o.impersonate_groups or tuple(_text(g) for g in listed)
    uid = o.impersonate_uid or _text(user.get("as-uid"))
    extra_raw = user.get("as-user-extra") or {}
    extra = tuple(sorted((str(k), tuple(_text(v) for v in (vs if isinstance(vs, list) else [vs])))
                         for k, vs in (extra_raw.items() if isinstance(extra_raw, Mapping) else [])))
    if (groups or uid or extra) and not name:
        raise AicrError(Code.USAGE, "requesting uid, groups or user-extra without impersonating a user: "
                        "pass --as USER too")
    return Impersonation(name, tuple(groups), uid, extra)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def quoted(text: str, limit: int = MAX_QUOTED_CHARS) -> str:
    """Another program's text (a plugin's stderr) for a message: at most `limit` characters, cut with `...`."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def first_line(text: str) -> str:
    """The first line of an error's text (a library's may run to a page), for a one-line message."""
    return text.strip().splitlines()[0] if text.strip() else "unknown error"


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
            self._user.value["client-certificate-data"] = _b64(certificate)
            self._user.value["client-key-data"] = _b64(key)
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


def _b64(text: str) -> str:
    return base64.standard_b64encode(text.encode()).decode()


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
            _kill(process, interactive)
            raise AicrError(Code.KUBECONFIG, f"credentials plugin {self.name} failed: credential plugin output too "
                            f"large (more than {MAX_OUTPUT_BYTES // (1 << 20)} MiB on its {err.stream}); it was "
                            "stopped") from None
        except (subprocess.TimeoutExpired, Alarm):
            _kill(process, interactive)
            raise self.deadline.expired(f'the credentials plugin "{command}"') from None
        except BaseException:
            _kill(process, interactive)
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


class OutputTooLarge(Exception):
    """A process wrote more than the limit to one of its pipes (`stream`: stdout or stderr)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.stream = stream


def read_bounded(process: subprocess.Popen[bytes], limit: int, timeout: float | None) -> tuple[bytes, bytes]:
    """All a process writes to its stdout and stderr pipes (those it has) up to their end, as communicate(),
    but OutputTooLarge as soon as one passes `limit` bytes (the caller kills it) and TimeoutExpired when
    `timeout` seconds pass first. A plugin that wrote for ever took 4.9 GB in 9 s (issue 23).

    The pipes are closed on the way out: a process still writing then gets SIGPIPE.
    """
    import selectors
    import time

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
            authority = _b64(path.read_text(encoding="utf-8"))
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


def _kill(process: subprocess.Popen[bytes], interactive: bool) -> None:
    try:
        if interactive:
            process.kill()
        else:
            os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


logging.getLogger(__name__).addHandler(logging.NullHandler())


def merged_context_names(kubeconfig: str | None) -> list[str]:
    """The context names of the kubeconfig, merged as kubectl merges its files, in their order."""
    files, source = _files(kubeconfig)
    if not files:
        raise AicrError(Code.KUBECONFIG, f"no kubeconfig found (looked at {source}); "
                        "pass --kubeconfig or set KUBECONFIG")
    return list(_merged(files).entries["contexts"])
