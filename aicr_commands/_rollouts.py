"""What the rollout commands share: the ROLLOUT argument, reading, and the conditional write.

Imported by command modules at module level, so it imports nothing heavy;
`aicr_core.kube` (the Kubernetes client) is imported only when a command runs.
"""
from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aicr_core.errors import AicrError, Code
from aicr_core.flags import check_reason

if TYPE_CHECKING:
    from aicr_core import operator_api as api  # imported when a command runs, so `help` stays fast
    from aicr_core.kube import Cluster

# A Kubernetes object name (DNS subdomain): anything else cannot name a rollout
# and must not reach a URL path.
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def object_name(text: str) -> str:
    if not _NAME.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a valid rollout name")
    return text


def add_rollout_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rollout", metavar="ROLLOUT", type=object_name,
                        help="the RuntimeRollout, e.g. rollout-3f9a1c0d2b7e4a51-1")


def require_reason(args: argparse.Namespace, command: str) -> str:
    return check_reason(args, command)  # 1..REASON_MAX characters; required


def connect(args: argparse.Namespace) -> Cluster:
    from aicr_core import kube

    return kube.connect_args(args)


def get_object(cluster: Cluster, path: str, what: str) -> dict[str, Any]:
    """GET one object; a 404 says which object in words (`what`), not the server's path."""
    try:
        return cluster.get(path)
    except AicrError as err:
        if err.code == Code.NOT_FOUND:
            raise AicrError(Code.NOT_FOUND, f"{what} not found") from None
        raise


def read_rollout(cluster: Cluster, name: str) -> api.Rollout:
    from aicr_core import operator_api as api

    return api.parse_rollout(get_object(cluster, api.rollout_path(name), f"rollout {name}"))


class RolloutWrite:
    """The path approve, revoke and acknowledge share: who you are, the rollout, the policies, one write.

    Requests: a SelfSubjectReview, a GET of the rollout, a conditional PATCH
    (and a second GET only when the PATCH lost a race).
    """

    def __init__(self, args: argparse.Namespace, command: str) -> None:
        from aicr_core.policy import load_policies

        self.args, self.command = args, command
        self.policies = load_policies()
        self.cluster = connect(args)
        self.me = self.cluster.whoami()
        self.rollout = read_rollout(self.cluster, args.rollout)

    def check_policies(self, hook: str, **proposed: Any) -> None:
        """Every policy's verdict on the proposed write; raises POLICY_DENIED or POLICY_ERROR."""
        from aicr_core.policy import PolicyContext

        self.policies.check(hook, rollout=self.rollout, user=self.me,
                            context=PolicyContext.from_args(self.command, self.args), **proposed)

    def write(self, patch: dict[str, Any], explain_conflict: Callable[[api.Rollout], AicrError]) -> None:
        """One conditional write; on a lost race, re-read and say who won (`explain_conflict`)."""
        from aicr_core import operator_api as api

        try:
            self.cluster.patch(api.rollout_path(self.rollout.name), patch)
            return
        except AicrError as err:
            if err.code != Code.CONFLICT:
                raise
        raise explain_conflict(read_rollout(self.cluster, self.rollout.name))
