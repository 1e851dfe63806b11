"""A cliff CommandHook that adds `--ticket ID` to `kubectl aicr approve`.

Registered under `aicr.commands.approve`; like every flag it is accepted
before or after the command name. The change-ticket policy reads it from the
policy context; the ticket is also added to the reason (unless the reason
cites it already), so that the admission webhook, where there are no flags,
sees the same ticket in the approval it decides on.
"""
from __future__ import annotations

import argparse

from aicr_core.plugin import CommandHook


class TicketFlag(CommandHook):
    def get_parser(self, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        parser.add_argument("--ticket", metavar="ID", help="the change ticket that authorises this approval")
        return parser

    def get_epilog(self) -> str:
        return "A site policy requires a change ticket: in --reason or with --ticket."

    def before(self, parsed_args: argparse.Namespace) -> argparse.Namespace:
        # The ticket goes into the reason, so that it is recorded with the approval
        # and the admission webhook, which sees no flags, finds it there too.
        ticket, reason = getattr(parsed_args, "ticket", None), getattr(parsed_args, "reason", None)
        if ticket and reason and ticket not in reason:
            parsed_args.reason = f"{reason} ({ticket})"
        return parsed_args

    def after(self, parsed_args: argparse.Namespace, return_code: int) -> int:
        return return_code
