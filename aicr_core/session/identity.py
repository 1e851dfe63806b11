"""Who the API server says the user is: the identity a write records and the policies judge."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Identity:
    """Who the API server says the user is: the SelfSubjectReview, or an admission request's userInfo."""

    username: str
    groups: tuple[str, ...] = ()
