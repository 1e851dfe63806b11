"""The fleet source of the kubeconfig's contexts (`--contexts`, `--all-contexts`): the default one.

Each member is a context of the merged kubeconfig (as kubectl merges the files), in its order;
its own kubeconfig entry (server, CA, credentials, exec plugin) makes its session. Its values:
`kubeconfig` (the path, or None for $KUBECONFIG and ~/.kube/config). See `sources`.
"""
from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aicr_core.fleet.sources import Flag
    from aicr_core.session.connection_flags import Overrides
    from aicr_core.session.deadline import Deadline
    from aicr_core.session.kube import KubeSession

FLAGS: tuple[Flag, ...] = ()  # --contexts and --all-contexts are the fleet's own (aicr_core.fleet.flags)
GROUP = ""
KIND = "context"
LABELLED = False
HUB_CONTEXT = False  # --context chooses one cluster: refused across clusters
DECIDES = "each cluster's own kubeconfig entry decides"


def given(values: Mapping[str, Any]) -> bool:
    return True  # the default


def flag(values: Mapping[str, Any]) -> str:
    if values.get("waves") is not None:
        return "--waves"
    return "--all-contexts" if values.get("all_contexts") else "--contexts"


def single_cluster_flags(member: str) -> str:
    """`--context NAME`, quoted for a shell: how `describe` or `whoami` reach this member alone (a name
    that starts with `-` as `--context=-n`, which no parser takes for a flag)."""
    return f"--context{'=' if member.startswith('-') else ' '}{shlex.quote(member)}"


def check_flags(values: Mapping[str, Any]) -> None:
    """--contexts and --all-contexts are the fleet's own flags (aicr_core.fleet.flags checks them)."""


class Contexts:
    """The contexts of the merged kubeconfig, read once."""

    among = "of the kubeconfig"

    def __init__(self, kubeconfig: str | None) -> None:
        self.kubeconfig = kubeconfig
        self._names: list[str] | None = None

    @property
    def names(self) -> list[str]:
        if self._names is None:
            from aicr_core.session.kubeconfig import merged_context_names

            self._names = merged_context_names(self.kubeconfig)
        return self._names

    def labels(self, member: str) -> Mapping[str, str]:
        return {}  # a context has no labels (LABELLED is False: a waves selector is refused before)

    def server(self, member: str) -> str | None:
        """None: a kubeconfig the user wrote may name one cluster many times (contexts are not flagged)."""
        return None

    def connect(self, member: str, overrides: Overrides, deadline: Deadline) -> KubeSession:
        from aicr_core.session import kube

        return kube.connect(self.kubeconfig, member, deadline, overrides=overrides._replace(context=member))

    def single_cluster_flags(self, member: str) -> str:
        return single_cluster_flags(member)


def members(values: Mapping[str, Any]) -> Contexts:
    return Contexts(values.get("kubeconfig"))


def complete(values: Mapping[str, Any], seconds: float) -> list[str]:
    """The context names, read and merged as a command reads them; nothing when they cannot be read."""
    from aicr_core.errors import AicrError
    from aicr_core.session import kubeconfig_files

    try:
        return list(kubeconfig_files.names(values.get("kubeconfig"), "contexts"))
    except AicrError:  # no such --kubeconfig, or a file that is no kubeconfig: no candidates
        return []
