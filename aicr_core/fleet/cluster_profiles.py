"""The fleet from a cluster inventory: the ClusterProfiles of a hub (`--cluster-profiles`).

A fleet manager (Open Cluster Management, GKE Fleet, KubeFleet) publishes one ClusterProfile
(`multicluster.x-k8s.io/v1alpha1`, SIG-Multicluster's Cluster Inventory API) per member
cluster on a hub. The hub is the current context (`--context` picks another); it is read
first, with the command's own deadline, and if it cannot be listed that is the command's
error and no member is contacted. `--profile-namespace` keeps one namespace,
`--profile-selector` the profiles whose labels match; members are named `NAMESPACE/NAME` and
taken in that order.

A member is reached in its own turn (aicr_core.fleet.fan_out): a profile whose
`ControlPlaneHealthy` condition is False fails with UNAVAILABLE and is never contacted; the
others get the provider the provider file chooses (aicr_core.fleet.access_providers), whose
cluster and exec plugin become a kubeconfig cluster and user loaded as a context's are (the
plugin bounded by the member's deadline, run by the session's exec runner).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aicr_core.errors import AicrError, Code, UsageError, shown
from aicr_core.fleet import access_providers

if TYPE_CHECKING:
    from aicr_core.session.connection_flags import Overrides
    from aicr_core.session.deadline import Deadline
    from aicr_core.session.kube import KubeSession

GROUP, VERSION, PLURAL = "multicluster.x-k8s.io", "v1alpha1", "clusterprofiles"
HEALTHY = "ControlPlaneHealthy"
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
# A ClusterProfile's name: a DNS-1123 subdomain (what the API server accepts for a custom resource's name).
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def profiles_path(namespace: str | None = None) -> str:
    where = f"/namespaces/{namespace}" if namespace else ""
    return f"/apis/{GROUP}/{VERSION}{where}/{PLURAL}"


# -- the flags -----------------------------------------------------------------------------------------

def check_flags(values: Mapping[str, Any]) -> None:
    """The [USAGE] rules of the inventory flags, before any call (the provider file: `read`)."""
    profiles = bool(values.get("cluster_profiles"))
    for dest, flag in (("profile_namespace", "--profile-namespace"), ("profile_selector", "--profile-selector"),
                       ("cluster_profile_providers", "--cluster-profile-providers")):
        if values.get(dest) is not None and not profiles:
            raise UsageError(f"{flag} needs --cluster-profiles")
    if not profiles:
        return
    if values.get("all_contexts"):
        raise UsageError("--all-contexts cannot be used with --cluster-profiles: every kept profile is a member "
                         "unless --contexts chooses among them")
    if values.get("cluster_profile_providers") is None:
        raise UsageError("--cluster-profiles needs --cluster-profile-providers FILE: the provider file that says "
                         "how to reach each member")
    namespace = values.get("profile_namespace")
    if namespace is not None and (len(namespace) > 63 or not _NAMESPACE.fullmatch(namespace)):
        raise UsageError(f"--profile-namespace {shown(namespace)}: a namespace name is at most 63 characters of "
                         "[a-z0-9-], beginning and ending with a letter or digit")
    selector = values.get("profile_selector")
    if selector is not None:
        from aicr_core.session.label_selector import SelectorError, valid_selector

        try:
            valid_selector(selector)
        except SelectorError as err:
            raise UsageError(f"--profile-selector {shown(selector)}: {err}") from None


# -- the profiles --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Profile:
    namespace: str
    name: str
    labels: Mapping[str, str]
    status: Mapping[str, Any]

    @property
    def member(self) -> str:
        return f"{self.namespace}/{self.name}"

    def unhealthy(self) -> str | None:
        """Why the profile says its control plane is not healthy (ControlPlaneHealthy=False), else None."""
        listed = self.status.get("conditions")
        for condition in listed if isinstance(listed, list) else []:
            if isinstance(condition, dict) and condition.get("type") == HEALTHY:
                if condition.get("status") != "False":
                    return None
                words = [hub_text(str(condition[k])) for k in ("reason", "message") if condition.get(k)]
                return ": ".join(words) or "no message"
        return None

    def offered(self, key: str) -> list[access_providers.Offered]:
        """`status.accessProviders` or `status.credentialProviders`, as (name, cluster) pairs."""
        listed = self.status.get(key)
        if listed is None:
            return []
        if not isinstance(listed, list):
            raise AicrError(Code.INVALID_OBJECT, f"ClusterProfile {self.member}: status.{key} is not a list")
        found = []
        for entry in listed:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise AicrError(Code.INVALID_OBJECT, f"ClusterProfile {self.member}: an entry of status.{key} "
                                "has no name")
            cluster = entry.get("cluster") or {}
            if not isinstance(cluster, dict):
                raise AicrError(Code.INVALID_OBJECT, f"ClusterProfile {self.member}: the cluster of provider "
                                f"{shown(entry['name'])} in status.{key} is not an object")
            found.append(access_providers.Offered(entry["name"], cluster))
        return found


def hub_text(text: str) -> str:
    """A word of the hub's for a message, on one line: control characters escaped, TAB as well (a TAB would
    shift a table's columns); the error line escapes the rest."""
    from aicr_core.framework.terminal import safe

    return safe(text, allow_newlines=False).replace("\t", "\\t")


