"""kubectl's connection flags, meaning what they mean to kubectl 1.37.

Every command accepts them (they are global flags in kubectl). They override
the kubeconfig exactly as kubectl's `clientcmd` overrides do; the loading
itself is in `aicr_core.session.kubeconfig`, which is imported only when a command
talks to the API server, so this module stays light for `help`.
"""
# Annotations evaluated (no `from __future__ import annotations`): a NamedTuple's string annotations are
# each compiled when it is defined (typing.ForwardRef), which every start of `kubectl aicr` would pay.

import argparse
import re
from typing import NamedTuple

from aicr_core import go_duration as duration
from aicr_core.errors import shown

_GO_BOOL = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
            "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


class Overrides(NamedTuple):
    """What the connection flags say; None (or empty) means: as the kubeconfig says."""

    context: str | None = None
    cluster: str | None = None
    user: str | None = None
    server: str | None = None
    tls_server_name: str | None = None
    certificate_authority: str | None = None
    insecure_skip_tls_verify: bool = False
    token: str | None = None
    client_certificate: str | None = None
    client_key: str | None = None
    impersonate: str | None = None
    impersonate_groups: tuple[str, ...] = ()
    impersonate_uid: str | None = None
    request_timeout: float | None = None  # seconds; 0: no deadline; None: the default (30 s)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "Overrides":
        def get(name: str) -> str | None:
            value = getattr(args, name, None)
            return value if value else None

        return cls(
            context=get("context"), cluster=get("cluster"), user=get("user"), server=get("server"),
            tls_server_name=get("tls_server_name"), certificate_authority=get("certificate_authority"),
            insecure_skip_tls_verify=bool(getattr(args, "insecure_skip_tls_verify", False)),
            token=get("token"), client_certificate=get("client_certificate"), client_key=get("client_key"),
            impersonate=get("as_user"), impersonate_groups=tuple(getattr(args, "as_group", None) or ()),
            impersonate_uid=get("as_uid"), request_timeout=getattr(args, "request_timeout", None))


def parse_go_bool(text: str) -> bool:
    """Go's strconv.ParseBool, as pflag reads `--insecure-skip-tls-verify=false`."""
    if text not in _GO_BOOL:
        raise argparse.ArgumentTypeError(f"invalid boolean value {shown(text)}")
    return _GO_BOOL[text]


def parse_request_timeout(text: str) -> float:
    """kubectl's ParseTimeout: whole seconds (`30`), or a Go duration (`2s`, `1m`); 0 means none."""
    if re.fullmatch(r"[0-9]+", text):
        return float(int(text))
    try:
        nanoseconds = duration.parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid request timeout {shown(text)}: use whole seconds or a duration such as 1s, 2m or 3h") from None
    if nanoseconds < 0:
        raise argparse.ArgumentTypeError(f"invalid request timeout {shown(text)}: must not be negative")
    return nanoseconds / 1e9


def add_connection_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """kubectl's global connection flags (names, meanings and defaults as kubectl 1.37 has them)."""
    add = parser.add_argument
    add("--cluster", metavar="NAME", help="the kubeconfig cluster to use")
    add("--user", metavar="NAME", help="the kubeconfig user to use")
    add("-s", "--server", metavar="URL", help="the address and port of the Kubernetes API server")
    add("--tls-server-name", metavar="NAME", help="server name to use for server certificate validation")
    add("--certificate-authority", metavar="PATH", help="a cert file for the certificate authority")
    add("--insecure-skip-tls-verify", nargs="?", const=True, default=False, type=parse_go_bool, metavar="BOOL",
        help="do not check the server's certificate (insecure)")
    add("--token", metavar="TOKEN", help="bearer token for authentication to the API server")
    add("--client-certificate", metavar="PATH", help="a client certificate file for TLS")
    add("--client-key", metavar="PATH", help="a client key file for TLS")
    add("--as", dest="as_user", metavar="USER", help="username to impersonate for the operation")
    add("--as-group", action="append", metavar="GROUP",
        help="group to impersonate for the operation (repeat for more groups)")
    add("--as-uid", metavar="UID", help="UID to impersonate for the operation")
    add("--request-timeout", metavar="DURATION", type=parse_request_timeout,
        help="the deadline shared by the command's API calls, e.g. 10s (default 30s; 0: none)")
