"""The fleet source of a hub's ClusterProfiles (`--cluster-profiles`, the Cluster Inventory API).

Each member is a kept ClusterProfile of the hub (the current context, or --context), named
NAMESPACE/NAME, reached through the provider file's credentials plugin; the reading and the
connecting are `cluster_profiles`' and `access_providers`'. See `sources`.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aicr_core.fleet.cluster_profiles import Inventory

KIND = "ClusterProfile"
LABELLED = True   # a waves file's selector chooses profiles by their labels
HUB_CONTEXT = True  # --context names the hub
DECIDES = "each member's ClusterProfile and provider decide"


def given(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "cluster_profiles", False))


def flag(args: argparse.Namespace) -> str:
    return "--cluster-profiles"


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
