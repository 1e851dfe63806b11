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

Everything wrong with the file is [USAGE] naming the key or the provider, before any call;
what is wrong with one profile fails that member alone ([KUBECONFIG]). Pure: no I/O but the
file's one read and the look-up of a bare command in the approver's PATH.

KEP-5339 trusts the hub for addresses, never for which program runs or whether TLS is used
(docs/fleet.md, "What a hub writer may not decide"): the plugin is the file's command, resolved
here to an absolute path (a bare name through the approver's own PATH, never a relative PATH
entry; a relative path against the file's folder), so the child's PATH never chooses it; a
profile may not set a variable that chooses or loads programs (REFUSED_ENV); and a member's
server is `https://HOST[:PORT][/PATH]`, parsed strictly before anything runs (`strict_server`).
"""
from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aicr_core.errors import AicrError, Code, UsageError, shown, shown_argument

MAX_BYTES = 1 << 20  # a provider file names a few plugins; a larger one is a wrong file
TOP_KEYS = ("providers",)
PROVIDER_KEYS = ("name", "execConfig", "profileSourcedCLIArgsPolicy", "profileSourcedEnvVarsPolicy")
# Every field of a kubeconfig exec config (client-go's ExecConfig as JSON names it).
EXEC_KEYS = ("apiVersion", "command", "args", "env", "provideClusterInfo", "interactiveMode", "installHint")
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
APPEND, IGNORE = "Append", "Ignore"
APPEND_IF_NOT_EXISTS, REPLACE = "AppendIfNotExists", "Replace"
ARGS_POLICIES = (APPEND, IGNORE)                       # "" (absent) is Ignore
ENV_POLICIES = (APPEND_IF_NOT_EXISTS, REPLACE, IGNORE)  # "" (absent) is Ignore
# The cluster extension a plugin gets as ExecCredential spec.cluster.config (client authentication's, SIG Auth).
EXEC_EXTENSION = "client.authentication.k8s.io/exec"
# KEP-5339's reserved extensions: more arguments and environment for the plugin, from the profile.
ARGS_EXTENSION = "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"
ENVS_EXTENSION = "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs"
# The fields of an offered cluster a member is reached with; any other (a file path of the hub
# owner's machine, insecure-skip-tls-verify) is not taken from an inventory.
CLUSTER_KEYS = ("server", "certificate-authority-data", "tls-server-name", "proxy-url", "extensions")
# What a profile's additional-envs may not set: the variables that choose which program runs or what
# it loads (the loader's, the shells', the interpreters'). A name is compared in capitals, so that
# `Path` is refused too (Windows reads names without case).
REFUSED_ENV = frozenset({
    "PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "CDPATH", "GLOBIGNORE", "PROMPT_COMMAND",
    "ZDOTDIR", "NODE_OPTIONS", "NODE_PATH", "RUBYOPT", "RUBYLIB", "PERLLIB", "PERLIO", "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES",
    "RES_OPTIONS", "LOCALDOMAIN", "OPENSSL_CONF", "OPENSSL_ENGINES", "OPENSSL_MODULES", "SSL_CERT_FILE",
    "SSL_CERT_DIR", "GODEBUG", "GOTRACEBACK", "TCLLIBPATH", "LUA_PATH", "LUA_CPATH", "LUA_INIT", "PHPRC",
    "COMSPEC", "PATHEXT",
})
REFUSED_ENV_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_", "PYTHON", "PERL5", "MALLOC_", "GLIBC_", "GCONV_")
# A member's server: https, a host (a DNS name, an IPv4 address or a bracketed IPv6 one), a port, a path.
_SERVER = re.compile(r"https://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(?P<port>[0-9]{1,5}))?"
                     r"(?P<path>/(?:[!$&'()*+,\-./0-9:;=@A-Z_a-z~]|%[0-9A-Fa-f]{2})*)?", re.ASCII)
PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")
_PROXY = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?:[A-Za-z0-9._~%!$&'()*+,;=:-]*@)?"
                    r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::[0-9]{1,5})?/?", re.ASCII)
_TLS_NAME = re.compile(r"[A-Za-z0-9._-]{1,253}", re.ASCII)


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
    from aicr_core.framework import local_files

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
    """The provider file's text, checked; a relative command path is taken from `folder` (the file's own,
    as kubectl takes a kubeconfig's); without one, a member is refused it ([KUBECONFIG]), never run from
    the current folder."""
    def bad(message: str) -> UsageError:
        return UsageError(f"--cluster-profile-providers {shown_argument(source)}: {message}")

    from aicr_core.session import bounded_json

    try:
        doc = bounded_json.loads(text)  # JSON has no aliases: nesting is what needs a bound
    except ValueError as err:  # TooDeep too
        raise bad(f"not JSON: {err}") from None
    if not isinstance(doc, dict):
        raise bad('not a provider file (a JSON object with "providers")')
    _known_keys(doc, TOP_KEYS, "", bad)
    listed = doc.get("providers")
    if not isinstance(listed, list) or not listed:
        raise bad("providers: at least one provider is needed (a list of {name, execConfig})")
    providers: list[Provider] = []
    for i, entry in enumerate(listed):
        where = f"providers[{i}]"
        if not isinstance(entry, dict):
            raise bad(f"{where}: a provider is an object with name and execConfig")
        _known_keys(entry, PROVIDER_KEYS, f"{where}.", bad)
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise bad(f"{where}.name: every provider needs a name")
        if any(p.name == name for p in providers):
            raise bad(f"provider {shown(name)}: two providers have that name")
        args_policy = _policy(entry, "profileSourcedCLIArgsPolicy", ARGS_POLICIES, name, bad)
        env_policy = _policy(entry, "profileSourcedEnvVarsPolicy", ENV_POLICIES, name, bad)
        providers.append(Provider(name, _exec_config(entry.get("execConfig"), name, bad, folder), args_policy,
                                  env_policy))
    return ProviderFile(source, tuple(providers))


def _known_keys(doc: Mapping[str, Any], keys: Sequence[str], where: str, bad: Any) -> None:
    for key in doc:
        if key not in keys:
            raise bad(f"unknown key {where}{shown_argument(key) if isinstance(key, str) else shown(key)} "
                      f"(known: {', '.join(keys)})")


def _policy(entry: Mapping[str, Any], key: str, allowed: Sequence[str], name: str, bad: Any) -> str:
    value = entry.get(key)
    if value in (None, ""):
        return ""
    if value not in allowed:
        raise bad(f"provider {shown(name)}: {key} must be {', '.join(allowed)} or absent (got {shown(value)})")
    return str(value)


def _exec_config(value: Any, name: str, bad: Any, folder: str | None = None) -> dict[str, Any]:
    """A kubeconfig exec config, checked as kubectl checks a kubeconfig user's; nulls dropped."""
    where = f"provider {shown(name)}: execConfig"
    if not isinstance(value, dict):
        raise bad(f"{where}: every provider needs an execConfig with a command")
    _known_keys(value, EXEC_KEYS, "execConfig.", lambda message: bad(f"provider {shown(name)}: {message}"))
    config = {key: item for key, item in value.items() if item is not None}
    command = config.get("command")
    if not isinstance(command, str) or not command.strip():
        raise bad(f"{where}.command: every provider needs the command of its credentials plugin")
    if "\0" in command:
        raise bad(f"{where}.command: a command holds no NUL character")
    if folder is not None and not os.path.isabs(command) and _has_separator(command):
        config["command"] = os.path.join(folder, command)  # as kubectl takes a kubeconfig's: not the current folder
    if config.get("apiVersion") not in EXEC_API_VERSIONS:
        raise bad(f"{where}.apiVersion must be {' or '.join(EXEC_API_VERSIONS)} "
                  f"(got {shown(config.get('apiVersion'))})")
    args = config.get("args", [])
    if not isinstance(args, list) or any(not isinstance(a, str) or "\0" in a for a in args):
        raise bad(f"{where}.args: a list of strings (without NUL characters)")
    env = config.get("env", [])
    if (not isinstance(env, list)
            or any(not isinstance(e, dict) or set(e) != {"name", "value"} or not isinstance(e["name"], str)
                   or not _env_name(e["name"]) or not isinstance(e["value"], str) or "\0" in e["value"]
                   for e in env)):
        raise bad(f"{where}.env: a list of {{name, value}} strings (a name without '=' or NUL, a value "
                  "without NUL)")
    if not isinstance(config.get("provideClusterInfo", False), bool):
        raise bad(f"{where}.provideClusterInfo: true or false")
    if config.get("interactiveMode", "Never") not in INTERACTIVE_MODES:
        raise bad(f"{where}.interactiveMode must be {', '.join(INTERACTIVE_MODES)} "
                  f"(got {shown(config.get('interactiveMode'))})")
    if not isinstance(config.get("installHint", ""), str):
        raise bad(f"{where}.installHint: a string")
    return config


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
    why = strict_server(cluster["server"])
    if why is not None:
        raise _bad_profile(profile, f"cluster.server {shown(cluster['server'])} of provider {shown(offered.name)}: "
                                    f"{why}")
    proxy = cluster.get("proxy-url")
    if proxy is not None:
        match = _PROXY.fullmatch(proxy)
        if match is None or match.group("scheme").lower() not in PROXY_SCHEMES:
            raise _bad_profile(profile, f"cluster.proxy-url {shown(proxy)} of provider {shown(offered.name)} is not "
                                        f"a proxy URL ({', '.join(PROXY_SCHEMES)}://HOST[:PORT], without whitespace, "
                                        "control characters or a backslash)")
    if "tls-server-name" in cluster and not _TLS_NAME.fullmatch(cluster["tls-server-name"]):
        raise _bad_profile(profile, f"cluster.tls-server-name {shown(cluster['tls-server-name'])} of provider "
                                    f"{shown(offered.name)} is not a host name")
    extensions(offered, profile)  # checked: a list of {name, extension}
    return cluster


def strict_server(server: str) -> str | None:
    """Why `server` is not `https://HOST[:PORT][/PATH]` as every parser reads it alike, else None.

    Refused: another scheme (a token would travel in cleartext), userinfo, a backslash, whitespace or
    a control character, a query or a fragment, a port out of 1-65535, a bad IPv6 address: where
    Go's net/url, Python's urllib and an HTTP library could disagree on the host.
    """
    if not server.isascii() or not server.isprintable() or any(c.isspace() for c in server):
        return "holds whitespace, a control or a non-ASCII character"
    if "\\" in server:
        return "holds a backslash"
    if not server[:8].lower() == "https://":
        return "not an https:// server (a profile's server is reached over TLS only)"
    match = _SERVER.fullmatch("https://" + server[8:])
    if match is None:
        if "@" in server.split("/", 3)[2]:
            return "holds userinfo (USER@)"
        if "?" in server or "#" in server:
            return "holds a query or a fragment"
        return "not https://HOST[:PORT][/PATH]"
    host, port = match.group("host"), match.group("port")
    if port is not None and not 0 < int(port) <= 65535:
        return f"port {port} is out of 1-65535"
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return f"{host} is not an IPv6 address"
    return None


def _has_separator(command: str) -> bool:
    return os.sep in command or bool(os.altsep and os.altsep in command)


def _resolved_command(command: str, profile: str) -> str:
    """The plugin's program as an absolute path: a bare name looked up in the approver's own PATH, as
    client-go looks it up (never the child's PATH, which a profile's environment might set), and refused
    when it is found through a relative PATH entry (`.`, an empty one), as Go refuses it since 1.19. A name
    found nowhere is left as it is: running it fails with the session's "not found"."""
    if _has_separator(command):
        if not os.path.isabs(command):
            raise _bad_profile(profile, f"the plugin {shown(command)} is a relative path, and the provider file "
                                        "has no folder to take it from: refused (never the current folder)")
        return command
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(entry or ".", command)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            if not os.path.isabs(entry):
                raise _bad_profile(profile, f"the plugin {shown(command)} is found through the relative PATH entry "
                                            f"{shown(entry or '.')}: refused (give the command's absolute path)")
            return candidate
    return command


def _env_name(name: str) -> bool:
    return bool(name) and "=" not in name and "\0" not in name


def _refuse_program_variables(extra: Mapping[str, str], profile: str, extension: str) -> None:
    """[KUBECONFIG] for a profile whose environment would choose or load programs: nothing runs."""
    for name, value in extra.items():
        if not _env_name(name) or "\0" in value:
            raise _bad_profile(profile, f"its cluster extension {extension} sets {shown(name)}: not an environment "
                                        "variable (a name without '=' or NUL, a value without NUL)")
        upper = name.upper()
        if upper in REFUSED_ENV or upper.startswith(REFUSED_ENV_PREFIXES):
            raise _bad_profile(profile, f"its cluster extension {extension} sets {shown(name)}, a variable that "
                                        "chooses or loads programs: a hub may not set it (nothing was run)")


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
