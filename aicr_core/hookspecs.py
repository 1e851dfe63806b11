"""The hooks an approval policy may implement (pluggy project name ``aicr``).

A policy is a module or object registered under the ``aicr.policies``
entry-point group that implements one or more of the hooks below with the
``aicr_core.policy.hookimpl`` marker. Every installed policy is enabled.

How the verdict is reached:

- Every implementation runs, whatever the others answer; the order in which
  pluggy calls them never changes the verdict.
- Any violation refuses the action before anything is written: the command
  fails with ``[POLICY_DENIED]`` and lists every violation.
- A policy that fails to load, misspells a hook name, raises, or returns
  something other than violations refuses the action too (``[POLICY_ERROR]``):
  approvals fail closed.

Arguments are passed by keyword and may grow in later versions; an
implementation declares only the arguments it uses.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from aicr_core.kube import Identity
    from aicr_core.operator_api import Acknowledgement, Approval, Revocation, Rollout
    from aicr_core.policy import PolicyContext, Verdict

hookspec = pluggy.HookspecMarker("aicr")


@hookspec
def aicr_pre_approve(rollout: Rollout, approval: Approval, user: Identity,
                     context: PolicyContext) -> Verdict:
    """Decide whether ``approval`` may be written to ``rollout``.

    Called by ``kubectl aicr approve`` after the plugin's own refusals
    (ended, already approved, approval not required, deadline passed) and
    before the single write.

    :param rollout: the rollout as read from the API server
        (``aicr_core.operator_api.Rollout``).
    :param approval: the approval about to be written: ``user``, ``expires``
        (a UTC datetime) and ``reason``.
    :param user: who the API server says is approving (``username``, ``groups``).
    :param context: the command name and its parsed flags (``flags``), for
        policies that read a flag a plugin added.
    :return: ``None`` when the policy has no objection, else one
        ``Violation(policy, message)`` or a list of them.
    """


@hookspec
def aicr_pre_revoke(rollout: Rollout, revocation: Revocation, user: Identity,
                    context: PolicyContext) -> Verdict:
    """Decide whether ``revocation`` may be written to ``rollout``.

    Called by ``kubectl aicr revoke`` after its own refusals (not approved,
    already revoked, ended), before the write. Arguments and return value as
    for ``aicr_pre_approve``; ``revocation`` has ``user``, ``time``, ``reason``.
    """


@hookspec
def aicr_pre_acknowledge(rollout: Rollout, acknowledgement: Acknowledgement, user: Identity,
                         context: PolicyContext) -> Verdict:
    """Decide whether ``acknowledgement`` may be appended to ``rollout``.

    Called by ``kubectl aicr acknowledge`` for a rollout in
    ``AwaitingAcknowledgement``, before the write. ``acknowledgement`` has
    ``release`` (the release whose after-apply steps are done), ``user`` and
    ``time``. Return value as for ``aicr_pre_approve``.
    """
