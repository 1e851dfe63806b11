"""`kubectl aicr plugins`: every plugin, where it comes from, whether it loads, and what the policy file makes of it."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from aicr_commands import _rollout_args as _rollouts
from aicr_core import entry_points
from aicr_core.errors import AicrError
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Result

if TYPE_CHECKING:
    from aicr_core.domain.policy_engine import PolicyEngine


class Plugins(AicrCommand):
    """List installed plugins with their distribution, version and load status, and each policy's mode.

    A policy's ACTIVE and MODE come from the cluster's policy file (one GET;
    --policy-file PATH reads a local one instead); when it cannot be read they
    show "-" and the last line says why.

    Examples:
      # What is installed, and does it load?
      kubectl aicr plugins

      # The same for a script, with the modes a local policy file would set
      kubectl aicr plugins --policy-file policy.yaml -o json

    Codes:
      API
    """

    uses_flags = ("operator_namespace", "policy_file")

    def take_action(self, args: argparse.Namespace) -> Result:
        from aicr_core.domain.policy_engine import PolicyEngine, load_policies

        # The policy loader imports, registers and validates (check_pending) every policy: its
        # failures are the policies' status; importing them again here would only repeat that.
        loaded = load_policies()
        engine: PolicyEngine | None = None
        policy_file: dict[str, Any]
        try:
            from aicr_core.domain import rollouts

            text, source = (rollouts.read_local_policy_file(args.policy_file) if args.policy_file
                            else rollouts.read_policy_file(_rollouts.session(args)))
            engine = PolicyEngine.build(loaded, text, source)
            policy_file = {"source": source, "found": text is not None, "digest": engine.digest,
                           "error": f"does not validate ({len(engine.problems)} problem(s)): every approval, "
                                    "revocation and acknowledgement is refused; run kubectl aicr policy validate"
                           if engine.problems else None}
        except AicrError as err:
            policy_file = {"source": args.policy_file or "the cluster's policy file",
                           "found": None, "digest": None, "error": f"[{err.code}] {err.message}"}
        rows: list[dict[str, Any]] = []
        for group_name in entry_points.GROUPS:
            group = entry_points.PluginGroup(group_name)
            conflicts = group.conflicts()
            for name in group.names():
                for info in group.infos(name):
                    distribution, version = entry_points.distribution_and_version(info)
                    status, error = "ok", None
                    if group_name == entry_points.POLICIES:
                        if name in loaded.failures:
                            status, error = "failed", loaded.failures[name]
                    else:
                        try:
                            entry_points.load_target(info)
                        except AicrError as err:
                            status, error = "failed", err.message
                    if name in conflicts:
                        status, error = "conflict", "also claimed by " + ", ".join(
                            i.target for i in conflicts[name] if i is not info)
                    rows.append({"group": group_name, "name": name, "target": info.target,
                                 "distribution": distribution, "version": version,
                                 "status": status, "error": error,
                                 **policy_columns(engine, name if group_name == entry_points.POLICIES else None)})
        return Result("PluginList", {"plugins": rows, "policyFile": policy_file},
                      names=tuple(f"{row['group']}/{row['name']}" for row in rows))


def policy_columns(engine: PolicyEngine | None, policy: str | None) -> dict[str, Any]:
    """`active`, `mode`, `overridable`, `activation` of a policy; null for other plugins or when unknown."""
    setup = engine.setup(policy) if engine is not None and policy is not None and not engine.problems else None
    if setup is None:
        return {"active": None, "mode": None, "overridable": None, "activation": None}
    return {"active": setup.active, "mode": setup.mode if setup.active else None,
            "overridable": setup.overridable if setup.active else None, "activation": setup.why}
