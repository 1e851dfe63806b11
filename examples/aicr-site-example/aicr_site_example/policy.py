"""Pre-approve policy `change-ticket`: the approval must cite a change ticket (CHG-1234).

The ticket is taken from `--ticket` (a write input this package declares: ticket.py) or
from the reason. Under `admission` (the webhook) there are no flags, so only
the reason counts there: a policy that reads a flag decides what it does
without it. The ticket prefix is a setting in the cluster's policy file:

    policies:
      change-ticket:
        prefix: INC        # default CHG
"""
from __future__ import annotations

import re

from aicr_core.plugin import Allow, Approval, PolicyContext, Violation, hookimpl

NAME = "change-ticket"

# Only where the cluster's policy file names it: installed, a policy that lacks this takes part in
# every decision (and every `policy test` suite) on the machine, also those of clusters that never asked for it.
INACTIVE_UNTIL_CONFIGURED = True


@hookimpl
def aicr_pre_approve(approval: Approval, context: PolicyContext) -> Violation | Allow:
    prefix = str(context.settings.get("prefix", "CHG"))
    ticket = re.compile(rf"\b{re.escape(prefix)}-\d+\b")
    flag = "" if context.command == "admission" else str(context.flags.get("ticket") or "")
    facts = {"prefix": prefix, "ticket": flag or "(none)"}
    if ticket.fullmatch(flag):
        return Allow(NAME, f"--ticket {flag}", facts)
    if ticket.search(approval.reason):
        return Allow(NAME, "the reason cites a ticket", facts)
    return Violation(NAME, f"the reason must cite a change ticket ({prefix}-1234): {approval.reason!r}", facts)
