"""The one table of the writes a person makes on a rollout: approve, revoke, acknowledge.

An `Action` is everything an action is: its name (the command, `policy check
--action`, the override and decision records), its words (the fleet's question
and result word), which flags it takes, the policy hook that decides it, the
kind of its result and the line the fleet prints of it. Its behaviour (the
command's own refusals, the value it proposes, the patch, what a lost race
means, what an update adds) is in `aicr_core.domain.action_rules`, loaded on
first use: `help` imports this table, and it must stay as light as a list of
names (no pluggy, no Kubernetes client, no operator API).

Nothing else spells an action. Adding one is a row here, its rules, its hook
(a hookspec) and its command's entry point.
"""
# Annotations evaluated (no `from __future__ import annotations`): a NamedTuple's string annotations are
# each compiled when it is defined (typing.ForwardRef), which every start of `kubectl aicr` would pay.

from datetime import datetime, timedelta
from importlib import import_module
from typing import TYPE_CHECKING, Any, NamedTuple, Union

if TYPE_CHECKING:
    from aicr_core.domain.action_rules import ActionRules
    from aicr_core.domain.operator_api import Added, Rollout
    from aicr_core.errors import AicrError


class Action(NamedTuple):
    """One action: its names and words, its flags, its hook, and where its behaviour lives.

    A NamedTuple (immutable, compared by value), not a frozen dataclass: `help` imports this
    table, and a dataclass of twelve fields costs every start (its methods are generated and
    compiled at import; docs/performance.md, "What the code's shape saves").
    """

    name: str          # approve: the command, `--action`, the override and policy-decision records
    title: str         # Approve: the fleet's question ("Approve 3 rollouts in 3 clusters?")
    past: str          # approved: the fleet's result word
    hook: str          # aicr_pre_approve: the policy hook that decides it
    argument: str      # approval: the keyword argument its hook gets, the value about to be written
    result_kind: str   # Approval: the kind of the command's Result
    message: str       # the fleet's line of a write, formatted with the Result's data
    # Its behaviour: "module:attribute" of an ActionRules, imported on first use (or the rules themselves).
    rules_at: Union[str, "ActionRules"]
    takes_reason: bool = False   # --reason TEXT is required (and recorded)
    takes_expires: bool = False  # --expires DURATION
    waiting_first: bool = False  # ROLLOUT completes rollouts waiting for a person first
    in_waves: bool = False       # --plan DIGEST --waves FILE: wave by wave

    @property
    def rules(self) -> "ActionRules":
        if not isinstance(self.rules_at, str):
            return self.rules_at
        module, _, attribute = self.rules_at.partition(":")
        rules: ActionRules = getattr(import_module(module), attribute)
        return rules

    # -- its behaviour, as methods (each loads the rules) -------------------------------------------
    def propose(self, rollout: "Rollout", user: str, now: datetime, reason: str, expires: timedelta | None) -> Any:
        """The command's own refusals (raised: ENDED, ALREADY_APPROVED, ...), then the value it would write."""
        return self.rules.propose(rollout, user, now, reason, expires)

    def patch(self, rollout: "Rollout", value: Any) -> dict[str, Any]:
        """The conditional write of `value`."""
        return self.rules.patch(rollout, value)

    def lost_race(self, current: "Rollout") -> "AicrError":
        """The PATCH lost a race: what the re-read rollout says."""
        return self.rules.lost_race(current)

    def added(self, adds: "Added") -> tuple[Any, ...]:
        """The values of this action an update adds (what the webhook decides)."""
        return tuple(self.rules.added(adds))

    def document(self, value: Any) -> dict[str, Any]:
        """The written `value` as the Result's data (after `rollout`): user, expires or time, reason, release."""
        return self.rules.document(value)

    def said(self, data: dict[str, Any]) -> str:
        """The fleet's line of a write, from its Result's data."""
        return self.message.format_map(data)


_RULES = "aicr_core.domain.action_rules"

APPROVE = Action("approve", "Approve", "approved", "aicr_pre_approve", "approval", "Approval",
                 "approved by {user} until {expires}", f"{_RULES}:APPROVAL",
                 takes_reason=True, takes_expires=True, waiting_first=True, in_waves=True)
REVOKE = Action("revoke", "Revoke", "revoked", "aicr_pre_revoke", "revocation", "Revocation",
                "revoked by {user}", f"{_RULES}:REVOCATION", takes_reason=True)
ACKNOWLEDGE = Action("acknowledge", "Acknowledge", "acknowledged", "aicr_pre_acknowledge", "acknowledgement",
                     "Acknowledgement", "{release} acknowledged by {user}", f"{_RULES}:ACKNOWLEDGEMENT",
                     waiting_first=True)

# By name, in this order (the order `policy check --action` lists them and the webhook decides them).
ACTIONS: dict[str, Action] = {a.name: a for a in (APPROVE, REVOKE, ACKNOWLEDGE)}
