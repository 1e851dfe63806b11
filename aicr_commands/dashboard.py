"""`kubectl aicr dashboard`: the approver's page, on loopback, reading and writing as you."""
from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING

from aicr_commands import _fleet_forms as _fleet
from aicr_core.errors import shown
from aicr_core.fleet import flags as fleet
from aicr_core.framework.command import AicrCommand

if TYPE_CHECKING:  # the web stack is imported when the command runs: `help`, `list`, `describe` never load it
    from aicr_core.framework.result import Result
    from aicr_dashboard.serving import Selection


def port_number(text: str) -> int:
    if not re.fullmatch(r"[0-9]{1,5}", text) or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"invalid --port {shown(text)}: a port number, 0 to 65535 (0: any free one)")
    return int(text)


class Dashboard(AicrCommand):
    """Serve the approver's dashboard: what waits across the fleet, on a local page that approves as you.

    Listens on loopback only (127.0.0.1 by default) and prints one line on stderr with
    the URL to open, holding a fresh token (the same URL is in a file only you may
    read, named in that line). The page shows every selected cluster's rollouts
    waiting for a person, soonest deadline first, with a line a cluster: who you are
    there, whether you may approve, connected or its last error; a rollout's page
    shows what describe shows, the actions it admits, a policy Check and the
    equivalent kubectl aicr command. It reads with one watch per cluster (no API
    request per view) and writes as kubectl aicr approve does: the same checks, the
    same policies, the same lines. The clusters are chosen as list chooses them.
    Runs until Ctrl-C or SIGTERM. Needs the extra: pip install 'kubectl-aicr[dashboard]'.

    Examples:
      # The current context's rollouts
      kubectl aicr dashboard

      # Every context of the kubeconfig, read-only, opening the browser
      kubectl aicr dashboard --all-contexts --read-only --open

    Codes:
      USAGE        an --address that is no loopback address, list's selection errors
      UNAVAILABLE  the port is in use
      INTERRUPTED  stopped by Ctrl-C (exit 130) or SIGTERM (exit 143)
    """

    uses_flags = ("operator_namespace",)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--address", metavar="ADDR", default="127.0.0.1",
                            help="the loopback address to listen on: 127.0.0.1 (default), any of 127.0.0.0/8, "
                                 "::1, or localhost; no other (the page acts with your credentials)")
        parser.add_argument("--port", metavar="N", type=port_number, default=0,
                            help="the port to listen on (default 0: any free one)")
        parser.add_argument("--read-only", action="store_true",
                            help="offer no action, and refuse every write on the server")
        parser.add_argument("--open", action="store_true",
                            help="open your browser on the page (through the URL file: the token is on no "
                                 "command line)")
        fleet.add_selection_flags(parser)

    def take_action(self, args: argparse.Namespace) -> Result:
        fleet_form = _fleet.read_form(args)  # list's [USAGE] rules of choosing clusters, before anything
        try:
            from aicr_dashboard import serving
        except ImportError as err:
            from aicr_core.errors import AicrError, Code

            raise AicrError(Code.USAGE, f"the dashboard needs its extra ({err.name} is not installed): "
                            "pip install 'kubectl-aicr[dashboard]'") from None
        serving.run(args, lambda: selection(args, fleet_form), self.app.stderr)
        raise AssertionError("serving.run returns only by raising")  # pragma: no cover


def selection(args: argparse.Namespace, fleet_form: bool) -> Selection:
    """The clusters `list` would read with these flags: its fleet form's members, or the current context alone."""
    import functools

    from aicr_dashboard.serving import Member, Selection

    if fleet_form:
        chosen = fleet.selection(args)  # a hub is read here: its errors end the command, as list's do
        return Selection([Member(c, chosen.members.server(c), chosen.reach(c), functools.partial(chosen.session, c))
                          for c in chosen.contexts], True)
    from aicr_commands import _rollout_args as _rollouts
    from aicr_core.session import kubeconfig_files

    found, _ = kubeconfig_files.files(args.kubeconfig)
    context = args.context or (kubeconfig_files.merged(found).current_context if found else None) or "default"
    _rollouts.session(args)  # the kubeconfig's errors end the command before it listens, as list's do
    return Selection([Member(context, None, f"--context {context}",
                             functools.partial(_rollouts.session, args))], False)
