"""The write input `ticket`: `--ticket ID` on `kubectl aicr approve`, the field `ticket` on the approver's page.

Declared once under `aicr.write_inputs` (setup.cfg); kubectl-aicr offers it as a flag and as a form
field, and applies it where every write passes, so the change-ticket policy (policy.py) reads the same
`context.flags["ticket"]` whether the approval comes from the command line or from the page. The
ticket is also added to the reason (unless the reason cites it already), so that the admission
webhook, where there are no flags, sees the same ticket in the approval it decides on.
"""
from __future__ import annotations

from aicr_core.plugin import WriteInput


class TicketInput(WriteInput):
    def shape_reason(self, reason: str | None, value: str) -> str | None:
        # Recorded with the approval: the webhook, which sees no flags, finds the ticket there too.
        if reason and value not in reason:
            return f"{reason} ({value})"
        return reason


TICKET = TicketInput("ticket", help="the change ticket that authorises this approval (a site policy requires "
                     "one: here or in --reason)", metavar="ID", actions=("approve",), max_length=64)
