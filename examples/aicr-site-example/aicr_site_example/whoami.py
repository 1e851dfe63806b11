"""`kubectl aicr whoami`: who the API server says you are."""
from __future__ import annotations

import argparse

from aicr_core.plugin import AicrCommand, Result


class WhoAmI(AicrCommand):
    """Show the username and groups the API server reports for your credentials."""

    def take_action(self, args: argparse.Namespace) -> Result:
        from aicr_core.plugin import (
            connect_args,  # the Kubernetes client: loaded when run, not when `help` lists commands
        )

        me = connect_args(args).whoami()  # --kubeconfig, --context and kubectl's connection flags
        return Result("Identity", {"username": me.username, "groups": list(me.groups)})
