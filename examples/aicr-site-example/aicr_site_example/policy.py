"""Pre-approve policy: a change ticket such as CHG-1234, in the reason or given with --ticket."""
from __future__ import annotations

import re

from aicr_core.operator_api import Approval
from aicr_core.policy import PolicyContext, Violation, hookimpl

TICKET = re.compile(r"\bCHG-\d+\b")


@hookimpl
def aicr_pre_approve(approval: Approval, context: PolicyContext) -> Violation | None:
    ticket = context.flags.get("ticket") or ""
    if TICKET.search(approval.reason) or TICKET.fullmatch(ticket):
        return None
    return Violation("change-ticket", f"the reason must cite a change ticket (CHG-1234): {approval.reason!r}")
