"""`kubectl aicr identity`: who the API server says you are (a site command; the built-in `whoami` says more)."""
from __future__ import annotations

import argparse

from aicr_core.plugin import AicrCommand, Result


class ShowIdentity(AicrCommand):
    """Show the username and groups the API server reports for your credentials.

    Asks the API server (a SelfSubjectReview); changes nothing. Useful before
    an approval: the username shown is the one approve would record.

    Examples:
      # Who am I on the current context?
      kubectl aicr identity

      # On another context, for a script
      kubectl aicr identity --context prod -o json

    Codes:
      KUBECONFIG
      UNAUTHORIZED  the credentials are not accepted
      UNAVAILABLE
    """

    def take_action(self, args: argparse.Namespace) -> Result:
        from aicr_core.plugin import (
            connect_args,  # the Kubernetes client: loaded when run, not when `help` lists commands
        )

        me = connect_args(args).whoami()  # --kubeconfig, --context and kubectl's connection flags
        return Result("Identity", {"username": me.username, "groups": list(me.groups)})
