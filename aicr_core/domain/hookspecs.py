"""The hooks an approval policy may implement (pluggy project ``aicr``), and the values they use.

A policy is a module or object registered under the ``aicr.policies``
entry-point group that implements one or more of the hooks below with the
``hookimpl`` marker (import it, and everything else a policy needs, from
``aicr_core.plugin``). This module imports pluggy, the standard library and
the session's ``Identity`` (a dataclass, no Kubernetes client) and nothing else,
so a policy stays light wherever it runs: in ``kubectl aicr`` or in an admission
webhook.

How the verdict is reached (``aicr_core.domain.policy_engine`` is the engine):

- Every active policy runs, whatever the others answer; the order in which
  they are called never changes the verdict.
- Any violation of a policy in ``enforce`` mode refuses the action before
  anything is written (``[POLICY_DENIED]``, every violation listed), unless
  the policy is ``overridable`` and the user passed ``--override NAME``. A
  policy in ``warn`` mode only prints its violations.
- A policy that fails to load, misspells a hook name, raises, or returns
  something other than ``Violation``/``Allow`` values refuses the action too
  (``[POLICY_ERROR]``): approvals fail closed.

Which policies are active: every installed policy, unless it declares
``INACTIVE_UNTIL_CONFIGURED = True`` (the built-in pack does): such a policy
runs only when the cluster's policy file lists it. A policy may declare
``SETTINGS_MODEL``, a pydantic model of its entry in the policy file: the
entry is validated against it (a bad entry refuses every write) and the
validated model is its ``context.settings``. Without one, ``context.settings``
is the entry as a plain mapping (without ``mode`` and ``overridable``).
A model may define ``covers(action) -> bool`` (``SettingsModel``'s says yes):
for an action it does not cover, the policy is neither called nor listed.

Arguments are passed by keyword and may grow in later versions; an
implementation declares only the arguments it uses.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Union

import pluggy

from aicr_core.session.identity import Identity  # a policy's value type; the session's answer

if TYPE_CHECKING:
    from aicr_core.domain.operator_api import Acknowledgement, Approval, Assessment, Revocation, Rollout

hookspec = pluggy.HookspecMarker("aicr")
hookimpl = pluggy.HookimplMarker("aicr")


@dataclass(frozen=True, order=True)
class Violation:
    """One reason a policy refuses: which policy, what it says, and the facts it used."""

    policy: str
    message: str
    facts: Mapping[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, order=True)
class Allow:
    """A policy's explicit "yes", with the facts it used (shown by `kubectl aicr policy check`).

    Returning ``None`` allows too; ``Allow`` only explains.
    """

    policy: str
    message: str = ""
    facts: Mapping[str, str] = field(default_factory=dict, compare=False)


Verdict = Union[None, Violation, Allow, Sequence[Union[Violation, Allow]]]


@dataclass(frozen=True)
class PolicyContext:
    """What a policy may want beyond the objects.

    ``command``: ``approve``, ``revoke`` or ``acknowledge`` (also under
    ``policy check``, which runs the policies as that command would), or
    ``admission`` (the webhook; ``flags`` is then empty, so a policy that
    reads a flag must decide what to do without it).
    ``flags``: the command's parsed flags, including those a plugin added.
    ``settings``: this policy's settings from the policy file (see above).
    ``now``: the one instant the whole decision is taken at (UTC).
    """

    command: str
    flags: Mapping[str, Any] = field(default_factory=dict)
    settings: Any = field(default_factory=dict)
    now: datetime | None = None


@hookspec
def aicr_pre_approve(rollout: Rollout, approval: Approval, user: Identity, context: PolicyContext,
                     assessment: Assessment | None) -> Verdict:
    """Decide whether ``approval`` may be written to ``rollout``.

    Called by ``kubectl aicr approve`` after the plugin's own refusals
    (ended, already approved, approval not required, deadline passed) and
    before the single write.

    :param rollout: the rollout as read from the API server
        (``aicr_core.domain.operator_api.Rollout``).
    :param approval: the approval about to be written: ``user``, ``expires``
        (a UTC datetime) and ``reason``.
    :param user: who the API server says is approving (``username``, ``groups``).
    :param context: the command, its flags, this policy's settings and ``now``.
    :param assessment: AICR's report as far as it could be verified
        (``aicr_core.domain.operator_api.Assessment``: ``status`` and, when
        ``verified``, the components' verdicts). It is read from the cluster
        only when some active policy declares this argument; otherwise ``None``.
    :return: ``None`` when the policy has no objection, else one
        ``Violation(policy, message)`` or a list of them; ``Allow`` values
        may explain a "yes".
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
