"""The provider file of `--cluster-profile-providers FILE`, and the provider each ClusterProfile gets from it.

The file is KEP-5339's, as its reference library (`pkg/access` of
kubernetes-sigs/cluster-inventory-api) reads it:

```json
{"providers": [{"name": "token-broker",
                "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "broker",
                               "args": ["token"], "provideClusterInfo": true},
                "profileSourcedCLIArgsPolicy": "Append",
                "profileSourcedEnvVarsPolicy": "AppendIfNotExists"}]}
```

For a profile, the provider is the first of the file, in the file's order, whose name the
profile offers (`status.accessProviders[].name`, and the deprecated `credentialProviders`;
`accessProviders` wins on a name in both). Its exec config becomes the member's kubeconfig
user (never interactive); the offered `cluster` its kubeconfig cluster. The profile's reserved
cluster extensions `.../exec/additional-args` and `.../exec/additional-envs` reach the plugin
only as the provider's two policies allow, as the reference applies them.

Everything wrong with the file is [USAGE] naming the key or the provider, before any call (its
schema, a pydantic model, and the words of each problem: `provider_schema`); what is wrong with
one profile fails that member alone ([KUBECONFIG]). Pure: no I/O but the file's one read and the
look-up of a bare command in the approver's PATH.

KEP-5339 trusts the hub for addresses, never for which program runs or whether TLS is used
(docs/fleet.md, "What a hub writer may not decide"): the plugin is the file's command, resolved
here to an absolute path (a bare name through the approver's own PATH, never a relative PATH
entry; a relative path against the file's folder), so the child's PATH never chooses it; a
profile may not set a variable that chooses or loads programs; and a member's server is
`https://HOST[:PORT][/PATH]`, parsed strictly before anything runs (aicr_core.fleet.hub_limits).
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aicr_core.errors import AicrError, Code, UsageError, shown, shown_argument
from aicr_core.fleet import hub_limits

MAX_BYTES = 1 << 20  # a provider file names a few plugins; a larger one is a wrong file
APPEND, APPEND_IF_NOT_EXISTS, REPLACE = "Append", "AppendIfNotExists", "Replace"  # a provider's policies
# The cluster extension a plugin gets as ExecCredential spec.cluster.config (client authentication's, SIG Auth).
EXEC_EXTENSION = "client.authentication.k8s.io/exec"
# KEP-5339's reserved extensions: more arguments and environment for the plugin, from the profile.
ARGS_EXTENSION = "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"
ENVS_EXTENSION = "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs"
# The fields of an offered cluster a member is reached with; any other (a file path of the hub
# owner's machine, insecure-skip-tls-verify) is not taken from an inventory.
CLUSTER_KEYS = ("server", "certificate-authority-data", "tls-server-name", "proxy-url", "extensions")


@dataclass(frozen=True)
class Provider:
    """One provider of the file: its name, its exec config (checked), and its two policies ("" is Ignore)."""

    name: str
    exec_config: Mapping[str, Any]
    args_policy: str = ""
    env_policy: str = ""


@dataclass(frozen=True)
class Offered:
    """A provider a profile offers: its name and the `cluster` entry it gives (a kubeconfig cluster)."""

    name: str
    cluster: Mapping[str, Any]


@dataclass(frozen=True)
class ProviderFile:
    source: str
    providers: tuple[Provider, ...]

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.providers]

    def choose(self, access: Sequence[Offered], credential: Sequence[Offered] = ()) -> tuple[Provider, Offered] | None:
        """The first provider of the file that the profile offers, with what the profile offers under its name.

        `credential` (the deprecated `status.credentialProviders`) is read too; `access`
        (`status.accessProviders`) wins on a name in both. None: the profile offers none of the file's.
        """
        offered = {o.name: o for o in credential}
        offered.update({o.name: o for o in access})
        for provider in self.providers:
            if provider.name in offered:
                return provider, offered[provider.name]
        return None


# -- the file --------------------------------------------------------------------------------------

def load(path: str) -> ProviderFile:
    """The file at `path`, parsed and checked; at most MAX_BYTES of a regular file are read (a FIFO is refused
    at once)."""
    from aicr_core.domain import local_files

    flag = f"--cluster-profile-providers {shown_argument(path)}"
    try:
        text = local_files.read_text(path, MAX_BYTES)
    except local_files.Refused as refused:
        raise UsageError(f"{flag}: {refused}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{flag}: not UTF-8 text") from None
    except OSError as err:
        raise UsageError(f"{flag}: cannot read it: {err.strerror or err}") from None
    return parse(text, path, folder=os.path.dirname(os.path.abspath(path)))


def parse(text: str, source: str = "the provider file", folder: str | None = None) -> ProviderFile:
    """The provider file's text, validated by its schema (`provider_schema`); a relative command path is taken
    from `folder` (the file's own, as kubectl takes a kubeconfig's); without one, a member is refused it
    ([KUBECONFIG]), never run from the current folder."""
    from pydantic import ValidationError

    from aicr_core.fleet.provider_schema import ProviderFileDocument, problem
    from aicr_core.session import bounded_json

    def bad(message: str) -> UsageError:
        return UsageError(f"--cluster-profile-providers {shown_argument(source)}: {message}")

    try:
        doc = bounded_json.loads(text)  # JSON has no aliases: nesting is what needs a bound
    except ValueError as err:  # TooDeep too
        raise bad(f"not JSON: {err}") from None
    if not isinstance(doc, dict):
        raise bad('not a provider file (a JSON object with "providers")')
    try:
        parsed = ProviderFileDocument.model_validate(doc)
    except ValidationError as err:
        raise bad(problem(err, doc)) from None
    providers = []
    for provider in parsed.providers:
        config = provider.exec_config.model_dump(by_alias=True, exclude_none=True)
        command = config["command"]
        if folder is not None and not os.path.isabs(command) and hub_limits.has_separator(command):
            config["command"] = os.path.join(folder, command)  # as kubectl takes a kubeconfig's: not the current folder
        providers.append(Provider(provider.name, config, provider.args_policy or "", provider.env_policy or ""))
    return ProviderFile(source, tuple(providers))


# -- one profile's member ----------------------------------------------------------------------------

def member_user(provider: Provider, offered: Offered, profile: str) -> dict[str, Any]:
    """The kubeconfig user of a member: the provider's exec config, never interactive, with what the
    profile's reserved extensions add as the provider's policies allow. [KUBECONFIG] for a bad extension."""
    config: dict[str, Any] = {key: value for key, value in provider.exec_config.items() if key != "installHint"}
    config["interactiveMode"] = "Never"  # a fleet's plugin runs unattended, as the reference runs it
    config["command"] = _resolved_command(config["command"], profile)
    args = list(config.get("args", []))
    env = [dict(e) for e in config.get("env", [])]
    for name, data in extensions(offered, profile):
        if name == ARGS_EXTENSION and provider.args_policy == APPEND:
            args += _string_list(data, profile, name)
        elif name == ENVS_EXTENSION and provider.env_policy in (APPEND_IF_NOT_EXISTS, REPLACE):
            extra = _string_map(data, profile, name)
            _refuse_program_variables(extra, profile, name)
            if provider.env_policy == REPLACE:  # the profile's value wins over the file's
                env = [{"name": e["name"], "value": extra.pop(e["name"], e["value"])} for e in env]
            else:  # the file's value wins
                for e in env:
                    extra.pop(e["name"], None)
            env += [{"name": key, "value": value} for key, value in extra.items()]
    config["args"], config["env"] = args, env
    return {"exec": config}


def member_cluster(offered: Offered, profile: str) -> dict[str, Any]:
    """The kubeconfig cluster of a member: the offered cluster's server, CA data, TLS server name, proxy and
    extensions (the exec extension reaches a plugin that asks for the cluster). [KUBECONFIG] when malformed."""
    cluster: dict[str, Any] = {}
    for key in CLUSTER_KEYS:
        value = offered.cluster.get(key)
        if value in (None, ""):
            continue
        if key != "extensions" and not isinstance(value, str):
            raise _bad_profile(profile, f"cluster.{key} of provider {shown(offered.name)} is not a string")
        cluster[key] = value
    if not cluster.get("server"):
        raise _bad_profile(profile, f"provider {shown(offered.name)} gives no cluster.server")
    for key, check in (("server", hub_limits.strict_server), ("proxy-url", hub_limits.proxy_problem),
                       ("tls-server-name", hub_limits.tls_name_problem)):
        why = check(cluster[key]) if key in cluster else None
        if why is not None:
            raise _bad_profile(profile, f"cluster.{key} {shown(cluster[key])} of provider {shown(offered.name)}: "
                                        f"{why}")
    extensions(offered, profile)  # checked: a list of {name, extension}
    return cluster


def _resolved_command(command: str, profile: str) -> str:
    try:
        return hub_limits.resolved_command(command)
    except hub_limits.Refused as refused:
        raise _bad_profile(profile, f"the plugin {shown(command)} {refused}") from None


def _refuse_program_variables(extra: Mapping[str, str], profile: str, extension: str) -> None:
    """[KUBECONFIG] for a profile whose environment would choose or load programs: nothing runs."""
    for name, value in extra.items():
        why = hub_limits.variable_problem(name, value)
        if why is not None:
            raise _bad_profile(profile, f"its cluster extension {extension} sets {shown(name)}{why}")


def extensions(offered: Offered, profile: str) -> list[tuple[str, Any]]:
    """The offered cluster's named extensions, (name, extension) in their order."""
    listed = offered.cluster.get("extensions") or []
    if not isinstance(listed, list) or any(not isinstance(e, dict) or not isinstance(e.get("name"), str)
                                           for e in listed):
        raise _bad_profile(profile, f"cluster.extensions of provider {shown(offered.name)} is not a list of "
                                    "{name, extension}")
    return [(e["name"], e.get("extension")) for e in listed]


def _string_list(data: Any, profile: str, name: str) -> list[str]:
    if not isinstance(data, list) or any(not isinstance(item, str) or "\0" in item for item in data):
        raise _bad_profile(profile, f"its cluster extension {name} is not a list of strings")
    return list(data)


def _string_map(data: Any, profile: str, name: str) -> dict[str, str]:
    if not isinstance(data, dict) or any(not isinstance(v, str) or not k for k, v in data.items()):
        raise _bad_profile(profile, f"its cluster extension {name} is not a map of names to strings")
    return dict(data)


def _bad_profile(profile: str, message: str) -> AicrError:
    return AicrError(Code.KUBECONFIG, f"ClusterProfile {profile}: {message}")
