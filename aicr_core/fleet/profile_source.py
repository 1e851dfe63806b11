"""The fleet source of a hub's ClusterProfiles (`--cluster-profiles`, the Cluster Inventory API).

Each member is a kept ClusterProfile of the hub (the current context, or --context), named
NAMESPACE/NAME, reached through the provider file's credentials plugin; the reading and the
connecting are `cluster_profiles`' and `access_providers`'. See `sources`.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aicr_core.fleet.cluster_profiles import Inventory

# Its flags (argparse dest, flag name, its value when not given).
FLAGS = (("cluster_profiles", "--cluster-profiles", False), ("profile_namespace", "--profile-namespace", None),
         ("profile_selector", "--profile-selector", None),
         ("cluster_profile_providers", "--cluster-profile-providers", None))
KIND = "ClusterProfile"
LABELLED = True   # a waves file's selector chooses profiles by their labels
HUB_CONTEXT = True  # --context names the hub
DECIDES = "each member's ClusterProfile and provider decide"


def add_flags(parser: argparse.ArgumentParser) -> None:
    inventory = parser.add_argument_group("fleet: the clusters of a hub's ClusterProfiles (Cluster Inventory API)")
    inventory.add_argument("--cluster-profiles", action="store_true",
                           help="the clusters are the ClusterProfiles the hub (the current context, or --context) "
                                "lists; each named NAMESPACE/NAME")
    action = inventory.add_argument("--profile-namespace", metavar="NS",
                                    help="only the ClusterProfiles of this namespace (default: all)")
    action.completer = complete_profile_namespaces  # type: ignore[attr-defined]
    inventory.add_argument("--profile-selector", metavar="SELECTOR",
                           help="only the ClusterProfiles whose labels match (the syntax of -l)")
    inventory.add_argument("--cluster-profile-providers", metavar="FILE",
                           help="the provider file (KEP-5339's JSON): which credentials plugin reaches a member")


def complete_profile_namespaces(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> Any:
    """`--profile-namespace <TAB>`: the hub's namespaces that hold ClusterProfiles."""
    from aicr_core.fleet.cluster_profiles import complete_namespaces

    return complete_namespaces(prefix, parsed_args)


def given(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "cluster_profiles", False))


def flag(args: argparse.Namespace) -> str:
    return "--cluster-profiles"


def single_cluster_flags(member: str) -> None:
    """None: a member is reached through its ClusterProfile's access provider, which no single-cluster
    command's flag names (messages then suggest no command for it alone)."""
    return None


def check_flags(args: argparse.Namespace) -> None:
    from aicr_core.fleet.cluster_profiles import check_flags

    check_flags(args)


def members(args: argparse.Namespace) -> Inventory:
    """The provider file, then the hub's kept profiles (its read is a call)."""
    from aicr_core.fleet import cluster_profiles

    return cluster_profiles.read(args)


def complete(parsed_args: argparse.Namespace) -> list[str]:
    from aicr_core.fleet.cluster_profiles import completion_profiles

    return [profile.member for profile in completion_profiles(parsed_args)]
