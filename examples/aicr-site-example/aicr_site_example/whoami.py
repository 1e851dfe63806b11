"""`kubectl aicr whoami`: who the API server says you are."""
from __future__ import annotations

import argparse

from aicr_core.command import AicrCommand
from aicr_core.result import Result


class WhoAmI(AicrCommand):
    """Show the username and groups the API server reports for your credentials."""

    def take_action(self, args: argparse.Namespace) -> Result:
        from aicr_core import kube  # imported when run, not when `help` lists commands

        me = kube.connect_args(args).whoami()  # --kubeconfig, --context and kubectl's connection flags
        return Result("Identity", {"username": me.username, "groups": list(me.groups)})
