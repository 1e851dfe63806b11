"""The addresses the dashboard may listen on (loopback only) and the `Host` values it then answers.

The page acts with the approver's credentials: anything that can reach it can ask it to approve.
So it listens on loopback alone, and answers only requests whose `Host` names it (a page of another
site whose name was made to resolve to 127.0.0.1, DNS rebinding, sends its own name).
"""
from __future__ import annotations

import ipaddress

from aicr_core.errors import UsageError, shown

DEFAULT_ADDRESS = "127.0.0.1"
WHY = ("the dashboard listens on loopback only (127.0.0.1, any of 127.0.0.0/8, ::1, or localhost): "
       "the page acts with your credentials")


def bind_address(text: str) -> str:
    """The literal address to bind for `--address TEXT` (localhost: 127.0.0.1); [USAGE] for any other."""
    if text.lower() == "localhost":
        return DEFAULT_ADDRESS
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise UsageError(f"--address {shown(text)} is no IP address; {WHY}") from None
    if not address.is_loopback:
        raise UsageError(f"--address {shown(text)} is not a loopback address; {WHY}")
    return str(address)


def url_host(address: str) -> str:
    """The address as a URL's host: an IPv6 one in brackets."""
    return f"[{address}]" if ":" in address else address


def allowed_hosts(address: str, port: int) -> frozenset[str]:
    """The `Host` values answered (lowercase): the bound address and `localhost`, with the port."""
    return frozenset({f"{url_host(address)}:{port}".lower(), f"localhost:{port}"})


def origins(address: str, port: int) -> frozenset[str]:
    """The dashboard's own origins, one per allowed host."""
    return frozenset(f"http://{host}" for host in allowed_hosts(address, port))
