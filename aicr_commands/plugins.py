"""`kubectl aicr plugins`: every command, renderer and policy, where it comes from, and whether it loads."""
from __future__ import annotations

import argparse
from typing import Any

from aicr_core import plugins
from aicr_core.command import AicrCommand
from aicr_core.errors import AicrError
from aicr_core.result import Result


class Plugins(AicrCommand):
    """List installed commands, renderers and policies with their distribution, version and load status.

    Examples:
      # What is installed, and does it load?
      kubectl aicr plugins

      # The same for a script: the distribution and version of each
      kubectl aicr plugins -o json

    Codes:
    """

    def take_action(self, args: argparse.Namespace) -> Result:
        from aicr_core.policy import load_policies

        # The policy loader imports, registers and validates (check_pending) every policy: its
        # failures are the policies' status; importing them again here would only repeat that.
        policy_failures = load_policies().failures
        rows: list[dict[str, Any]] = []
        for group_name in plugins.GROUPS:
            group = plugins.PluginGroup(group_name)
            conflicts = group.conflicts()
            for name in group.names():
                for info in group.infos(name):
                    distribution, version = plugins.distribution_and_version(info)
                    status, error = "ok", None
                    if group_name == plugins.POLICIES:
                        if name in policy_failures:
                            status, error = "failed", policy_failures[name]
                    else:
                        try:
                            plugins.load_target(info)
                        except AicrError as err:
                            status, error = "failed", err.message
                    if name in conflicts:
                        status, error = "conflict", "also claimed by " + ", ".join(
                            i.target for i in conflicts[name] if i is not info)
                    rows.append({"group": group_name, "name": name, "target": info.target,
                                 "distribution": distribution, "version": version,
                                 "status": status, "error": error})
        return Result("PluginList", {"plugins": rows})
