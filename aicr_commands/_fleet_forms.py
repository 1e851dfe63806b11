"""The fleet form of a command, as argument glue: which form the flags ask for, and `--plan <TAB>`.

Running a command across clusters is the core's (aicr_core.fleet): its command-line side
(`flags`: the flags, `read_across` for a fleet read, `fleet_write` and `approve_in_waves` for the
writes) over the fleet's values (`gathering`, `plan_write`, `wave_runner`).

Imported by command modules at module level: nothing heavy here.
"""
from __future__ import annotations

import argparse
from typing import Any

from aicr_core.errors import UsageError
from aicr_core.fleet import flags as fleet  # light: the running (fan_out) is imported where a fleet runs

# -- which form -----------------------------------------------------------------------------------

def read_form(args: argparse.Namespace) -> bool:
    """list, version: across clusters with --contexts/--all-contexts/--cluster-profiles; --parallel alone is [USAGE]."""
    if not fleet.selected(args):
        if getattr(args, "parallel", None) is not None:
            raise UsageError("--parallel needs --contexts, --all-contexts or --cluster-profiles")
        return False
    fleet.check_selection(args)
    return True


def plan_form(args: argparse.Namespace, command: str, target: str | None) -> bool:
    """approve|revoke|acknowledge, policy check: ROLLOUT, or --plan DIGEST across clusters (never both)."""
    if target is not None:
        fleet.refuse_fleet_flags(args, f"{command} ROLLOUT (--plan DIGEST stands in for ROLLOUT across clusters)")
        return False
    plan = getattr(args, "plan", None)
    if plan is None:
        given = fleet.given_flags(args)
        if given:
            raise UsageError(f"{given[0]} needs --plan DIGEST in place of ROLLOUT")
        raise UsageError("the following arguments are required: ROLLOUT")
    if not fleet.selected(args):
        choices = ("--contexts, --all-contexts, --cluster-profiles or --waves" if hasattr(args, "waves")
                   else "--contexts, --all-contexts or --cluster-profiles")
        raise UsageError(f"--plan needs {choices}: it picks the rollout per cluster")
    fleet.check_selection(args)
    return True


# -- completion ------------------------------------------------------------------------------------

def complete_plans(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> Any:
    """`--plan <TAB>`: the plan digests with a rollout waiting for a person in the current context."""
    from aicr_commands import _rollout_args as _rollouts
    from aicr_core.domain.rollout_documents import waits_for_person
    from aicr_core.domain.rollout_listing import list_rollouts
    from aicr_core.framework.completion import API_SECONDS, NO_FILES, Candidates
    from aicr_core.session.deadline import Deadline

    waiting: dict[str, str] = {}
    for rollout in list_rollouts(_rollouts.session(parsed_args, Deadline(API_SECONDS))).rollouts:
        if waits_for_person(rollout) and rollout.to_digest.startswith(prefix):
            waiting.setdefault(rollout.to_digest, f"{rollout.name} ({rollout.phase})")
    return Candidates([f"{digest}\t{why}" for digest, why in sorted(waiting.items())], NO_FILES)
