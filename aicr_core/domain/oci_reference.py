"""OCI references, by the grammar of github.com/distribution/reference, pinned by digest.

`reproduce` prints a `docker run IMAGE ...` and an `oras pull BUNDLE`; both
come from the cluster. Shell quoting stops shell syntax, but a value such as
`--privileged` or `-v/:/host` would still be read by docker as an option. A
value that matches this grammar starts with a letter or digit (or `[` of an
IPv6 host), holds no space, and names exactly one image by its digest.
"""
from __future__ import annotations

import re

NAME_MAX = 255  # distribution/reference's NameTotalLengthMax

_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN_NAME = rf"{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*"
_IPV6 = r"\[[a-fA-F0-9:]+\]"
_DOMAIN = rf"(?:{_DOMAIN_NAME}|{_IPV6})(?::[0-9]+)?"
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[_.]|__|-+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_NAME = rf"{_DOMAIN}/{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"sha256:[a-f0-9]{64}"

PINNED = re.compile(rf"(?P<name>{_NAME})(?::{_TAG})?@{_DIGEST}", re.ASCII)
GRAMMAR = "registry/repository[:tag]@sha256:<64 hex>"


def is_pinned_reference(text: str) -> bool:
    """`registry/repository[:tag]@sha256:<64 hex>`, exactly (fullmatch: no trailing newline either)."""
    match = PINNED.fullmatch(text)
    return match is not None and len(match.group("name")) <= NAME_MAX
