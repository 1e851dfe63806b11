"""The fleet source of the kubeconfig's contexts (`--contexts`, `--all-contexts`): the default one.

Each member is a context of the merged kubeconfig (as kubectl merges the files), in its order;
its own kubeconfig entry (server, CA, credentials, exec plugin) makes its session. See `sources`.
"""
from __future__ import annotations

import argparse
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aicr_core.session.connection_flags import Overrides
    from aicr_core.session.deadline import Deadline
    from aicr_core.session.kube import KubeSession

FLAGS: tuple[tuple[str, str, Any], ...] = ()  # --contexts and --all-contexts are the fleet's own (selection)
KIND = "context"
LABELLED = False
HUB_CONTEXT = False  # --context chooses one cluster: refused across clusters
DECIDES = "each cluster's own kubeconfig entry decides"


def add_flags(parser: argparse.ArgumentParser) -> None:
    """None of its own: --contexts and --all-contexts choose among any source's members."""


def given(args: argparse.Namespace) -> bool:
    return True  # the default


def flag(args: argparse.Namespace) -> str:
    if getattr(args, "waves", None) is not None:
        return "--waves"
    return "--all-contexts" if getattr(args, "all_contexts", False) else "--contexts"


def single_cluster_flags(member: str) -> str:
    """`--context NAME`, quoted for a shell: how `describe` or `whoami` reach this member alone (a name
    that starts with `-` as `--context=-n`, which no parser takes for a flag)."""
    return f"--context{'=' if member.startswith('-') else ' '}{shlex.quote(member)}"


def check_flags(args: argparse.Namespace) -> None:
    """--contexts and --all-contexts are the fleet's own flags (aicr_core.fleet.selection checks them)."""


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


def members(args: argparse.Namespace) -> Contexts:
    return Contexts(getattr(args, "kubeconfig", None))


def complete(parsed_args: argparse.Namespace) -> list[str]:
    from aicr_core.framework.completion import Candidates, kubeconfig_names

    names = kubeconfig_names("contexts")(parsed_args=parsed_args)
    assert not isinstance(names, Candidates)
    return list(names)
