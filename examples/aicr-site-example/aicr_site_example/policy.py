"""Pre-approve policy: the reason must cite a change ticket such as CHG-1234."""
from __future__ import annotations

import re

from aicr_core.operator_api import Approval
from aicr_core.policy import Violation, hookimpl

TICKET = re.compile(r"\bCHG-\d+\b")


@hookimpl
def aicr_pre_approve(approval: Approval) -> Violation | None:
    if TICKET.search(approval.reason):
        return None
    return Violation("change-ticket", f"the reason must cite a change ticket (CHG-1234): {approval.reason!r}")