def parse_profile(obj: Mapping[str, Any]) -> Profile:
    """One listed profile; [INVALID_OBJECT] for what no API server would list (a name or namespace that is
    not a DNS-1123 one: a `/` in a namespace would make two members' names alike)."""
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not isinstance(name, str) or not isinstance(namespace, str) or not name or not namespace:
        raise AicrError(Code.INVALID_OBJECT, "the hub listed a ClusterProfile without metadata.name and "
                        "metadata.namespace")
    if len(namespace) > 63 or not _NAMESPACE.fullmatch(namespace):
        raise AicrError(Code.INVALID_OBJECT, f"the hub listed a ClusterProfile in namespace {shown(namespace)}, "
                        "which is not a DNS-1123 label: no API server lists one")
    if len(name) > 253 or not _SUBDOMAIN.fullmatch(name):
        raise AicrError(Code.INVALID_OBJECT, f"the hub listed a ClusterProfile named {shown(name)} in namespace "
                        f"{namespace}, which is not a DNS-1123 subdomain: no API server lists one")
    labels = metadata.get("labels")
    labels = {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)} \
        if isinstance(labels, dict) else {}
    status = obj.get("status")
    return Profile(namespace, name, labels, status if isinstance(status, dict) else {})


@dataclass
class Inventory:
    """The kept profiles of the hub, in order (namespace, then name), and how each member is reached."""

    hub: str                                   # "the hub (context NAME)", for messages
    kept: str                                  # which were kept, for messages: " in namespace gpu-fleet"
    providers: access_providers.ProviderFile
    profiles: dict[str, Profile] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return list(self.profiles)

    @property
    def among(self) -> str:
        """Where the members come from, for messages: "on the hub (context hub) in namespace gpu-fleet"."""
        return f"on {self.hub}{self.kept}"

    def labels(self, member: str) -> Mapping[str, str]:
        return self.profiles[member].labels

    def server(self, member: str) -> str | None:
        """HOST:PORT of the server the member's provider names; None when it has none to name (its turn
        says why: no provider of the file, a server refused)."""
        from aicr_core.fleet.hub_limits import host_port

        try:
            _provider, offer = self._chosen(member)
            return host_port(access_providers.member_cluster(offer, member)["server"])
        except AicrError:
            return None

    def single_cluster_flags(self, member: str) -> None:
        """None: a member is reached through its ClusterProfile's access provider, which no single-cluster
        command's flag names (messages then suggest no command for it alone)."""
        return None

    def connect(self, member: str, overrides: Overrides, deadline: Deadline) -> KubeSession:
        """A session with the member, in its turn; nothing is run or sent for a profile that fails here."""
        from aicr_core.session import kube

        profile = self.profiles[member]
        why = profile.unhealthy()
        if why is not None:
            raise AicrError(Code.UNAVAILABLE, f"ClusterProfile {member} reports {HEALTHY}=False ({why}); "
                            "it was not contacted")
        provider, offer = self._chosen(member)
        cluster = access_providers.member_cluster(offer, member)
        user = access_providers.member_user(provider, offer, member)
        return kube.connect_entries(cluster, user, f"ClusterProfile {member}, provider {provider.name}", deadline,
                                    overrides=overrides._replace(context=None))

    def _chosen(self, member: str) -> tuple[access_providers.Provider, access_providers.Offered]:
        """The provider of the file that reaches the member, and the profile's offer of it; [KUBECONFIG]: none."""
        profile = self.profiles[member]
        access, credential = profile.offered("accessProviders"), profile.offered("credentialProviders")
        chosen = self.providers.choose(access, credential)
        if chosen is None:
            offered = sorted({o.name for o in [*access, *credential]})
            offers = ("offers the providers " + ", ".join(f'"{hub_text(n)}"' for n in offered)) if offered \
                else "offers no provider (status.accessProviders is empty)"
            raise AicrError(Code.KUBECONFIG, f"ClusterProfile {member} {offers}, and the provider file "
                            f"{self.providers.source} has none of them (it has "
                            + ", ".join(f'"{n}"' for n in self.providers.names) + ")")
        return chosen


