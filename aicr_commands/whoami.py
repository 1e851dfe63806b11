"""`kubectl aicr whoami`: who the API server says you are, and whether you may approve."""
from __future__ import annotations

import argparse

from aicr_commands import _rollout_args as _rollouts
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Result


class WhoAmI(AicrCommand):
    """Show your username and groups as the API server sees them, and whether you may approve.

    Two requests, nothing changed: a SelfSubjectReview (the username approve
    records, impersonation included), and a SelfSubjectAccessReview for update
    on runtimerollouts/approve, the permission the cluster's admission policy
    requires of whoever approves, revokes or acknowledges. RBAC answers it;
    the approval policies may still refuse a given approval (policy check
    says why).

    Examples:
      # Who am I on the current context, and may I approve?
      kubectl aicr whoami

      # As kubectl auth whoami, for a script
      kubectl aicr whoami --context prod -o json

    Codes:
      UNAUTHORIZED  the credentials are not accepted
      API
    """

    def take_action(self, args: argparse.Namespace) -> Result:
        from aicr_core.domain import operator_api as api

        cluster = _rollouts.session(args)
        me = cluster.whoami()
        access = api.approver_access("")  # any rollout: what the admission policy checks
        may_approve = cluster.can_i(**access)
        return Result("WhoAmI", {
            "username": me.username, "groups": list(me.groups), "mayApprove": may_approve,
            "approverPermission": f"{access['verb']} {access['resource']}/{access['subresource']}",
        }, names=(f"user/{me.username}",))
