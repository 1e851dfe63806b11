"""kubectl's connection flags over a kubeconfig's cluster and user, and whom to impersonate; no Kubernetes client.

As kubectl: `--certificate-authority` and `--insecure-skip-tls-verify` replace each other, `--server`
drops the file's `tls-server-name`, `--token` stands for the user's other credentials; a server given as
`host:port` is https. Impersonation (`--as`, the kubeconfig's `as`/`as-groups`) is kept for the session
to send, since the official client ignores it.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, NamedTuple

from aicr_core.errors import AicrError, Code, shown
from aicr_core.session.connection_flags import Overrides


class Impersonation(NamedTuple):
    """Who to act as (Impersonate-* headers); empty `user`: nobody."""

    user: str = ""
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (key, values) pairs, sorted by key

    def headers(self) -> list[tuple[str, str]]:
        if not self.user:
            return []
        pairs = [("Impersonate-User", self.user)]
        pairs += [("Impersonate-Group", group) for group in self.groups]
        if self.uid:
            pairs.append(("Impersonate-Uid", self.uid))
        for key, values in self.extra:
            pairs += [(f"Impersonate-Extra-{_header_key_escape(key)}", value) for value in values]
        return pairs


_HEADER_KEY_BYTES = frozenset(b"!#$&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _header_key_escape(key: str) -> str:
    """client-go's headerKeyEscape: a byte that may not stand in a header name (or `%`) becomes %XX,
    so `scopes.example.com/team` is sent as `scopes.example.com%2Fteam`, as kubectl sends it."""
    return "".join(chr(b) if b in _HEADER_KEY_BYTES else f"%{b:02X}" for b in key.encode("utf-8"))


def override_cluster(cluster: dict[str, Any], o: Overrides) -> dict[str, Any]:
    if o.server:
        cluster["server"] = o.server
    server = cluster.get("server")
    if server is not None and not isinstance(server, str):
        raise AicrError(Code.KUBECONFIG, f"kubeconfig: the cluster's server is {type(server).__name__}, not a URL")
    if server:
        cluster["server"] = _server_url(server)
    if o.insecure_skip_tls_verify or o.certificate_authority:
        # As kubectl: either flag replaces the file's CA and its insecure setting.
        for key in ("certificate-authority", "certificate-authority-data", "insecure-skip-tls-verify"):
            cluster.pop(key, None)
        if o.certificate_authority:
            cluster["certificate-authority"] = os.path.abspath(o.certificate_authority)
        cluster["insecure-skip-tls-verify"] = o.insecure_skip_tls_verify
    if o.tls_server_name or o.server:
        cluster.pop("tls-server-name", None)
        if o.tls_server_name:
            cluster["tls-server-name"] = o.tls_server_name
    return cluster


def _server_url(server: str) -> str:
    """As client-go: `host:port` means https; only http and https are spoken."""
    url = server if "://" in server else f"https://{server}"
    scheme, _, rest = url.partition("://")
    if scheme.lower() not in ("http", "https") or not rest.strip("/"):
        raise AicrError(Code.KUBECONFIG, f"server {shown(server, 200)} is not an http(s) URL")
    return url


def override_user(user: dict[str, Any], o: Overrides) -> dict[str, Any]:
    if o.token:
        # An explicit token is the credential: kubectl runs no credentials plugin then.
        for key in ("token", "tokenFile", "exec", "auth-provider", "username", "password"):
            user.pop(key, None)
        user["token"] = o.token
    for flag, key in ((o.client_certificate, "client-certificate"), (o.client_key, "client-key")):
        if flag:
            user.pop(f"{key}-data", None)
            user[key] = os.path.abspath(flag)
    return user


def impersonation(user: Mapping[str, Any], o: Overrides) -> Impersonation:
    """`--as` & co., else the kubeconfig user's `as` & co. (which the official client would ignore)."""
    name = o.impersonate or _text(user.get("as"))
    listed = user.get("as-groups") or []
    if not isinstance(listed, list):  # a string would be sent one character a group
        raise AicrError(Code.KUBECONFIG, "kubeconfig: the user's as-groups is not a list")
    groups = o.impersonate_groups or tuple(_text(g) for g in listed)
    uid = o.impersonate_uid or _text(user.get("as-uid"))
    extra_raw = user.get("as-user-extra") or {}
    extra = tuple(sorted((str(k), tuple(_text(v) for v in (vs if isinstance(vs, list) else [vs])))
                         for k, vs in (extra_raw.items() if isinstance(extra_raw, Mapping) else [])))
    if (groups or uid or extra) and not name:
        raise AicrError(Code.USAGE, "requesting uid, groups or user-extra without impersonating a user: "
                        "pass --as USER too")
    return Impersonation(name, tuple(groups), uid, extra)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))
