"""A write's request from the command's flags: `--reason`, `--expires`, `--override`, `--policy-file`, `--dry-run`,
and a site's declared write inputs (aicr_core.write_inputs: `--ticket`).

The one mapping of flags onto a `WriteRequest`, shared by the single-cluster commands and the
fleet, which builds one request for all its clusters (each replaces only its rollout: aicr_core.
fleet.plan_write.for_cluster), so --policy-file is read once whatever the number of clusters. The
flags are a plain mapping (a command passes `vars(args)`; a program that is no command line its own
values), their bounds checked before any call.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aicr_core import clock
from aicr_core.domain import rollouts
from aicr_core.domain.rollout_write import WriteRequest
from aicr_core.domain.write_limits import check_expires, check_reason
from aicr_core.errors import UsageError

if TYPE_CHECKING:
    from aicr_core.domain.actions import Action
    from aicr_core.go_duration import ParsedDuration


def dry_run(flags: Mapping[str, Any]) -> str:
    return str(flags.get("dry_run") or "none")


def expires_of(flags: Mapping[str, Any]) -> ParsedDuration | None:
    """--expires as parsed (a command's flag), or a Go duration's text (a program's value): [USAGE] when it
    does not parse."""
    from aicr_core.go_duration import ParsedDuration, parse

    value = flags.get("expires")
    if value is None or isinstance(value, ParsedDuration):
        return value
    try:
        return ParsedDuration(str(value), parse(str(value)))
    except ValueError as err:
        raise UsageError(f"--expires: {err}") from None


def write_request(flags: Mapping[str, Any], action: Action, rollout: str = "", *,
                  checking: str | None = None) -> WriteRequest:
    """`action` on `rollout` as the flags ask it: their bounds checked before any call, --policy-file read.

    `flags` holds the parsed flags by their argparse names (`reason`, `expires`, `override`,
    `policy_file`, `dry_run`, `operator_namespace`; any other is passed on for the policies to see). A
    site's declared inputs of the action (aicr_core.write_inputs) are checked, their keys set (None when
    not given), and the reason recorded is the one they shape.
    `checking`: the words of a command that decides without writing (`policy check --action approve`):
    --reason may then be left out (the policies that read it are skipped) and --policy-file is what it is for.
    """
    from aicr_core.domain import operator_api as api
    from aicr_core.write_inputs import apply_inputs

    reason: str | None = flags.get("reason") if action.takes_reason else None
    if action.takes_reason and (checking is None or reason is not None):
        reason = check_reason(reason, checking or action.name)
    # A site's declared inputs (--ticket): checked and the reason shaped here, where every write passes, so
    # that the CLI, the fleet and a page give the policies the same flags and record the same reason.
    flags, shaped = apply_inputs(action.name, flags, reason, checking=checking is not None)
    if action.takes_reason and shaped != reason:
        reason = check_reason(shaped, checking or action.name)  # the shaped reason within --reason's bounds too
    expires = expires_of(flags) if action.takes_expires else None
    if action.takes_expires:
        check_expires(expires, clock.now())  # a negative or unstorable --expires: before any API call
    policy_file = flags.get("policy_file")
    if checking is None and policy_file and dry_run(flags) == "none":
        # Trying a file is what --policy-file is for: with a real write, a local file would
        # stand in for the cluster's rules. With --dry-run nothing is written, so it may.
        raise UsageError(f"--policy-file only tries a policy file: use it with --dry-run=client|server "
                         f"or policy check; a real {action.name} always follows the cluster's policy file")
    # Read the local file first: a typo in its path fails before any request.
    local = rollouts.read_local_policy_file(policy_file) if policy_file else None
    return WriteRequest(rollout, action, reason=reason, expires=expires.delta if expires is not None else None,
                        overrides=tuple(flags.get("override") or ()),
                        dry_run="none" if checking else dry_run(flags),
                        operator_namespace=flags.get("operator_namespace") or api.DEFAULT_OPERATOR_NAMESPACE,
                        local_policy=local, flags=dict(flags))
