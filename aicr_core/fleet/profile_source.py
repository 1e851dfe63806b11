"""The fleet source of a hub's ClusterProfiles (`--cluster-profiles`, the Cluster Inventory API).

Each member is a kept ClusterProfile of the hub (the current context, or --context), named
NAMESPACE/NAME, reached through the provider file's credentials plugin; the reading and the
connecting are `cluster_profiles`' and `access_providers`'. See `sources`.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aicr_core.fleet.sources import Flag

if TYPE_CHECKING:
    from aicr_core.fleet.cluster_profiles import Inventory


def complete_profile_namespaces(prefix: str, values: Mapping[str, Any], seconds: float) -> list[str]:
    """`--profile-namespace <TAB>`: the hub's namespaces that hold ClusterProfiles."""
    from aicr_core.fleet.cluster_profiles import complete_namespaces

    return complete_namespaces(prefix, values, seconds)


GROUP = "fleet: the clusters of a hub's ClusterProfiles (Cluster Inventory API)"
FLAGS = (
    Flag("cluster_profiles", "--cluster-profiles", False,
         "the clusters are the ClusterProfiles the hub (the current context, or --context) lists; each named "
         "NAMESPACE/NAME"),
    Flag("profile_namespace", "--profile-namespace", None,
         "only the ClusterProfiles of this namespace (default: all)", "NS", complete_profile_namespaces),
    Flag("profile_selector", "--profile-selector", None,
         "only the ClusterProfiles whose labels match (the syntax of -l)", "SELECTOR"),
    Flag("cluster_profile_providers", "--cluster-profile-providers", None,
         "the provider file (KEP-5339's JSON): which credentials plugin reaches a member", "FILE"),
)
KIND = "ClusterProfile"
LABELLED = True   # a waves file's selector chooses profiles by their labels
HUB_CONTEXT = True  # --context names the hub
DECIDES = "each member's ClusterProfile and provider decide"


def given(values: Mapping[str, Any]) -> bool:
    return bool(values.get("cluster_profiles"))


def flag(values: Mapping[str, Any]) -> str:
    return "--cluster-profiles"


def single_cluster_flags(member: str) -> None:
    """None, as its members say (`Inventory.single_cluster_flags`): no single-cluster command's flag names a
    ClusterProfile's access provider."""
    return None


def check_flags(values: Mapping[str, Any]) -> None:
    from aicr_core.fleet.cluster_profiles import check_flags

    check_flags(values)


def members(values: Mapping[str, Any]) -> Inventory:
    """The provider file, then the hub's kept profiles (its read is a call)."""
    from aicr_core.fleet import cluster_profiles

    return cluster_profiles.read(values)


def complete(values: Mapping[str, Any], seconds: float) -> list[str]:
    from aicr_core.fleet.cluster_profiles import completion_profiles

    return [profile.member for profile in completion_profiles(values, seconds)]
