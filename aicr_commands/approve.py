"""`kubectl aicr approve ROLLOUT --reason TEXT [--expires DURATION]`."""
from __future__ import annotations

from aicr_commands._action_command import ActionCommand
from aicr_core.domain.actions import APPROVE


class Approve(ActionCommand):
    """Approve a rollout as yourself, until --expires or its deadline.

    Asks the API server who you are, refuses a rollout that has ended, is already
    approved or needs no approval (and, without --expires, one whose deadline has
    passed), runs every pre-approve policy, then writes spec.approval once.
    An approval can be neither changed nor extended.

    Examples:
      # Approve until the rollout's deadline
      kubectl aicr approve rollout-3f9a1c0d2b7e4a51-1 --reason "Maintenance window CHG-1234"

      # Check everything, the API server's admission included, without writing
      kubectl aicr approve rollout-3f9a1c0d2b7e4a51-1 --reason "Maintenance window" --dry-run=server

      # One plan in every cluster of the kubeconfig for 4 hours (or canary first: --waves FILE)
      kubectl aicr approve --all-contexts --plan sha256:<64 hex> --reason "CHG-4711" --expires 4h --yes

    Codes:
      ENDED
      ALREADY_APPROVED
      APPROVAL_NOT_REQUIRED
      DEADLINE_PASSED
      POLICY_DENIED
      POLICY_ERROR
      ADMISSION_DENIED
      CONFLICT
      NOT_FOUND
      API
    """

    action = APPROVE
