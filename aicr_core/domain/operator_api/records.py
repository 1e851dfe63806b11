"""This plugin's records on a rollout: the overrides and policy-decisions annotations, entry by entry."""


from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any, NamedTuple

from aicr_core.domain.operator_api.object_reader import ObjectReader, required_time
from aicr_core.domain.operator_api.paths import is_digest
from aicr_core.errors import AicrError, Code, shown
from aicr_core.session import bounded_json

# This plugin's records on a rollout. The operator's API has no field for them, and a tool must
# not extend an API it does not own: they are annotations, each one JSON list that only grows
# (the admission webhook enforces that; without it they are best effort, see docs/policies.md).
ANNOTATION_OVERRIDES = "aicr.run/overrides"
ANNOTATION_DECISIONS = "aicr.run/policy-decisions"  # which policy file decided each approval, revocation, ack
RECORD_ANNOTATIONS = (ANNOTATION_OVERRIDES, ANNOTATION_DECISIONS)
MAX_RECORD_ENTRIES = 200  # far above what a rollout sees (one approval, one revocation, 64 acknowledgements)


class Override(NamedTuple):
    """Policies a user overrode (`--override`), recorded in the write of the action they overrode."""

    user: str
    action: str  # approve | revoke | acknowledge
    policies: tuple[str, ...]
    time: datetime


class PolicyDecision(NamedTuple):
    """Which policy file decided a write: recorded by kubectl aicr in the write itself."""

    user: str
    action: str  # approve | revoke | acknowledge
    time: datetime
    location: str  # the policy file, in words: ConfigMap <namespace>/aicr-approval-policy (key policy.yaml)
    digest: str | None  # sha256 of its text; None when there was no file there


def record_entries(text: str | None, key: str) -> tuple[Mapping[str, Any], ...]:
    """The entries of record annotation `key` (absent: none); INVALID_OBJECT unless a JSON list of objects."""
    if text is None:
        return ()
    try:
        value = bounded_json.loads(text)
    except ValueError:  # TooDeep too
        raise AicrError(Code.INVALID_OBJECT, f"annotation {key} is not JSON") from None
    if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
        raise AicrError(Code.INVALID_OBJECT, f"annotation {key} is not a JSON list of objects")
    if len(value) > MAX_RECORD_ENTRIES:
        raise AicrError(Code.INVALID_OBJECT, f"annotation {key} holds more than {MAX_RECORD_ENTRIES} entries")
    return tuple(value)


def _known(action: str, actions: Collection[str] | None) -> bool:
    """A record's `action`: a name, one of `actions` when they are given (this module knows no action's name:
    the Action table, aicr_core.domain.actions, is the domain's, which imports this module)."""
    return bool(action) and (actions is None or action in actions)


def parse_override(entry: Mapping[str, Any], actions: Collection[str] | None = None) -> Override:
    """One entry of the overrides annotation; INVALID_OBJECT unless it has exactly the documented shape and,
    when the known `actions` are given (the Action table's names), its `action` is one of them."""
    o = ObjectReader(entry, f"annotation {ANNOTATION_OVERRIDES}: an entry")
    policies = o.items("policies")
    if set(entry) != {"user", "action", "policies", "time"} or not o.text("user") \
            or not _known(o.text("action"), actions) or not policies \
            or not all(isinstance(n, str) and n for n in policies):
        raise AicrError(Code.INVALID_OBJECT, f"{o.what} is not {{user, action, policies[], time}}: {shown(entry, 200)}")
    return Override(o.text("user"), o.text("action"), tuple(policies), required_time(o, "time"))


def parse_policy_decision(entry: Mapping[str, Any], actions: Collection[str] | None = None) -> PolicyDecision:
    """One entry of the policy-decisions annotation; INVALID_OBJECT unless it has exactly the documented shape
    and, when the known `actions` are given, its `action` is one of them."""
    d = ObjectReader(entry, f"annotation {ANNOTATION_DECISIONS}: an entry")
    digest = entry.get("digest")
    if set(entry) != {"user", "action", "time", "location", "digest"} or not d.text("user") \
            or not _known(d.text("action"), actions) or not d.text("location") \
            or not (digest is None or (isinstance(digest, str) and is_digest(digest))):
        raise AicrError(Code.INVALID_OBJECT, f"{d.what} is not {{user, action, time, location, digest}}: "
                        f"{shown(entry, 200)}")
    return PolicyDecision(d.text("user"), d.text("action"), required_time(d, "time"), d.text("location"), digest)
