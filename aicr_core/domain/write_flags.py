"""A write's request from the command's flags: `--reason`, `--expires`, `--override`, `--policy-file`, `--dry-run`.

The one mapping of flags onto a `WriteRequest`, shared by the single-cluster commands and the
fleet's per-cluster write; their bounds are checked before any call.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from aicr_core import clock
from aicr_core.domain import rollouts
from aicr_core.domain.rollout_write import WriteRequest
from aicr_core.domain.write_limits import check_expires, check_reason
from aicr_core.errors import UsageError

if TYPE_CHECKING:
    from aicr_core.domain.actions import Action


def dry_run(args: argparse.Namespace) -> str:
    return str(getattr(args, "dry_run", "none") or "none")


def write_request(args: argparse.Namespace, action: Action, rollout: str, *,
                  checking: str | None = None) -> WriteRequest:
    """`action` on `rollout` as the flags ask it: their bounds checked before any call, --policy-file read.

    `checking`: the words of a command that decides without writing (`policy check --action approve`):
    --reason may then be left out (the policies that read it are skipped) and --policy-file is what it is for.
    """
    reason: str | None = getattr(args, "reason", None) if action.takes_reason else None
    if action.takes_reason and (checking is None or reason is not None):
        reason = check_reason(reason, checking or action.name)
    expires = getattr(args, "expires", None) if action.takes_expires else None
    if action.takes_expires:
        check_expires(expires, clock.now())  # a negative or unstorable --expires: before any API call
    policy_file = getattr(args, "policy_file", None)
    if checking is None and policy_file and dry_run(args) == "none":
        # Trying a file is what --policy-file is for: with a real write, a local file would
        # stand in for the cluster's rules. With --dry-run nothing is written, so it may.
        raise UsageError(f"--policy-file only tries a policy file: use it with --dry-run=client|server "
                         f"or policy check; a real {action.name} always follows the cluster's policy file")
    # Read the local file first: a typo in its path fails before any request.
    local = rollouts.read_local_policy_file(policy_file) if policy_file else None
    return WriteRequest(rollout, action, reason=reason, expires=expires.delta if expires is not None else None,
                        overrides=tuple(getattr(args, "override", None) or ()),
                        dry_run="none" if checking else dry_run(args), operator_namespace=args.operator_namespace,
                        local_policy=local, flags=dict(vars(args)))
