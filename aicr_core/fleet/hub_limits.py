"""What a hub writer may not decide for an inventory member (docs/fleet.md): pure checks.

KEP-5339 trusts the hub for addresses, never for which program runs on the approver's machine or
whether TLS is used. aicr_core.fleet.access_providers applies these to each member, [KUBECONFIG]
for that member alone, before anything runs: the plugin's command resolved to an absolute path
through the approver's own PATH, no profile variable that chooses or loads programs, and a server
(with its proxy and TLS name) that every parser reads alike. tests/unit/test_server_url_differential.py
holds the server check against Go's net/url.
"""
from __future__ import annotations

import ipaddress
import os
import re

from aicr_core.errors import shown


class Refused(ValueError):
    """The command is not run: the message says why, in words that follow its name."""


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


def host_port(server: str) -> str:
    """HOST:PORT of a server `strict_server` accepts (443 when it names none): which cluster it is, as the
    list before a fleet's write shows it; a host is compared without case."""
    match = _SERVER.fullmatch("https://" + server[8:])
    assert match is not None, "host_port of a server strict_server refuses"
    return f"{match.group('host').lower()}:{int(match.group('port') or 443)}"


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


def has_separator(command: str) -> bool:
    return os.sep in command or bool(os.altsep and os.altsep in command)


def resolved_command(command: str) -> str:
    """The plugin's program as an absolute path: a bare name looked up in the approver's own PATH, as
    client-go looks it up (never the child's PATH, which a profile's environment might set), and refused
    when it is found through a relative PATH entry (`.`, an empty one), as Go refuses it since 1.19. A name
    found nowhere is left as it is: running it fails with the session's "not found"."""
    if has_separator(command):
        if not os.path.isabs(command):
            raise Refused("is a relative path, and the provider file has no folder to take it from: refused "
                          "(never the current folder)")
        return command
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = os.path.join(entry or ".", command)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            if not os.path.isabs(entry):
                raise Refused(f"is found through the relative PATH entry {shown(entry or '.')}: refused (give the "
                              "command's absolute path)")
            return candidate
    return command


def env_name(name: str) -> bool:
    """A name the environment can hold (Popen refuses one with `=` or a NUL)."""
    return bool(name) and "=" not in name and "\0" not in name


def variable_problem(name: str, value: str) -> str | None:
    """Why a profile may not set `name` (the words after "sets NAME"), else None."""
    if not env_name(name) or "\0" in value:
        return ": not an environment variable (a name without '=' or NUL, a value without NUL)"
    upper = name.upper()
    if upper in REFUSED_ENV or upper.startswith(REFUSED_ENV_PREFIXES):
        return ", a variable that chooses or loads programs: a hub may not set it (nothing was run)"
    return None


def proxy_problem(proxy: str) -> str | None:
    match = _PROXY.fullmatch(proxy)
    if match is None or match.group("scheme").lower() not in PROXY_SCHEMES:
        return (f"is not a proxy URL ({', '.join(PROXY_SCHEMES)}://HOST[:PORT], without whitespace, control "
                "characters or a backslash)")
    return None


def tls_name_problem(name: str) -> str | None:
    return None if _TLS_NAME.fullmatch(name) else "is not a host name"