def hub_name(values: Mapping[str, Any]) -> str:
    context = values.get("context")
    return f"the hub (context {context})" if context else "the hub (the current context)"


def read(values: Mapping[str, Any]) -> Inventory:
    """The provider file (checked before any call), then the hub's profiles, with the command's deadline.

    The hub that cannot be listed is the command's error, its usual CODE; no kept profile is NOT_FOUND.
    `values`: the source's flags, `kubeconfig`, `context` (the hub; None: the current context) and
    `overrides` (the command's connection overrides; aicr_core.fleet.sources).
    """
    providers = access_providers.load(values["cluster_profile_providers"])
    hub = hub_name(values)
    namespace, selector = values.get("profile_namespace"), values.get("profile_selector")
    kept = (f" in namespace {namespace}" if namespace else "") + \
        (f" matching --profile-selector {shown(selector)}" if selector else "")
    objects = list_profiles(values, hub)
    profiles = unique_profiles(objects, hub)
    if not profiles:
        raise AicrError(Code.NOT_FOUND, f"no ClusterProfile on {hub}{kept}")
    return Inventory(hub, kept, providers, {p.member: p for p in profiles})


def unique_profiles(objects: list[dict[str, Any]], hub: str) -> list[Profile]:
    """The listed profiles in order (namespace, then name); [INVALID_OBJECT] for one listed twice, which no
    API server does (a hostile hub's second one would silently win)."""
    profiles = sorted((parse_profile(obj) for obj in objects), key=lambda p: (p.namespace, p.name))
    for before, after in zip(profiles, profiles[1:], strict=False):
        if before.member == after.member:
            raise AicrError(Code.INVALID_OBJECT, f"{hub} listed the ClusterProfile {after.member} twice: no API "
                            "server lists one object twice")
    return profiles


def list_profiles(values: Mapping[str, Any], hub: str, deadline: Deadline | None = None) -> list[dict[str, Any]]:
    from aicr_core.session import kube
    from aicr_core.session.connection_flags import Overrides

    namespace, selector = values.get("profile_namespace"), values.get("profile_selector")
    overrides = (values.get("overrides") or Overrides())._replace(context=values.get("context"))
    try:
        session = kube.connect(values.get("kubeconfig"), overrides.context,
                               deadline or kube.command_deadline(overrides), overrides=overrides)
        objects, _version = session.list(profiles_path(namespace), {"labelSelector": selector} if selector else None)
    except AicrError as err:
        if err.code is Code.USAGE:
            raise
        if err.code is Code.NOT_FOUND:
            raise AicrError(Code.NOT_FOUND, f"{hub} serves no ClusterProfiles ({GROUP}/{VERSION}): "
                            f"{err.message}; is the Cluster Inventory API installed there?") from None
        raise AicrError(err.code, f"{hub}: cannot list its ClusterProfiles: {err.message}", err.details) from None
    return objects


# -- completion ----------------------------------------------------------------------------------------

def completion_profiles(values: Mapping[str, Any], seconds: float) -> list[Profile]:
    """The hub's profiles for TAB (as the typed flags keep them), within `seconds` of API time."""
    from aicr_core.session.deadline import Deadline

    hub = hub_name(values)
    return unique_profiles(list_profiles(values, hub, Deadline(seconds)), hub)


def complete_namespaces(prefix: str, values: Mapping[str, Any], seconds: float) -> list[str]:
    """`--profile-namespace <TAB>`: the namespaces of the hub that hold ClusterProfiles, with their counts."""
    counts: dict[str, int] = {}
    for profile in completion_profiles({**values, "profile_namespace": None}, seconds):
        counts[profile.namespace] = counts.get(profile.namespace, 0) + 1
    return [f"{ns}\t{n} ClusterProfile{'s' * (n != 1)}" for ns, n in counts.items() if ns.startswith(prefix)]
