"""Credentials and server settings, found as kubectl finds them: the settings a session is made of.

The files and their merge are `kubeconfig_files`'s, kubectl's connection flags and impersonation
`kubeconfig_overrides`'s; the client's loader, with a credentials plugin bounded by the deadline,
`client_adapter`'s. This module puts them together: the named context's cluster and user, the flags
over them, loaded into a client configuration (docs/sessions.md).
"""
from __future__ import annotations

import copy
import functools
import logging
import os
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client import Configuration
from kubernetes.config.config_exception import ConfigException

from aicr_core.errors import AicrError, Code, shown, shown_argument
from aicr_core.session import client_adapter
from aicr_core.session.connection_flags import Overrides
from aicr_core.session.deadline import Deadline
from aicr_core.session.kubeconfig_files import (
    Entry,
    Merged,
    merged_context_names,  # noqa: F401 (aicr_core.fleet.context_source)
)
from aicr_core.session.kubeconfig_files import files as _files
from aicr_core.session.kubeconfig_files import merged as _merged
from aicr_core.session.kubeconfig_overrides import Impersonation, impersonation, override_cluster, override_user
from aicr_core.session.quoting import first_line


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
    return _settings(Entry("clusters[entry]", {"cluster": dict(cluster)}, None),
                     Entry("users[entry]", {"user": dict(user)}, None), overrides, deadline, source,
                     f"no server to talk to: {source} gives none")


def _settings(cluster: Entry, user: Entry, overrides: Overrides, deadline: Deadline, source: str,
              no_server: str) -> Settings:
    cluster = cluster._replace(value=override_cluster(dict(_mapping(cluster.value.get("cluster"), "cluster")),
                                                      overrides))
    user = user._replace(value=override_user(dict(_mapping(user.value.get("user"), "user")), overrides))
    if not cluster.value.get("server"):
        raise AicrError(Code.KUBECONFIG, no_server)
    acting_as = impersonation(user.value, overrides)
    configuration = _configuration(cluster.value["server"])
    configuration.retries = False  # never retry behind the deadline's back
    try:
        with deadline.enforced("loading the credentials"):
            client_adapter.load(cluster, user, configuration, deadline)
    except ConfigException as err:
        raise AicrError(Code.KUBECONFIG, f"{first_line(str(err))} ({source})") from None
    except (OSError, ValueError, TypeError, KeyError) as err:  # unreadable certificate file, broken base64, ...
        raise AicrError(Code.KUBECONFIG, f"cannot load the credentials: {type(err).__name__}: "
                        f"{first_line(str(err))}") from None
    return Settings(configuration, acting_as, source)


def _configuration(server: str) -> Configuration:
    """A client configuration with the environment's proxy for `server` (HTTPS_PROXY, NO_PROXY, ...).

    The client works the proxies out of the whole environment each time a Configuration is made
    and again each time its host is set; here they are worked out once for each value of the
    environment's proxy variables (a long-lived program whose proxy changes sees the change). A
    kubeconfig's proxy-url still wins (the loader sets it after this)."""
    proxies = _proxies_of(_proxy_variables())
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
    a large share of a fleet session's cost (docs/performance.md); each session gets a copy (`_configuration`)."""
    return Configuration(proxy=proxy, no_proxy=no_proxy)


def _proxy_variables() -> tuple[tuple[str, str], ...]:
    """What urllib reads of the environment for the proxies: `*_proxy` in either case, and
    REQUEST_METHOD (under which it ignores HTTP_PROXY)."""
    return tuple((name, value) for name, value in os.environ.items()
                 if name[-6:].lower() == "_proxy" or name == "REQUEST_METHOD")


@functools.lru_cache(maxsize=8)
def _proxies_of(variables: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The proxies of those variables (`variables` is the key: read by `getproxies` itself)."""
    return urllib.request.getproxies()


def _pick(merged: Merged, item: str, name: Any, what: str) -> Entry:
    """A deep copy of the named cluster or user (empty when none is named), remembering its file."""
    if not name:
        return Entry(f"{item}[none]", {}, None)
    found = merged.entries[item].get(str(name))
    if found is None:
        raise AicrError(Code.KUBECONFIG, f'{what} "{shown_argument(name) if isinstance(name, str) else shown(name)}" '
                        "not found in the kubeconfig")
    return Entry(found.name, copy.deepcopy(found.value), found.path)


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AicrError(Code.KUBECONFIG, f"kubeconfig: {what} is not a mapping")
    return value


logging.getLogger(__name__).addHandler(logging.NullHandler())
